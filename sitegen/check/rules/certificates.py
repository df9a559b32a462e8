"""Certificate rules: a key pair cert-manager renews reaches the servers that mount it.

cert-manager rewrites a Certificate's Secret at two thirds of its life; a server that loaded the pair at
start keeps serving the old one, which its clients refuse once it expires (a month after the renewal
with the default 90 days). So every workload that mounts the key of a Certificate's Secret must either
take a renewed pair by itself (its component says how, `Component.reloads_certificates`) or be listed
by the CertificateRollover of its namespace, which rolls it when the pair changes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from constructs.certificate_rollover import LIST_KEY, NAME, RESOURCES
from sitegen.check.rules.base import Context, Violation, rule
from sitegen.tree.documents import Document
from sitegen.tree.fields import dig

KEY = "tls.key"
_KINDS = {resource: kind for kind, resource in RESOURCES.items()}


def _key_secrets(pod: Mapping[str, Any]) -> set[str]:
    """The Secrets whose private key the pod mounts: a whole Secret, or its `tls.key` by item."""
    found = set()
    for volume in pod.get("volumes") or []:
        sources = [volume["secret"]] if "secret" in volume else []
        sources += [s["secret"] for s in dig(volume, "projected", "sources") or [] if "secret" in s]
        for source in sources:
            name = source.get("secretName") or source.get("name")
            items = source.get("items")
            if name and (not items or any(i.get("key") == KEY for i in items)):
                found.add(name)
    return found


def _rolled(ctx: Context) -> dict[tuple[str, str | None, str], set[tuple[str, str]]]:
    """(variant, cluster, namespace) -> (certificate, `Kind/name`) the rollover there lists."""
    rolled: dict[tuple[str, str | None, str], set[tuple[str, str]]] = {}
    for doc in ctx.docs:
        if doc.kind == "ConfigMap" and doc.name == NAME and doc.namespace:
            for line in str(dig(doc.body, "data", LIST_KEY) or "").splitlines():
                certificate, resource, name = line.split()
                where = (doc.variant, doc.cluster, doc.namespace)
                rolled.setdefault(where, set()).add((certificate, f"{_KINDS.get(resource, resource)}/{name}"))
    return rolled


@rule(
    "TLS-001",
    "renewed-certificates",
    "a server that mounts a certificate's key takes the renewed pair, by itself or rolled by the "
    "CertificateRollover of its namespace: otherwise it serves the old one until it expires",
)
def _renewed_certificates(ctx: Context) -> Iterator[Violation]:
    # (variant, cluster, namespace, Secret) -> the Certificate that writes it
    issued: dict[tuple[str, str | None, str, str], Document] = {}
    for doc in ctx.docs:
        if doc.kind == "Certificate" and doc.group == "cert-manager.io" and doc.namespace:
            secret = dig(doc.body, "spec", "secretName")
            issued[(doc.variant, doc.cluster, doc.namespace, secret)] = doc
    rolled = _rolled(ctx)
    workloads: set[tuple[str, str | None, str, str]] = set()
    for w in ctx.workloads():
        if w.kind == "CustomResource":
            continue
        doc = w.doc
        workloads.add((doc.variant, doc.cluster, doc.namespace or "", f"{doc.kind}/{doc.name}"))
        reloads = ctx.allow.reloads_certificates.get((doc.variant, doc.cluster or ""), {})
        for secret in sorted(_key_secrets(w.spec)):
            certificate = issued.get((doc.variant, doc.cluster, doc.namespace or "", secret))
            if certificate is None or w.agent_key in reloads:
                continue
            if (certificate.name, f"{doc.kind}/{doc.name}") not in rolled.get(
                (doc.variant, doc.cluster, doc.namespace or ""), set()
            ):
                yield Violation(
                    doc,
                    w.path,
                    f"mounts the key of Certificate {certificate.name}, which cert-manager renews: nothing "
                    "reloads it (declare how in the component's reloads_certificates, or list it in a "
                    f"{NAME} of the namespace)",
                )
    yield from _stale_rollovers(ctx, rolled, issued, workloads)


def _stale_rollovers(
    ctx: Context,
    rolled: Mapping[tuple[str, str | None, str], set[tuple[str, str]]],
    issued: Mapping[tuple[str, str | None, str, str], Document],
    workloads: set[tuple[str, str | None, str, str]],
) -> Iterator[Violation]:
    """A rollover line that names no rendered Certificate or workload fails its Job every hour."""
    certificates = {(v, c, ns, doc.name) for (v, c, ns, _), doc in issued.items()}
    for doc in ctx.docs:
        if doc.kind != "ConfigMap" or doc.name != NAME or not doc.namespace:
            continue
        for certificate, workload in sorted(rolled.get((doc.variant, doc.cluster, doc.namespace), set())):
            if (doc.variant, doc.cluster, doc.namespace, certificate) not in certificates:
                yield Violation(doc, "$.data", f"lists Certificate {certificate}, which is not rendered here")
            if (doc.variant, doc.cluster, doc.namespace, workload) not in workloads:
                yield Violation(doc, "$.data", f"lists {workload}, which is not rendered here")
