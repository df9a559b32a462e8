"""The `tenants` project: the site's users, their namespaces, queues and workloads."""

from sitegen.components.base import Project

PROJECT = Project("tenants", "the site's users: their namespaces, queues and workloads")
