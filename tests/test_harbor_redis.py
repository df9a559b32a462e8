"""Harbor's internal Redis takes its password from the vault (issue 26: the chart's has none, and any
pod that reached it could rewrite Harbor's job queue and caches): the server requires the password,
every client's URL carries it, and no client is left reading a URL without it."""

from __future__ import annotations

import base64
from typing import Any

import pytest
import yaml

from sitegen.check.bringup.kube import pod_template
from sitegen.components.registry.harbor import REDIS_READERS, REDIS_VAULT_KEY, Harbor
from sitegen.tree.documents import load_tree

from .conftest import DIST

PASSWORD = "{{ .password }}"


@pytest.fixture(scope="module")
def harbor():
    """The hub's Harbor namespace in the one-cluster variant: (kind, name) -> body."""
    docs = load_tree(DIST)
    return {
        (d.kind, d.name): d.body
        for d in docs
        if d.variant == "one-cluster" and d.namespace == Harbor.namespace and not d.is_values
    }


def _external_data(harbor: dict, secret: str) -> dict[str, str]:
    """A Secret's keys as the cluster will hold them: its ExternalSecret's template, vault properties
    left as template variables (a Secret with values in git is refused by SEC-001)."""
    spec = harbor[("ExternalSecret", secret)]["spec"]
    template = (spec["target"].get("template") or {}).get("data")
    return (
        template
        if template is not None
        else {i["secretKey"]: f"{{{{ .{i['secretKey']} }}}}" for i in spec["data"]}
    )


def _secret_text(harbor: dict, secret: str, key: str) -> str:
    return _external_data(harbor, secret)[key]


def _environment(harbor: dict, container: dict[str, Any]) -> dict[str, str]:
    """What the container's process sees: envFrom first, then env, which wins (Kubernetes' order)."""
    seen: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        if "configMapRef" in source:
            seen.update(harbor[("ConfigMap", source["configMapRef"]["name"])].get("data") or {})
        elif ("Secret", source["secretRef"]["name"]) in harbor:  # the chart's, empty of values (SEC-001)
            data = harbor[("Secret", source["secretRef"]["name"])].get("data") or {}
            seen.update({key: base64.b64decode(text).decode() for key, text in data.items()})
        else:
            seen.update(_external_data(harbor, source["secretRef"]["name"]))
    for env in container.get("env") or []:
        ref = (env.get("valueFrom") or {}).get("secretKeyRef")
        if ref is not None:
            seen[env["name"]] = _secret_text(harbor, ref["name"], ref["key"])
        elif "value" in env:
            seen[env["name"]] = env["value"]
    return seen


def _containers(harbor: dict):
    for (kind, name), body in sorted(harbor.items()):
        template = pod_template(body)
        if template is None:
            continue
        for container in [*(template.spec.get("initContainers") or []), *template.spec["containers"]]:
            yield f"{kind} {name} [{container['name']}]", container


def test_the_server_requires_the_vault_password(harbor):
    """The image's own command, then a file from the vault's Secret that sets `requirepass`."""
    pod = pod_template(harbor[("StatefulSet", "harbor-redis")]).spec
    (server,) = pod["containers"]
    *command, include, path = server["command"]
    assert command == ["redis-server", "/etc/redis.conf"] and include == "--include"
    mounts = [m for m in server["volumeMounts"] if path.startswith(m["mountPath"] + "/")]
    (mount,) = mounts
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    (item,) = volume["secret"]["items"]
    assert path == f"{mount['mountPath']}/{item['path']}"
    assert _secret_text(harbor, volume["secret"]["secretName"], item["key"]) == f"requirepass {PASSWORD}\n"
    assert "env" not in server  # not in the environment, which every process of the container inherits
    external = harbor[("ExternalSecret", "harbor-redis")]
    assert external["spec"]["data"] == [
        {"secretKey": "password", "remoteRef": {"key": REDIS_VAULT_KEY, "property": "password"}}
    ]


def test_every_client_reads_its_redis_url_with_the_password(harbor):
    """Core, jobservice, the exporter and the scanner read URLs; the registry a password of its own."""
    urls = {}
    for where, container in _containers(harbor):
        for name, text in _environment(harbor, container).items():
            if text.startswith("redis://"):
                urls[(where, name)] = text
    assert {where.split(" [")[0] for where, _ in urls} == {
        "Deployment harbor-core",
        "Deployment harbor-exporter",
        "Deployment harbor-jobservice",
        "StatefulSet harbor-trivy",
    }
    for (where, name), text in urls.items():
        assert text.startswith(f"redis://:{PASSWORD}@harbor-redis:6379/"), (where, name, text)
    registry = dict(_containers(harbor))["Deployment harbor-registry [registry]"]
    assert _environment(harbor, registry)["REGISTRY_REDIS_PASSWORD"] == PASSWORD
    # the RUNBOOK's restart after a new password names exactly the server and these readers
    readers = {where.split(" [")[0] for where, _ in urls} | {
        "Deployment harbor-registry",
        "StatefulSet harbor-redis",
    }
    kinds = {"statefulset": "StatefulSet", "deployment": "Deployment"}
    assert {f"{kinds[kind]} {name}" for kind, name in (r.split("/") for r in REDIS_READERS)} == readers


def test_the_jobservice_takes_the_url_over_its_config_file(harbor):
    """Harbor's jobservice reads JOB_SERVICE_POOL_REDIS_URL over the file's redis_url when its backend
    is redis (src/jobservice/config/config.go, loadEnvs); the file keeps the chart's database index."""
    config = yaml.safe_load(harbor[("ConfigMap", "harbor-jobservice")]["data"]["config.yml"])
    pool = config["worker_pool"]
    assert pool["backend"] == "redis"
    jobservice = dict(_containers(harbor))["Deployment harbor-jobservice [jobservice]"]
    url = _environment(harbor, jobservice)["JOB_SERVICE_POOL_REDIS_URL"]
    assert url == pool["redis_pool"]["redis_url"].replace("redis://", f"redis://:{PASSWORD}@")


def test_the_charts_passwordless_urls_are_gone(harbor):
    """What the chart renders for its internal Redis: URLs without credentials in ConfigMaps and
    Secrets. The ConfigMaps lose them (a chart that renames them stops the render: the patch no longer
    fits), the Secrets are the vault's."""
    assert ("Secret", "harbor-trivy") not in harbor and ("Secret", "harbor-registry") not in harbor
    for (kind, name), body in harbor.items():
        if kind == "ConfigMap" and name != "harbor-jobservice":
            for key, text in (body.get("data") or {}).items():
                assert "redis://" not in text, (name, key)
