"""Pod Security rules: every namespace is labelled, `privileged` only where a component said why, and
our own workloads run `restricted` unless listed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from constructs.namespaces import PSA
from constructs.objects import WORKLOAD_KINDS, reaches_host
from sitegen.check.bringup.kube import pod_template
from sitegen.check.pod_security import violations
from sitegen.check.rules.base import Context, Violation, rule
from sitegen.model import paths
from sitegen.tree.documents import Document
from sitegen.tree.fields import dig

_LEVELS = ("privileged", "baseline", "restricted")
PARTIAL = "sitegen.io/partial"


def _namespaces(ctx: Context) -> Iterator[tuple[Document, dict[str, str]]]:
    for doc in ctx.docs:
        if doc.kind == "Namespace" and doc.group == "":
            yield doc, dig(doc.body, "metadata", "labels") or {}


@rule("PSA-001", "namespace-psa-labels", "an unlabelled namespace falls back to the cluster default level")
def _namespace_labels(ctx: Context) -> Iterator[Violation]:
    for doc, labels in _namespaces(ctx):
        for mode in ("enforce", "audit", "warn"):
            if labels.get(PSA + mode) not in _LEVELS:
                yield Violation(
                    doc, f"$.metadata.labels['{PSA}{mode}']", f"missing or invalid Pod Security {mode}"
                )


@rule(
    "PSA-002",
    "privileged-namespaces",
    "privileged is granted per namespace, only to reviewed node-level agents",
)
def _privileged_namespaces(ctx: Context) -> Iterator[Violation]:
    for doc, labels in _namespaces(ctx):
        if labels.get(PSA + "enforce") == "privileged" and doc.name not in ctx.allow.privileged_namespaces:
            yield Violation(
                doc, f"$.metadata.labels['{PSA}enforce']", "privileged, but not on the privileged list"
            )


@rule(
    "PSA-004",
    "agents-apart",
    "a privileged namespace holds node agents: a controller beside them runs where any pod may take "
    "the host, so it needs a reviewed reason (or the agents a namespace of their own)",
)
def _controllers_apart(ctx: Context) -> Iterator[Violation]:
    privileged = {
        (doc.variant, doc.cluster, doc.name)
        for doc, labels in _namespaces(ctx)
        if labels.get(PSA + "enforce") == "privileged"
    }
    for doc in ctx.docs:
        if doc.kind not in WORKLOAD_KINDS or doc.is_host_file or is_partial(doc):
            continue
        if (
            doc.variant,
            doc.cluster,
            doc.namespace,
        ) not in privileged or doc.namespace in ctx.allow.privileged_controllers:
            continue
        template = pod_template(doc.body)
        if template is not None and not reaches_host(template.spec):
            yield Violation(doc, "$.spec.template.spec", f"needs no host access, yet runs in privileged "
                            f"namespace {doc.namespace}: move it, or its node agents, to a namespace of their own")  # fmt: skip


def is_partial(doc: Document) -> bool:
    """A partial object patches a few fields into a workload another owner defines (kubeadm's CoreDNS)."""
    return dig(doc.body, "metadata", "annotations", PARTIAL) == "true"


def containers(path: str, spec: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for key in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(key) or []):
            yield f"{path}.{key}[{i}]", container


def _restricted_problems(spec: dict[str, Any], container: dict[str, Any]) -> list[str]:
    pod_ctx, ctx = spec.get("securityContext") or {}, container.get("securityContext") or {}
    problems = []
    requests = dig(container, "resources", "requests") or {}
    if not {"cpu", "memory"} <= set(requests):
        problems.append("resources.requests needs cpu and memory")
    if ctx.get("privileged"):
        problems.append("privileged")
    if ctx.get("allowPrivilegeEscalation") is not False:
        problems.append("allowPrivilegeEscalation must be false")
    if ctx.get("runAsNonRoot", pod_ctx.get("runAsNonRoot")) is not True:
        problems.append("runAsNonRoot must be true")
    if "ALL" not in (dig(ctx, "capabilities", "drop") or []):
        problems.append("capabilities must drop ALL")
    seccomp = (ctx.get("seccompProfile") or pod_ctx.get("seccompProfile") or {}).get("type")
    if seccomp not in ("RuntimeDefault", "Localhost"):
        problems.append("seccompProfile must be RuntimeDefault")
    return problems


def _chart_apps(ctx: Context) -> set[tuple[str, str, str]]:
    return {(paths.DistPath(f).variant, paths.DistPath(f).cluster or "", f.stem) for f in ctx.charts}


@rule(
    "SEC-002",
    "restricted-workloads",
    "the workloads we render state their resources and run restricted unless listed",
)
def _restricted_workloads(ctx: Context) -> Iterator[Violation]:
    charts = _chart_apps(ctx)
    for w in ctx.workloads(scheduled_only=False):
        if w.agent_key in ctx.allow.privileged_workloads or is_partial(w.doc) or w.kind == "CustomResource":
            continue
        if not w.doc.is_host_file and (w.doc.variant, w.doc.cluster, w.doc.app) in charts:
            continue  # an upstream chart's pod: PSA-003 holds it to its namespace's level
        for cpath, container in containers(w.path, w.spec):
            problems = _restricted_problems(w.spec, container)
            if problems:
                yield Violation(w.doc, cpath, "; ".join(problems))


def _admission(ctx: Context) -> dict[tuple[str, str], dict[str, Any]]:
    """The PodSecurity configuration of each cluster, from its kubeadm admission file."""
    out = {}
    for doc in ctx.docs:
        if doc.kind == "AdmissionConfiguration" and doc.cluster is not None:
            for plugin in doc.body.get("plugins") or []:
                if plugin.get("name") == "PodSecurity":
                    out[(doc.variant, doc.cluster)] = plugin.get("configuration") or {}
    return out


@rule(
    "PSA-003",
    "pods-pass-admission",
    "a pod that breaks its namespace's Pod Security level is refused at admission: its app never runs",
)
def _pods_pass_admission(ctx: Context) -> Iterator[Violation]:
    levels = {
        (doc.variant, doc.cluster, doc.name): labels.get(PSA + "enforce", "")
        for doc, labels in _namespaces(ctx)
    }
    admission = _admission(ctx)
    for w in ctx.workloads():
        if w.kind == "CustomResource" or w.doc.cluster is None:
            continue
        config = admission.get((w.doc.variant, w.doc.cluster), {})
        exempt = config.get("exemptions") or {}
        if w.doc.namespace in (exempt.get("namespaces") or []):
            continue
        if w.spec.get("runtimeClassName") in (exempt.get("runtimeClasses") or []):
            continue
        default = dig(config, "defaults", "enforce", default="privileged")
        level = levels.get((w.doc.variant, w.doc.cluster, w.doc.namespace)) or default
        problems = violations(level, w.spec)
        if problems:
            yield Violation(
                w.doc, w.path, f"namespace {w.doc.namespace} enforces {level}: {'; '.join(problems[:6])}"
            )
