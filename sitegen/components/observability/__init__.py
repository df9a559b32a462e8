"""The `observability` project: metrics, alerts, dashboards, logs and the node collectors."""

from sitegen.components.base import Project

PROJECT = Project("observability", "metrics, alerts, dashboards, logs and the collectors on every node")
