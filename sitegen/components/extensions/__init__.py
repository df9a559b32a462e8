"""What config/extensions.yaml adds beyond the model."""

from sitegen.components.base import Project

PROJECT = Project("extensions", "objects config/extensions.yaml adds, each app in a namespace of its own")
