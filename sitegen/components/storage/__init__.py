"""The `storage` project: AIStor, PowerScale CSI and the local NVMe cache."""

from sitegen.components.base import Project

PROJECT = Project("storage", "AIStor, PowerScale CSI and the local NVMe cache")
