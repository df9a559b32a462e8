"""config/dashboards/*.json: Grafana dashboards, checked for what the generator relies on."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from sitegen.model.fields import ConfigError, DnsLabel

# The data sources Grafana is provisioned with, by uid: every dashboard panel must name one of them.
DATASOURCE_UIDS = ("loki", "prometheus")


class Dashboard(BaseModel):
    """A Grafana dashboard: the fields the generator relies on are checked, the rest is Grafana's."""

    model_config = ConfigDict(extra="allow", frozen=True)
    uid: DnsLabel
    title: Annotated[str, Field(min_length=1)]
    panels: list[dict[str, Any]] = Field(min_length=1)


def check_dashboards(dashboards: dict[str, Dashboard]) -> None:
    uids: dict[str, str] = {}
    for name, dashboard in dashboards.items():
        if dashboard.uid in uids:
            raise ConfigError(
                ("dashboards", name, "uid"), f"uid {dashboard.uid!r} is also {uids[dashboard.uid]}'s"
            )
        uids[dashboard.uid] = name
        for i, panel in enumerate(dashboard.panels):
            sources = [((i, "datasource"), panel.get("datasource"))] + [
                ((i, "targets", j, "datasource"), target.get("datasource"))
                for j, target in enumerate(panel.get("targets") or [])
                if isinstance(target, dict)
            ]
            for path, source in sources:
                uid = source.get("uid") if isinstance(source, dict) else source
                if uid is not None and uid not in DATASOURCE_UIDS:
                    raise ConfigError(
                        ("dashboards", name, "panels", *path),
                        f"data source {uid!r} is not provisioned (one of {', '.join(DATASOURCE_UIDS)})",
                    )
