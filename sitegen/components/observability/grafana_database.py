"""`grafana-database`: Grafana's PostgreSQL, which holds its users, preferences, service accounts and
the dashboards made in its UI (those from git are provisioned again). A CloudNativePG Cluster as every
database of the site is (storage/database.py), from `services.monitoring.grafana_database`."""

from __future__ import annotations

from sitegen.components.observability import PROJECT
from sitegen.components.observability.grafana import (
    DATABASE_CLUSTER,
    DATABASE_NAME,
    DATABASE_OWNER,
    DATABASE_VAULT_KEY,
    Grafana,
)
from sitegen.components.storage.database import PostgresDatabase
from sitegen.model import Site
from sitegen.model.services import Database


class GrafanaDatabase(PostgresDatabase):
    name = "grafana-database"
    project = PROJECT
    namespace = Grafana.namespace
    before = (Grafana,)  # it connects at start
    consumer = Grafana
    cluster = DATABASE_CLUSTER
    database = DATABASE_NAME
    owner = DATABASE_OWNER
    vault_key = DATABASE_VAULT_KEY
    holds = "Grafana's users, preferences, service accounts and the dashboards made in its UI"
    max_connections = 60  # 20 per replica (grafana.py's max_open_conn), and room for the rest

    @classmethod
    def spec(cls, site: Site) -> Database:
        return site.services.monitoring.grafana_database
