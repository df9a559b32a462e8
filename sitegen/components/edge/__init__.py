"""The `edge` project: certificates, the Gateway and the routes to the web front ends."""

from sitegen.components.base import Project

PROJECT = Project("edge", "certificates, the Gateway and the routes to the platform's web front ends")
