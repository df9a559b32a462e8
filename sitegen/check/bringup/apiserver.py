"""A Kubernetes API server stand-in on loopback, for the scripts the site runs against the real one
(scripts.py runs them in the bring-up; the tests run them against hand-made Nodes).

It answers as kube-apiserver v1.35 does where our scripts depend on it: HTTPS with a certificate of
its own CA (the script must pass --cacert), a bearer token or 401, Nodes and the other objects it is
given by their path (404 with a Status object for one it does not hold: a host that has not joined),
JSON merge patches (RFC 7386) that never create, and the
response body pretty-printed (two-space indentation) when the client is a command-line HTTP tool
(a User-Agent starting with `curl` or `Wget`) or a browser, unless `?pretty=false` is asked for
(k8s.io/apiserver endpoints/handlers/negotiation: isPrettyPrint). Nodes are listed with a
`labelSelector` of keys and `key=value` pairs, as a NodeList or, asked for with
`Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1`, as their metadata only.
What it does not model: watches, field selectors, set-based selectors, server-side apply,
resourceVersion conflicts.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from sitegen.compose.patches import merge_patch


def node(
    name: str,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    *,
    unschedulable: bool = False,
) -> dict:
    """A Node as the API server returns it (the fields a kubelet registers, trimmed; cordoned: its
    spec.unschedulable)."""
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", **(labels or {})},
        },
        "spec": {
            "podCIDR": "10.64.0.0/24",
            **({"taints": taints} if taints else {}),
            **({"unschedulable": True} if unschedulable else {}),
        },
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


@dataclass
class FakeApiServer:
    url: str
    ca: Path
    token: str
    nodes: dict[str, dict] = field(default_factory=dict)
    # other objects by their path (`/apis/<group>/<version>/namespaces/<ns>/<resource>/<name>`)
    objects: dict[str, dict] = field(default_factory=dict)
    requests: list[tuple[str, str, str, str]] = field(default_factory=list)  # method, path, agent, body


def _pretty(handler: BaseHTTPRequestHandler) -> bool:
    query = parse_qs(urlsplit(handler.path).query)
    if query.get("pretty"):
        return query["pretty"][0].lower() in ("1", "t", "true")
    agent = handler.headers.get("User-Agent", "")
    return agent.startswith(("curl", "Wget", "Mozilla/5.0"))


def _node_list(server: FakeApiServer, path: str, accept: str) -> dict:
    """The Nodes a `labelSelector` selects: a NodeList, or their metadata when asked for it."""
    selector = (parse_qs(urlsplit(path).query).get("labelSelector") or [""])[0]
    wanted = [s.split("=", 1) for s in selector.split(",") if s]
    items = [
        n for n in server.nodes.values()
        if all(k in n["metadata"]["labels"] and (len(kv) == 1 or n["metadata"]["labels"][k] == kv[1])
               for kv in wanted for k in [kv[0]])
    ]  # fmt: skip
    if "as=PartialObjectMetadataList" in accept:
        metadata = [{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                     "metadata": n["metadata"]} for n in items]  # fmt: skip
        return {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                "metadata": {"resourceVersion": "1"}, "items": metadata}  # fmt: skip
    return {"kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items}


def _handler(server: FakeApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _send(self, code: int, body: dict) -> None:
            text = (
                json.dumps(body, indent=2) + "\n"
                if _pretty(self)
                else json.dumps(body, separators=(",", ":"))
            )
            data = text.encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _status(self, code: int, reason: str, message: str) -> None:
            self._send(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
                              "reason": reason, "code": code})  # fmt: skip

        def _node(self) -> str | None:
            parts = urlsplit(self.path).path.strip("/").split("/")
            return parts[3] if parts[:3] == ["api", "v1", "nodes"] and len(parts) == 4 else None

        def _authorized(self, body: str) -> bool:
            server.requests.append((self.command, self.path, self.headers.get("User-Agent", ""), body))
            if self.headers.get("Authorization") != f"Bearer {server.token}":
                self._status(401, "Unauthorized", "Unauthorized")
                return False
            return True

        def do_GET(self) -> None:
            if not self._authorized(""):
                return
            path = urlsplit(self.path).path.rstrip("/")
            if path == "/api/v1/nodes":
                self._send(200, _node_list(server, self.path, self.headers.get("Accept", "")))
                return
            if path in server.objects:
                self._send(200, server.objects[path])
                return
            name = self._node()
            if name in server.nodes:
                self._send(200, server.nodes[name])
            else:
                self._not_found(path)

        def _not_found(self, path: str) -> None:
            parts = path.strip("/").split("/")
            self._status(404, "NotFound", f'{parts[-2] if len(parts) > 1 else ""} "{parts[-1]}" not found')

        def do_PATCH(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
            if not self._authorized(body):
                return
            if self.headers.get("Content-Type") != "application/merge-patch+json":
                self._status(415, "UnsupportedMediaType", "the body of the request was in an unknown format")
                return
            path = urlsplit(self.path).path.rstrip("/")
            if path in server.objects:
                server.objects[path] = merge_patch(server.objects[path], json.loads(body))
                self._send(200, server.objects[path])
                return
            name = self._node()
            if name not in server.nodes:
                self._not_found(path)  # PATCH never creates
                return
            server.nodes[name] = merge_patch(server.nodes[name], json.loads(body))
            self._send(200, server.nodes[name])

    return Handler


CA = "ca.crt"
SERVED = (CA, "tls.crt", "tls.key")  # what a server needs of its PKI: its chain's root and its own pair


@cache
def _certificates() -> dict[str, bytes]:
    """A CA and a serving certificate for 127.0.0.1 signed by it (openssl, as kubeadm's PKI is), made
    once per process and kept as bytes: each stand-in server writes them into its own folder, which its
    caller removes (a folder of the process's would outlive it where no exit handler runs, as in a
    process pool's workers, and leave a CA's key behind each time). ECDSA P-256 keys (kubeadm's
    `encryptionAlgorithm: ECDSA-P256`; its default is RSA-2048): what the scripts' clients check, the
    chain to the cluster's CA and the server's names, does not depend on the key's type, and two RSA
    keys took a tenth of a bring-up."""
    with tempfile.TemporaryDirectory(prefix="sitegen-apiserver-") as tmp:
        folder = Path(tmp)
        ca_key, ca, key, csr, cert = (folder / n for n in ("ca.key", CA, "tls.key", "tls.csr", "tls.crt"))
        ext = folder / "san.cnf"
        ext.write_text("subjectAltName=IP:127.0.0.1,DNS:kubernetes.default.svc\n")
        run = lambda *args: subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)  # noqa: E731
        ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1")
        one_day = ("-nodes", "-days", "1")
        run("req", "-x509", *ec, *one_day, "-keyout", ca_key, "-out", ca, "-subj", "/CN=kubernetes")
        run("req", *ec, "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=kube-apiserver")
        signed = ("-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-days", "1", "-extfile", ext)
        run("x509", "-req", "-in", csr, *signed, "-out", cert)
        return {name: (folder / name).read_bytes() for name in SERVED}


@contextmanager
def fake_apiserver(folder: Path, token: str = "sa-token") -> Iterator[FakeApiServer]:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in _certificates().items():
        (folder / name).write_bytes(data)
    state = FakeApiServer("", folder / CA, token)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(folder / "tls.crt", folder / "tls.key")
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    state.url = f"https://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


def _prometheus_handler(answers: dict[str, list[str]]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            query = (parse_qs(url.query).get("query") or [""])[0]
            if url.path != "/api/v1/query" or query not in answers:
                body = {"status": "error", "errorType": "bad_data", "error": "unknown query"}
                code = 400
            else:
                result = [{"metric": {"node": n}, "value": [1764806400, "1"]} for n in answers[query]]
                body = {"status": "success", "data": {"resultType": "vector", "result": result}}
                code = 200
            data = json.dumps(body, separators=(",", ":")).encode()  # Prometheus answers compact JSON
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def fake_prometheus(answers: dict[str, list[str]]) -> Iterator[str]:
    """A Prometheus HTTP API on loopback answering instant queries: query text -> the nodes its vector
    names (label `node`); another query is a 400, as an unparsable one would be. Yields its URL."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _prometheus_handler(answers))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
