"""The `registry` project: Harbor and its pull-through caches."""

from sitegen.components.base import Project

PROJECT = Project("registry", "Harbor: the site's image registry and pull-through caches")
