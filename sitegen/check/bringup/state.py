"""What a simulation reads and keeps: dist/ as documents (`Tree`) and texts (`Texts`), the variant's
clusters (a `Cluster` each, with the Secrets each Application makes once it syncs), its hosts and the
vault, which Application provides each CRD, namespace, webhook and runtime API group (`Providers`), and
the state the runbook replay and Argo CD's convergence share: the Applications, the step under way, the
rails and kubeadm patch folders of the nodes, the result with its timeline.

Nothing here runs a step or a sync: runbook_replay.py and convergence.py do, composed into `Simulation`
(simulate.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cached_property
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from constructs.argocd import application_name
from sitegen.check.bringup.argo import AppSync, Providers
from sitegen.check.bringup.cluster import Cluster
from sitegen.check.bringup.etcd import Etcd
from sitegen.check.bringup.events import Blocker, Event, Result, Stop
from sitegen.check.bringup.health import HealthChecks
from sitegen.check.bringup.kube import made_secret
from sitegen.check.bringup.refusals.cilium import api_server
from sitegen.check.bringup.vault import Vault
from sitegen.check.bringup.writers import FieldWriters
from sitegen.components.catalog import COMPONENTS
from sitegen.components.networking.cilium import Cilium
from sitegen.components.platform.admission_policies import AdmissionPolicies
from sitegen.model import VariantLayout, paths
from sitegen.tree.fields import dig

if TYPE_CHECKING:
    from sitegen.check.bringup.roots import RootSync

Tree = Mapping[PurePosixPath, list[dict[str, Any]]]  # dist path -> documents (YAML files)
Texts = Mapping[PurePosixPath, str]  # dist path -> text (the RUNBOOK, host scripts)


ADMISSION_CONFIG = "admission-config.yaml"


def _pod_security(docs: list[dict[str, Any]]) -> tuple[str, frozenset[str]]:
    """The API server's PodSecurity defaults: the enforced level and the exempt namespaces (Kubernetes'
    own default without a configuration: privileged, nothing exempt)."""
    for doc in docs:
        for plugin in doc.get("plugins") or []:
            if plugin.get("name") == "PodSecurity":
                config = plugin.get("configuration") or {}
                level = str(dig(config, "defaults", "enforce", default="privileged"))
                exempt = frozenset(dig(config, "exemptions", "namespaces") or [])
                return level, exempt
    return "privileged", frozenset()


def _cluster_configuration(files: Iterable[list[dict[str, Any]]]) -> dict[str, Any]:
    """The init's ClusterConfiguration ({} without one)."""
    return next((d for docs in files for d in docs if d.get("kind") == "ClusterConfiguration"), {})


def _api_server_arg(setup: dict[str, Any], name: str) -> str | None:
    return next(
        (str(a["value"]) for a in dig(setup, "apiServer", "extraArgs") or [] if a.get("name") == name), None
    )


def _admission_plugins(setup: dict[str, Any]) -> frozenset[str]:
    """The API server's --enable-admission-plugins, as the init's ClusterConfiguration sets them."""
    plugins = _api_server_arg(setup, "enable-admission-plugins")
    return frozenset(plugins.split(",")) if plugins else frozenset()


def _api_audiences(setup: dict[str, Any]) -> frozenset[str]:
    """The audiences the API server accepts tokens for: --api-audiences, else the service account
    issuer, which kubeadm sets to https://kubernetes.default.svc.<dnsDomain> (default cluster.local)."""
    audiences = _api_server_arg(setup, "api-audiences") or _api_server_arg(setup, "service-account-issuer")
    if audiences is None:
        audiences = (
            f"https://kubernetes.default.svc.{dig(setup, 'networking', 'dnsDomain', default='cluster.local')}"
        )
    return frozenset(audiences.split(","))


class SimulationState:
    """The inputs and the shared state of a `Simulation` (simulate.py)."""

    def __init__(self, layout: VariantLayout, tree: Tree, texts: Texts, *, argocd_namespace: str) -> None:
        self.layout = layout
        self.variant = layout.name
        self.tree = tree
        self.texts = texts
        self.argocd_namespace = argocd_namespace
        self.vault = Vault()
        self.clusters = {c.name: Cluster(c.name, self.vault) for c in layout.clusters}
        folders = {p.parent for p in tree}
        for name, cluster in self.clusters.items():
            cluster.cni_app = f"{name}-{Cilium.name}"
            cluster.remote = name != layout.hub.name
            cluster.applier = AdmissionPolicies.applier(argocd_namespace, hub=not cluster.remote)
            for kind in COMPONENTS:
                app = application_name(name, kind.name)
                if paths.app_dir(self.variant, name, kind.name) in folders:
                    for version in getattr(kind, "serves_at_runtime", ()):
                        cluster.runtime_groups[version.rpartition("/")[0]] = app
        for path, docs in tree.items():
            where = paths.DistPath(path)
            if where.app is not None and where.cluster in self.clusters:
                owner, cluster_of = application_name(where.cluster, where.app), self.clusters[where.cluster]
            elif where.area == paths.BOOTSTRAP:
                owner, cluster_of = "the root Application", self.clusters[layout.hub.name]
            else:
                continue
            for body in docs:
                made = made_secret(body)
                if made is not None:
                    cluster_of.secrets.made_later.setdefault(made, owner)
        for name, cluster in self.clusters.items():
            setup = _cluster_configuration(
                docs for path, docs in tree.items()
                if path.parent == paths.kubeadm_dir(self.variant, name) and path.name.startswith("init-")
            )  # fmt: skip
            cluster.admission_plugins = _admission_plugins(setup)
            cluster.api_audiences = _api_audiences(setup)
            admission = tree.get(paths.kubeadm_dir(self.variant, name) / ADMISSION_CONFIG, [])
            cluster.api_server = api_server(
                doc for path, docs in tree.items() if path.parent == paths.kubeadm_dir(self.variant, name)
                for doc in docs if isinstance(doc, dict)
            )  # fmt: skip
            cluster.pod_security = _pod_security(admission)
            cluster.plugin_configs = {
                str(p.get("name")): p.get("configuration") or {}
                for doc in admission
                for p in doc.get("plugins") or []
            }
        self.hosts = {h.name: pool for c in layout.clusters for pool in c.pools for h in pool.hosts}
        self.result = Result(layout.name)
        self.rails: dict[str, dict[str, set[str]]] = {c: {} for c in self.clusters}  # node -> interfaces
        self.prepared: dict[str, set[str]] = {}  # pool -> interface names its fabric preparation sets
        self.providers = self._providers()
        self.apps: dict[str, AppSync] = {}  # every Application under the root, nested roots included
        self.root: RootSync | None = None
        self.checks = HealthChecks({})  # Argo CD's, once its argocd-cm is applied
        self.projects: dict[str, Mapping[str, Any]] = {}  # AppProjects of the bootstrap folder
        self.writers = FieldWriters()
        self._written: dict[str, int] = {}  # per cluster: the controllers' writes judged so far
        self.unreachable: set[str] = set()  # clusters Argo CD cannot reach (day 2)
        self.positions: dict[str, tuple[float, ...]] = {}  # app -> its waves in the roots, outermost first
        self.day2 = False  # the first install is done: nothing orders the apps any more
        self.healthy: set[str] = set()
        self.mc_aliases: dict[str, str] = {}  # mc alias -> S3 host
        self.mc_trusted: set[str] = set()  # clusters whose CA the runbook put in mc's certs/CAs
        self.host_files: dict[str, set[str]] = {}  # cluster -> host paths the runbook installed files to
        self.patch_dirs: dict[
            str, set[str]
        ] = {}  # cluster -> the kubeadm patch folders its nodes joined with
        # (cluster, pool) -> the containerd configuration its host preparation wrote (None: none)
        self.runtimes: dict[tuple[str, str], dict[str, Any] | None] = {}
        self.kernel_settings: dict[tuple[str, str], dict[str, str]] = {}  # (cluster, pool) -> sysctls written
        self.kubelets: dict[str, dict[str, Any]] = {}  # cluster -> the KubeletConfiguration kubeadm uploads
        self.etcd: dict[str, Etcd] = {}  # cluster -> its stacked etcd's members
        self.cluster_setup: dict[str, dict[str, Any]] = {}  # cluster -> its init's ClusterConfiguration
        self.step = "bare hosts"

    # ---- inputs --------------------------------------------------------------------------------
    def docs_in(self, folder: PurePosixPath) -> list[dict[str, Any]]:
        """The documents of the YAML files directly in `folder` (a directory source without recurse)."""
        return [
            body
            for path, bodies in self._sorted_tree
            if PurePosixPath(path).parent == folder and path.endswith(".yaml")
            for body in bodies
            if isinstance(body, dict) and body.get("kind")
        ]

    def docs_under(self, folder: PurePosixPath) -> list[dict[str, Any]]:
        prefix = f"{folder}/"
        return [
            body
            for path, bodies in self._sorted_tree
            if path.startswith(prefix) and path.endswith(".yaml")
            for body in bodies
            if isinstance(body, dict) and body.get("kind")
        ]

    @cached_property
    def _sorted_tree(self) -> list[tuple[str, list[dict[str, Any]]]]:
        return [(str(path), bodies) for path, bodies in sorted(self.tree.items())]

    def _providers(self) -> Providers:
        found = Providers()
        for name, cluster in self.clusters.items():
            for group, app in cluster.runtime_groups.items():
                found.groups[(name, group)] = app
        for cluster in self.clusters:
            for path, bodies in sorted(self.tree.items()):
                where = paths.DistPath(path)
                if where.cluster != cluster or where.app is None:
                    continue
                app = application_name(cluster, where.app)
                for body in bodies:
                    kind = body.get("kind")
                    if kind == "CustomResourceDefinition":
                        spec = body["spec"]
                        found.crds.setdefault((cluster, spec["group"], spec["names"]["kind"]), app)
                    elif kind == "Namespace":
                        found.namespaces.setdefault((cluster, body["metadata"]["name"]), app)
                    elif kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
                        found.webhooks.setdefault((cluster, body["metadata"]["name"]), app)
        return found

    def blocked(self, cluster: str, what: str, why: str) -> Stop:
        """What stops the current step: `what` in `cluster` (`-`: no cluster), and why."""
        return Stop(Blocker(cluster, self.step, what, why))

    def repo_path(self, repo_path: str) -> PurePosixPath:
        found = paths.from_repo(repo_path.lstrip("/"))
        if found is None:
            raise self.blocked("-", repo_path, "the path is not inside dist/")
        return found

    def cluster_of_path(self, path: PurePosixPath) -> str | None:
        return paths.DistPath(path).cluster

    def event(self, cluster: str, what: str) -> None:
        self.result.timeline.append(Event(cluster, self.step, what))
