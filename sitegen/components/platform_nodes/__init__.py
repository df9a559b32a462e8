"""The `platform-nodes` project: the labels of every Node."""

from sitegen.components.base import Project

PROJECT = Project("platform-nodes", "labels of every Node, applied server-side and never pruned")
