"""Harbor's proxy caches are private and pulled by a robot: the setup Job's script, run with the host's
sh and curl against a stand-in of Harbor's REST API (v2.0, as its swagger describes the calls), and
the RUNBOOK's loop that puts the robot's credential into each host's hosts.toml."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import stat
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from constructs.registry import PROXY_CACHE_SCRIPT, PULL_ROBOT
from sitegen.compose.hosts import PULL_AUTH_PLACEHOLDER

from .conftest import DIST

pytestmark = pytest.mark.skipif(not shutil.which("curl"), reason="needs curl")

ADMIN = ("admin", "Adm1nPassw0rd")
SECRET = "Pu11Secret9xyz"


class Harbor:
    """Registries, projects and robots, by name; what each call did."""

    def __init__(self, projects: dict[str, bool] | None = None, password: str = ADMIN[1]) -> None:
        self.password = password  # the admin's, as Harbor has it
        self.registries: dict[str, int] = {}
        self.projects = dict(projects or {})  # name -> public
        self.robots: dict[str, dict] = {}
        self.calls: list[tuple[str, str, dict | None]] = []


def _server(harbor: Harbor) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def _answer(self, status: int, body: object = None) -> None:
            # compact, as Go's encoder writes it
            data = json.dumps(body if body is not None else {}, separators=(",", ":")).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _handle(self, method: str) -> None:
            expected = "Basic " + base64.b64encode(f"admin:{harbor.password}".encode()).decode()
            if self.headers["Authorization"] != expected:
                return self._answer(401)
            url = urlparse(self.path)
            path = url.path.removeprefix("/api/v2.0/")
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            harbor.calls.append((method, path, body))
            query = parse_qs(url.query).get("q", [""])[0].removeprefix("name=")
            if (method, path) == ("POST", "registries"):
                if body["name"] in harbor.registries:
                    return self._answer(409)
                harbor.registries[body["name"]] = len(harbor.registries) + 1
                return self._answer(201)
            if (method, path) == ("GET", "registries"):
                return self._answer(200, [{"id": harbor.registries[query], "name": query}])
            if (method, path) == ("POST", "projects"):
                if body["project_name"] in harbor.projects:
                    return self._answer(409)
                harbor.projects[body["project_name"]] = body["metadata"]["public"] == "true"
                return self._answer(201)
            if method == "PUT" and path.startswith("projects/"):
                assert self.headers["X-Is-Resource-Name"] == "true"
                harbor.projects[path.split("/", 1)[1]] = body["metadata"]["public"] == "true"
                return self._answer(200)
            if (method, path) == ("POST", "robots"):
                if body["name"] in harbor.robots:
                    return self._answer(409)
                harbor.robots[body["name"]] = {"id": 7, **body}
                return self._answer(201, {"id": 7, "name": "robot$" + body["name"], "secret": "generated"})
            if (method, path) == ("GET", "robots"):
                robot = harbor.robots[query]
                return self._answer(200, [{"id": robot["id"], "name": "robot$" + query}])
            if method == "PATCH" and path == "robots/7":
                next(iter(harbor.robots.values()))["secret"] = body["secret"]
                return self._answer(200)
            return self._answer(404)

        def do_GET(self) -> None:
            self._handle("GET")

        def do_POST(self) -> None:
            self._handle("POST")

        def do_PUT(self) -> None:
            self._handle("PUT")

        def do_PATCH(self) -> None:
            self._handle("PATCH")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def setup_job(harbor: Harbor, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    server = _server(harbor)
    try:
        env = {
            "PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
            "HARBOR_API": f"http://127.0.0.1:{server.server_address[1]}/api/v2.0", "HARBOR_CA": "",
            "HARBOR_ADMIN_PASSWORD": ADMIN[1], "PULL_ROBOT": PULL_ROBOT, "PULL_SECRET": SECRET,
            "PROXY_CACHES": "docker-hub docker-hub https://hub.docker.com\nnvcr harbor https://nvcr.io",
        }  # fmt: skip
        # the Job's /tmp is a scratch volume: here a folder of the test's own
        script = PROXY_CACHE_SCRIPT.replace("/tmp/body", str(tmp_path / "body"))
        return subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, timeout=60)
    finally:
        server.shutdown()


def test_the_proxy_caches_are_private_and_a_robot_pulls_them(tmp_path):
    harbor = Harbor(projects={"docker-hub": True})  # made public by an earlier version
    run = setup_job(harbor, tmp_path)
    assert run.returncode == 0, run.stderr
    assert harbor.projects == {"docker-hub": False, "nvcr": False}
    robot = harbor.robots[PULL_ROBOT]
    assert robot["level"] == "system" and robot["duration"] == -1
    assert robot["permissions"] == [
        {"kind": "project", "namespace": "*", "access": [{"resource": "repository", "action": "pull"}]}
    ]
    assert robot["secret"] == SECRET  # the vault's, which the hosts send
    # a second sync finds everything there and changes nothing but re-asserting it
    again = setup_job(harbor, tmp_path)
    assert again.returncode == 0, again.stderr
    assert harbor.projects == {"docker-hub": False, "nvcr": False} and len(harbor.robots) == 1


def test_a_refused_call_fails_the_job(tmp_path):
    run = setup_job(Harbor(password="changed-since"), tmp_path)
    assert run.returncode != 0 and "POST registries: HTTP 401" in run.stderr


def test_git_holds_the_placeholder_and_the_runbook_fills_it_from_the_vault(tmp_path):
    mirrors = sorted((DIST / "one-cluster/containerd/certs.d").glob("*/hosts.toml"))
    assert mirrors
    for path in mirrors:
        text = path.read_text()
        assert f'authorization = "Basic {PULL_AUTH_PLACEHOLDER}"' in text
    runbook = (DIST / "one-cluster/bootstrap/RUNBOOK.md").read_text()
    (step,) = re.findall(
        r"^### \d+\. Harbor's pull credential on every host\n(.*?)^##", runbook, flags=re.S | re.M
    )
    (block,) = re.findall(r"```sh\n(.*?)```", step, flags=re.S)
    # it runs here as root: only ever the loop that writes hosts.toml under the test's folder
    assert "/etc/containerd/certs.d/" in block and "/etc/" not in block.replace("/etc/containerd/", "")
    etc = tmp_path / "etc"
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "vault").write_text(f"#!/bin/sh\n[ \"$1 $2 $3\" = 'kv get -field=secret' ] && echo {SECRET}\n")
    (stub / "vault").chmod(0o755)
    script = block.replace("/etc/containerd", str(etc)).replace("dist/", f"{DIST}/")
    run = subprocess.run(
        ["bash", "-c", script],
        env={**os.environ, "PATH": f"{stub}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert not run.stderr, run.stderr
    expected = base64.b64encode(f"robot${PULL_ROBOT}:{SECRET}".encode()).decode()
    for path in mirrors:
        placed = etc / "certs.d" / path.parent.name / "hosts.toml"
        text = placed.read_text()
        assert f'authorization = "Basic {expected}"' in text and PULL_AUTH_PLACEHOLDER not in text
        assert stat.S_IMODE(placed.stat().st_mode) == 0o600
