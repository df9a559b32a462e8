"""The `platform-nodes` project: the labels of every node that joined."""

from sitegen.components.base import Project

PROJECT = Project("platform-nodes", "labels of the nodes that joined, by a Job; never a Node object")
