"""The `networking` project: the primary CNI, load-balancer addresses and the NDR rails."""

from sitegen.components.base import Project

PROJECT = Project("networking", "the primary CNI, load-balancer addresses and the NDR rails")
