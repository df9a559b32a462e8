"""The `platform` project: namespaces, Argo CD itself, secrets from the vault, cluster basics."""

from sitegen.components.base import Project

PROJECT = Project("platform", "namespaces and Argo CD itself")
