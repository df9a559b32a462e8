"""The `hardware` project: hardware discovery."""

from sitegen.components.base import Project

PROJECT = Project("hardware", "hardware discovery: the cluster's single Node Feature Discovery")
