"""Secret rules: no secret value in git; every namespace reads the vault through its own store and role."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise

from constructs.api_server_policies import ENCRYPTION_CONFIG
from constructs.edge import ISSUING_CA_VAULT_KEY, SITE_CA_KEY_PAIR
from constructs.kubeadm import KUBEADM_PKI
from constructs.secrets import vault_role
from sitegen.check.placement import pod_spec
from sitegen.check.rules.base import Context, Violation, rule
from sitegen.check.rules.pod_security import containers
from sitegen.components.edge.cert_manager import CertManager
from sitegen.tree.documents import Document
from sitegen.tree.fields import dig


@rule(
    "SEC-001",
    "no-secret-data",
    "secret values never enter git; reference them (ExternalSecret, existing secrets)",
)
def _no_secret_data(ctx: Context) -> Iterator[Violation]:
    for doc in ctx.docs:
        if doc.kind == "Secret" and doc.group == "":
            for key in ("data", "stringData"):
                filled = sorted(k for k, v in (doc.body.get(key) or {}).items() if v)
                if filled:
                    yield Violation(doc, f"$.{key}", f"a Secret with values in git: {', '.join(filled)}")


def _cluster_of(doc: Document, ctx: Context) -> str | None:
    """The cluster an object lands on: its apps folder's, or the hub's for the bootstrap folder."""
    if doc.cluster is not None:
        return doc.cluster
    layout = ctx.layouts.get(doc.variant)
    return layout.hub.name if layout is not None and doc.area == "bootstrap" else None


@rule(
    "SEC-003",
    "scoped-stores",
    "each namespace reads the vault through its own SecretStore and role: no store serves another namespace",
)
def _scoped_stores(ctx: Context) -> Iterator[Violation]:
    stores: dict[tuple[str, str | None, str, str], Document] = {}
    for doc in ctx.docs:
        if doc.group != "external-secrets.io":
            continue
        if doc.kind == "ClusterSecretStore":
            yield Violation(
                doc, "$", "a ClusterSecretStore serves every namespace: use a SecretStore per namespace"
            )
        elif doc.kind == "SecretStore":
            stores[(doc.variant, _cluster_of(doc, ctx), doc.namespace, doc.name)] = doc
            auth = dig(doc.body["spec"], "provider", "vault", "auth") or {}
            role = dig(auth, "kubernetes", "role")
            own = vault_role(ctx.secrets, doc.namespace) if ctx.secrets else role
            if role != own:
                yield Violation(
                    doc,
                    "$.spec.provider.vault.auth.kubernetes.role",
                    f"role {role} is not namespace {doc.namespace}'s own ({own})",
                )
    for doc in ctx.docs:
        if doc.kind != "ExternalSecret" or doc.group != "external-secrets.io":
            continue
        ref = doc.body["spec"].get("secretStoreRef") or {}
        if ref.get("kind", "SecretStore") != "SecretStore":
            yield Violation(
                doc,
                "$.spec.secretStoreRef",
                f"reads through a {ref.get('kind')}, not its namespace's SecretStore",
            )
        elif (doc.variant, _cluster_of(doc, ctx), doc.namespace, ref.get("name")) not in stores:
            yield Violation(
                doc, "$.spec.secretStoreRef", f"no SecretStore {ref.get('name')} in namespace {doc.namespace}"
            )


@rule(
    "SEC-004",
    "ca-key-reader",
    "only cert-manager's namespace reads the issuing CA's private key, and no cluster the site CA's "
    "(everyone else their certificates)",
)
def _ca_key_reader(ctx: Context) -> Iterator[Violation]:
    for doc in ctx.docs:
        if doc.kind != "ExternalSecret":
            continue
        for i, item in enumerate(doc.body["spec"].get("data") or []):
            key = item["remoteRef"]["key"]
            if key == SITE_CA_KEY_PAIR:
                yield Violation(doc, f"$.spec.data[{i}].remoteRef.key", f"reads {key}, the site CA's key pair: "
                                f"the clusters sign with the issuing CA ({ISSUING_CA_VAULT_KEY}) only")  # fmt: skip
            elif key == ISSUING_CA_VAULT_KEY and doc.namespace != CertManager.namespace:
                yield Violation(
                    doc,
                    f"$.spec.data[{i}].remoteRef.key",
                    f"reads the CA key pair {ISSUING_CA_VAULT_KEY} outside {CertManager.namespace}",
                )


def _is_redis(image: str) -> bool:
    repository = image.rsplit("/", 1)[-1].split("@")[0].split(":")[0]
    return repository.startswith(("redis", "valkey"))


@rule(
    "SEC-007",
    "redis-password",
    "every Redis the site runs takes its password from a Secret: each container of a Redis image mounts a "
    "Secret or gets a variable from one, and a `--requirepass` on its command line is such a variable, "
    "never text",
)
def _redis_password(ctx: Context) -> Iterator[Violation]:
    for doc in ctx.docs:
        found = pod_spec(doc)
        if found is None:
            continue
        path, spec = found
        secret_volumes = {v["name"] for v in spec.get("volumes") or [] if "secret" in v}
        for where, container in containers(path, spec):
            if not _is_redis(container.get("image") or ""):
                continue
            secret_vars = {
                env["name"]
                for env in container.get("env") or []
                if "secretKeyRef" in (env.get("valueFrom") or {})
            }
            name = container.get("name")
            mounts = {m["name"] for m in container.get("volumeMounts") or []}
            if not secret_vars and not mounts & secret_volumes:
                yield Violation(doc, where, f"Redis container {name} takes no password from a Secret")
            line = [*(container.get("command") or []), *(container.get("args") or [])]
            for flag, value in pairwise(line):
                if flag == "--requirepass" and value.removeprefix("$(").removesuffix(")") not in secret_vars:
                    yield Violation(doc, where, f"Redis container {name} requires a password written in git")


# What a rebuilt control plane cannot do without, and what no image of a third party may read.
CA_KEY_FILES = (
    *(f"{KUBEADM_PKI}/{ca}.key" for ca in ("ca", "front-proxy-ca", "etcd/ca", "sa")),
    ENCRYPTION_CONFIG,
)
# The control plane's own publisher: the images kubeadm runs with these keys anyway.
KUBERNETES_REGISTRY = "registry.k8s.io/"


def _reaches_ca_key(path: str) -> str | None:
    path = path.rstrip("/") or "/"
    prefix = path if path.endswith("/") else path + "/"
    return next((f for f in CA_KEY_FILES if f == path or f.startswith(prefix)), None)


def _reads_as_other(spec: dict, container: dict) -> bool:
    """The container runs as a user other than root, without the capabilities that bypass file modes:
    kubeadm writes the keys 0600, root's, so it cannot read them (node-exporter's view of the host)."""
    user = dig(container, "securityContext", "runAsUser", default=dig(spec, "securityContext", "runAsUser"))
    added = set(dig(container, "securityContext", "capabilities", "add") or [])
    return user not in (None, 0) and not added & {"DAC_OVERRIDE", "DAC_READ_SEARCH", "SYS_ADMIN", "ALL"}


@rule(
    "SEC-008",
    "kubeadm-ca-keys",
    "a container that may read kubeadm's CA keys or the encryption configuration from the host (root, "
    "or a capability past file modes) runs an image of the control plane's own publisher "
    "(registry.k8s.io), never a third party's",
)
def _kubeadm_ca_keys(ctx: Context) -> Iterator[Violation]:
    for doc in ctx.docs:
        found = pod_spec(doc)
        if found is None:
            continue
        path, spec = found
        reaching = {
            v["name"]: key
            for v in spec.get("volumes") or []
            if "hostPath" in v and (key := _reaches_ca_key(v["hostPath"].get("path", "")))
        }
        for where, container in containers(path, spec):
            image = container.get("image", "")
            if image.startswith(KUBERNETES_REGISTRY) or _reads_as_other(spec, container):
                continue
            for mount in container.get("volumeMounts") or []:
                if mount.get("name") in reaching:
                    yield Violation(
                        doc,
                        f"{where}.image",
                        f"{image} mounts {reaching[mount['name']]} from the host (volume {mount['name']}): "
                        "make what needs the CA keys on the host, or with a registry.k8s.io image",
                    )
                    break
