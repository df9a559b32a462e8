"""Front-door rules: a server that hands out the site's data asks who is calling."""

from __future__ import annotations

import re
from collections.abc import Iterator

from sitegen.check.rules.base import Context, Violation, rule
from sitegen.tree.fields import dig

# nginx locations that pass Loki's push or query API on (the Loki chart's gateway renders them)
_LOKI_LOCATION = re.compile(r"location\s+[=^~]*\s*/(?:loki/api/v1|api/prom|otlp/v1/logs)\b[^{]*\{([^}]*)\}")
_USER_FILE = re.compile(r"^\s*auth_basic_user_file\s+\S+;", re.MULTILINE)


@rule(
    "SEC-005",
    "authenticated-log-gateway",
    "every log line of the site is readable through Loki's gateway: it asks each client for credentials",
)
def _authenticated_log_gateway(ctx: Context) -> Iterator[Violation]:
    for doc in ctx.docs:
        if doc.kind != "ConfigMap" or doc.group != "":
            continue
        for key, conf in (doc.body.get("data") or {}).items():
            if not key.endswith(".conf") or not isinstance(conf, str):
                continue
            locations = _LOKI_LOCATION.findall(conf)
            if not locations:
                continue
            if not _USER_FILE.search(conf):
                yield Violation(doc, f"$.data.{key}", "passes Loki's API on without auth_basic_user_file")
            elif any(re.search(r"auth_basic\s+off;", body) for body in locations):
                yield Violation(doc, f"$.data.{key}", "turns auth_basic off on a location of Loki's API")


def _containers(body: dict) -> list[dict]:
    spec = body.get("spec") or {}
    pod = (dig(spec, "jobTemplate", "spec") or spec).get("template", {}).get("spec") or {}
    return [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]


@rule(
    "SEC-006",
    "verified-kubelets",
    "kubelets serve certificates of the cluster CA (serverTLSBootstrap): their clients verify them",
)
def _verified_kubelets(ctx: Context) -> Iterator[Violation]:
    for doc in ctx.docs:
        for i, c in enumerate(_containers(doc.body)):
            if "--kubelet-insecure-tls" in [*(c.get("args") or []), *(c.get("command") or [])]:
                yield Violation(
                    doc, f"$..containers[{i}].args", f"container {c.get('name')} skips kubelet TLS"
                )
        if doc.kind == "ServiceMonitor":
            spec = doc.body.get("spec") or {}
            if dig(spec, "selector", "matchLabels", "k8s-app") != "kubelet":
                continue
            for i, endpoint in enumerate(spec.get("endpoints") or []):
                if dig(endpoint, "tlsConfig", "insecureSkipVerify"):
                    yield Violation(
                        doc, f"$.spec.endpoints[{i}].tlsConfig", "scrapes kubelets without verifying them"
                    )
