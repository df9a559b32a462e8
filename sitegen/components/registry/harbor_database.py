"""`harbor-database`: Harbor's PostgreSQL, which holds its projects, RBAC, robots (the pull robot every
host uses) and the index of every artifact: without it the blobs in AIStor are orphans. A CloudNativePG
Cluster as every database of the site is (storage/database.py), from `services.registry.database`."""

from __future__ import annotations

from sitegen.components.registry import PROJECT
from sitegen.components.registry.harbor import (
    CORE_DATABASE,
    DATABASE_CLUSTER,
    DATABASE_OWNER,
    DATABASE_PASSWORD,
    Harbor,
)
from sitegen.components.storage.database import PostgresDatabase
from sitegen.model import Site
from sitegen.model.services import Database


class HarborDatabase(PostgresDatabase):
    name = "harbor-database"
    project = PROJECT
    namespace = Harbor.namespace
    before = (Harbor,)  # core and the exporter connect at start
    consumer = Harbor
    cluster = DATABASE_CLUSTER
    database = CORE_DATABASE
    owner = DATABASE_OWNER
    vault_key = DATABASE_PASSWORD.vault_key
    holds = "Harbor's projects, permissions, robots and the index of every artifact"
    after_aistor_loss = (
        "The artifacts whose blobs AIStor lost stay in the index: Harbor's garbage collection does not "
        "remove them; delete their repositories, and push or pull them again through the proxy caches."
    )
    max_connections = 400  # core and the exporter of each replica: the chart's maxOpenConns (harbor.py)

    @classmethod
    def spec(cls, site: Site) -> Database:
        return site.services.registry.database
