"""The first install of a variant, from bare hosts to every Application Healthy, replayed offline.

The operator's part is the generated RUNBOOK itself: its shell blocks are read and their commands
replayed (kubeadm init and joins with the host files they name, node labels, `kubectl apply` of folders
of dist/, waits, the vault's auth, policies and keys, the fabric preparation, DirectPV's drives). A step
that begins "Once `<app>` is Healthy" runs when that Application is. Argo CD's part follows `argo.py`.
Nothing is assumed that the RUNBOOK and dist/ do not say; what the simulation cannot know (a Secret a
chart's own controller makes) is left out rather than guessed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cached_property
from pathlib import PurePosixPath
from typing import Any

from constructs.kubeadm import KUBELET_PATCH
from sitegen.check.appsets import applications
from sitegen.check.bringup.argo import HEALTHY, AppSync, Failure, Providers
from sitegen.check.bringup.cluster import Cluster, Vault, key_of, show
from sitegen.check.bringup.events import Blocker, Event, Result, Stop
from sitegen.check.bringup.health import HealthChecks
from sitegen.check.bringup.kube import NOT_READY, Node, Taint, label_selector_matches, quantity
from sitegen.check.bringup.runbook import RunbookStep, commands, runbook_steps
from sitegen.check.tree import Document
from sitegen.components.catalog import COMPONENTS
from sitegen.components.networking.cilium import Cilium
from sitegen.compose import paths
from sitegen.model import VariantLayout

Tree = Mapping[PurePosixPath, list[dict[str, Any]]]  # dist path -> documents (YAML files)
Texts = Mapping[PurePosixPath, str]  # dist path -> text (the RUNBOOK, host scripts)

CONTROL_PLANE_TAINT = Taint("node-role.kubernetes.io/control-plane", "", "NoSchedule")
MAX_PODS = 110  # the kubelet's default
EVICTION_HARD_MEMORY = 100 * 2**20  # the kubelet's default memory.available threshold
KUBELET_LABELS = {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}  # set by every kubelet


class Simulation:
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
            for kind in COMPONENTS:
                app = f"{name}-{kind.name}"
                if paths.app_dir(self.variant, name, kind.name) in folders:
                    for version in getattr(kind, "serves_at_runtime", ()):
                        cluster.runtime_groups[version.rpartition("/")[0]] = app
        for path, docs in tree.items():
            parts = path.parts
            if len(parts) > 4 and parts[1] == "apps" and parts[2] in self.clusters:
                owner, cluster_of = f"{parts[2]}-{parts[3]}", self.clusters[parts[2]]
            elif len(parts) > 2 and parts[1] == "bootstrap":
                owner, cluster_of = "the root Application", self.clusters[layout.hub.name]
            else:
                continue
            for body in docs:
                made = Cluster.made_secret(body)
                if made is not None:
                    cluster_of.made_later.setdefault(made, owner)
        self.hosts = {h.name: pool for c in layout.clusters for pool in c.pools for h in pool.hosts}
        self.result = Result(layout.name)
        self.rails: dict[str, dict[str, set[str]]] = {c: {} for c in self.clusters}  # node -> interfaces
        self.prepared: dict[str, set[str]] = {}  # pool -> interface names its fabric preparation sets
        self.providers = self._providers()
        self.apps: dict[str, AppSync] = {}
        self.root: RootSync | None = None
        self.healthy: set[str] = set()
        self.mc_aliases: dict[str, str] = {}  # mc alias -> S3 host
        self.patch_dirs: dict[
            str, set[str]
        ] = {}  # cluster -> the kubeadm patch folders its nodes joined with
        self.step = "bare hosts"

    # ---- inputs --------------------------------------------------------------------------------
    def _docs_under(self, folder: PurePosixPath) -> list[dict[str, Any]]:
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
            root = paths.cluster_apps_dir(self.variant, cluster)
            for path, bodies in sorted(self.tree.items()):
                if not path.is_relative_to(root):
                    continue
                app = f"{cluster}-{path.relative_to(root).parts[0]}"
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

    def _repo_path(self, repo_path: str) -> PurePosixPath:
        found = paths.from_repo(repo_path.lstrip("/"))
        if found is None:
            raise Stop(Blocker("-", self.step, repo_path, "the path is not inside dist/"))
        return found

    def _cluster_of_path(self, path: PurePosixPath) -> str | None:
        parts = path.parts
        return parts[2] if len(parts) > 2 and parts[1] in paths.CLUSTER_AREAS else None

    # ---- the runbook ---------------------------------------------------------------------------
    def run(self) -> Result:
        runbook = self.texts.get(paths.bootstrap_dir(self.variant) / paths.RUNBOOK)
        try:
            if runbook is None:
                raise Stop(Blocker("-", "runbook", "RUNBOOK.md", "dist/ has no runbook"))
            deferred: list[RunbookStep] = []
            for step in runbook_steps(runbook):
                if step.after_app:
                    deferred.append(step)
                    continue
                self._run_step(step)
            self._converge(deferred)
        except Stop as stop:
            self.result.blocker = stop.blocker
        return self.result

    def _event(self, cluster: str, what: str) -> None:
        self.result.timeline.append(Event(cluster, self.step, what))

    def _run_step(self, step: RunbookStep) -> None:
        self.step = step.label
        cluster_name = step.cluster
        config: PurePosixPath | None = None
        patch: dict[str, Any] | None = None
        for bullet in re.findall(r"^- `([\w./-]+)`: ", step.body, flags=re.M):
            self.vault.keys.add(bullet)
        for words, heredoc in commands(step.body):
            tool = words[0]
            args = words[1:]
            target = self._path_argument(words)
            if target is not None and cluster_name is None:
                cluster_name = self._cluster_of_path(target)
            cluster = self.clusters.get(cluster_name or "")
            if tool == "envsubst" and target is not None:
                config = target
            elif tool == "install" and target is not None and words[-1].endswith(KUBELET_PATCH):
                patch = self._one(target, "KubeletConfiguration")
            elif tool == "bash" and target is not None and "fabric-prep-" in target.name:
                pool = target.stem.removeprefix("fabric-prep-")
                script = self.texts.get(target, "")
                self.prepared[pool] = set(re.findall(r'NAME="([\w.-]+)"', script))
            elif tool == "kubeadm" and args[:1] in (["init"], ["join"]):
                if config is None or cluster is None:
                    raise Stop(
                        Blocker(cluster_name or "-", self.step, "kubeadm", "no configuration file given")
                    )
                self._join(cluster, config, patch)
            elif tool == "kubectl" and cluster is not None:
                self._kubectl(cluster, args, target)
            elif tool == "vault":
                self._vault(args, heredoc)
            elif tool == "mc":
                self._mc(cluster, args)
        for cluster in self.clusters.values():
            cluster.reconcile(self.rails[cluster.name])
        if self.root is None:
            self._drain()
        else:
            self._note_health()

    def _path_argument(self, words: list[str]) -> PurePosixPath | None:
        for word in words:
            if word.startswith(f"{paths.REPO_DIST}/"):
                return self._repo_path(word.rstrip("/"))
        return None

    def _one(self, path: PurePosixPath, kind: str) -> dict[str, Any]:
        for body in self.tree.get(path, []):
            if body.get("kind") == kind:
                return body
        raise Stop(Blocker("-", self.step, str(path), f"no {kind} in the file"))

    # ---- hosts ---------------------------------------------------------------------------------
    def _join(self, cluster: Cluster, config: PurePosixPath, patch: Mapping[str, Any] | None) -> None:
        docs = self.tree.get(config, [])
        init = next((d for d in docs if d.get("kind") in ("InitConfiguration", "JoinConfiguration")), None)
        if init is None:
            raise Stop(Blocker(cluster.name, self.step, str(config), "no Init/JoinConfiguration"))
        registration = init.get("nodeRegistration") or {}
        control_plane = init["kind"] == "InitConfiguration" or "controlPlane" in init
        patches = (init.get("patches") or {}).get("directory")
        if patches:
            self.patch_dirs.setdefault(cluster.name, set()).add(patches)
        extra = {a["name"]: a["value"] for a in registration.get("kubeletExtraArgs") or []}
        if "${NODE_NAME}" in str(registration.get("name", "")):
            header = self.texts.get(config, "")
            addresses = dict(re.findall(r"\b([a-z][\w-]*)=(\d+\.\d+\.\d+\.\d+)", header))
            names = list(addresses)
        else:
            names = [str(registration["name"])]
            addresses = {names[0]: str(extra.get("node-ip", ""))}
        if init["kind"] == "InitConfiguration":  # kubeadm uploads it; every joining kubelet downloads it
            kubelet = next((d for d in docs if d.get("kind") == "KubeletConfiguration"), {})
            cluster.server_tls_bootstrap = bool(kubelet.get("serverTLSBootstrap"))
        taints = registration.get("taints")
        pool_taints = (
            [CONTROL_PLANE_TAINT] if taints is None and control_plane
            else [Taint(t["key"], str(t.get("value", "")), t["effect"]) for t in taints or []]
        )  # fmt: skip
        labels = {}
        if "node-labels" in extra:
            labels = dict(pair.split("=", 1) for pair in extra["node-labels"].split(","))
        if control_plane:
            labels["node-role.kubernetes.io/control-plane"] = ""
        if patch is None:
            raise Stop(Blocker(
                cluster.name, self.step, str(config),
                f"joins {_names(names)} without kubelet reservations (no {KUBELET_PATCH} installed): pods "
                "may request the memory the kubelet and container runtime live on",
            ))  # fmt: skip
        reserved = _reservations(patch)
        for name in names:
            pool = self.hosts.get(name)
            if pool is None:
                raise Stop(Blocker(cluster.name, self.step, name, "a host the model does not know joins"))
            hw = pool.hardware
            capacity = {
                "cpu": hw.cpu_cores * 1000,
                "memory": hw.memory_gb * 10**9,
                "pods": MAX_PODS,
                **({"hardware/gpu": hw.gpu.count} if hw.gpu else {}),
            }
            cluster.nodes[name] = Node(
                name, pool.name, {**KUBELET_LABELS, "kubernetes.io/hostname": name, **labels},
                [*pool_taints, *NOT_READY], capacity, dict(reserved), address=addresses.get(name, ""),
            )  # fmt: skip
            self.rails[cluster.name][name] = self.prepared.get(pool.name, set())
        cluster.changes += 1
        self._event(cluster.name, f"{len(names)} node(s) joined NotReady: {_names(names)}")

    def _kubectl(self, cluster: Cluster, args: list[str], target: PurePosixPath | None) -> None:
        verb = next((a for a in args if not a.startswith("-")), "")
        if verb == "label" and "node" in args:
            rest = args[args.index("node") + 1 :]
            names = [a for a in rest if "=" not in a and not a.startswith("-")]
            pairs = dict(a.split("=", 1) for a in rest if "=" in a and not a.startswith("-"))
            for name in names:
                if name not in cluster.nodes:
                    raise Stop(Blocker(cluster.name, self.step, name, "labels a node that has not joined"))
                cluster.nodes[name].labels.update(pairs)
            cluster.changes += 1
        elif verb == "apply" and target is not None:
            self._apply(cluster, target)
        elif verb == "wait":
            cluster.reconcile(self.rails[cluster.name])
            self._wait(cluster, args)
        elif "create" in args and args[args.index("create") + 1 : args.index("create") + 2] == ["token"]:
            account = args[args.index("token") + 1]
            namespace = args[args.index("-n") + 1] if "-n" in args else "default"
            if cluster.find("ServiceAccount", namespace, account) is None:
                raise Stop(Blocker(
                    cluster.name, self.step, f"ServiceAccount {namespace}/{account}",
                    "a token for a service account that does not exist",
                ))  # fmt: skip
            cluster.manager = (namespace, account)
            self._event(cluster.name, f"token issued for {namespace}/{account}")
        elif verb == "directpv" and "init" in args:
            cluster.drives_initialized = True
            cluster.changes += 1
            self._event(cluster.name, "DirectPV drives initialized")

    def _apply(self, cluster: Cluster, target: PurePosixPath) -> None:
        if target.suffix == ".yaml":
            bodies, owner = list(self.tree.get(target, [])), "runbook"
        else:
            bodies = self._docs_under(target)
            owner = f"{cluster.name}-{target.name}" if target.parent.name == cluster.name else "runbook"
        if not bodies:
            raise Stop(Blocker(cluster.name, self.step, str(target), "nothing to apply there"))
        if any(b.get("kind") == "Application" and b["metadata"]["name"] == "root" for b in bodies):
            self._start_root(bodies[0])
            return
        for body in sorted(
            bodies, key=lambda b: (b.get("kind") != "CustomResourceDefinition", b.get("kind") != "Namespace")
        ):
            _, kind, ns, _ = key_of(body)
            if ns and not cluster.has_namespace(ns):
                raise Stop(
                    Blocker(cluster.name, self.step, show(key_of(body)), f"namespace {ns} does not exist")
                )
            if not cluster.serves(*key_of(body)[:2]):
                raise Stop(
                    Blocker(cluster.name, self.step, show(key_of(body)), f"the cluster serves no {kind}")
                )
            cluster.apply(body, owner)
        cluster.reconcile(self.rails[cluster.name])
        self._event(cluster.name, f"applied {target.name}: {len(bodies)} objects")

    def _wait(self, cluster: Cluster, args: list[str]) -> None:
        if "nodes" in args:
            down = [n for n in cluster.nodes.values() if not n.ready]
            if down:
                raise Stop(Blocker(cluster.name, self.step, "nodes", self._not_ready(cluster, down)))
            self._event(cluster.name, f"{len(cluster.nodes)} nodes Ready")
        elif "deployment" in args and "-l" in args:
            ns = args[args.index("-n") + 1] if "-n" in args else "default"
            selector = dict(p.split("=", 1) for p in args[args.index("-l") + 1].split(","))
            found = [
                w for (_, k, n, _), w in cluster.workloads.items()
                if k == "Deployment" and n == ns and label_selector_matches({"matchLabels": selector}, _meta_labels(cluster, w))
            ]  # fmt: skip
            down = [w for w in found if not w.running]
            if not found or down:
                what = f"{down[0].template.ref}: {down[0].reason}" if down else "no Deployment matches"
                raise Stop(Blocker(cluster.name, self.step, ns, what))
            self._event(cluster.name, f"{len(found)} Deployments Available in {ns}")

    def _not_ready(self, cluster: Cluster, down: list[Node]) -> str:
        agents = [
            w for w in cluster.workloads.values()
            if w.owner == cluster.cni_app and not w.running and w.template.kind in ("DaemonSet", "Deployment")
        ]  # fmt: skip
        why = (
            "; ".join(f"{w.template.ref} not running: {w.reason}" for w in agents)
            or "the CNI agent is not on them"
        )
        return f"{len(down)} nodes NotReady ({_names([n.name for n in down])}): {why}"

    def _mc(self, cluster: Cluster | None, args: list[str]) -> None:
        """The MinIO client: `alias set` names an S3 endpoint; every other command needs that endpoint
        to answer, i.e. an ObjectStore that serves the name with every server pool up."""
        if args[:2] == ["alias", "set"]:
            self.mc_aliases[args[2]] = args[3].removeprefix("https://").split("/")[0]
            return
        words = [a for a in args if not a.startswith("-")]
        alias = next((w.split("/")[0] for w in words[1:] if w.split("/")[0] in self.mc_aliases), None)
        if alias is None:
            named = next((w.split("/")[0] for w in words[1:] if "/" in w), words[-1] if words else "")
            raise Stop(Blocker(
                cluster.name if cluster else "-", self.step, "mc",
                f"`mc {' '.join(args[:3])}`: no alias {named!r} (the runbook never runs `mc alias set`)",
            ))  # fmt: skip
        host = self.mc_aliases[alias]
        why = self._s3_blocker(host)
        if why:
            raise Stop(Blocker(
                cluster.name if cluster else "-", self.step, "mc", f"`mc {' '.join(args[:3])}`: {host}: {why}"
            ))  # fmt: skip

    def _s3_blocker(self, host: str) -> str | None:
        for cluster in self.clusters.values():
            for key, applied in cluster.of_kind("ObjectStore"):
                spec = applied.body.get("spec") or {}
                names = ((spec.get("certificates") or {}).get("config") or {}).get("dnsNames") or []
                if host not in names:
                    continue
                service = ((spec.get("services") or {}).get("minio") or {}).get("serviceType")
                if service != "LoadBalancer":
                    return f"the ObjectStore's S3 Service is {service}: nothing outside cluster {cluster.name} reaches it"
                down = cluster.controller_status(applied.body)
                if down.get("currentState") != "Initialized":
                    state = down.get("currentState", "no status: the AIStor operator is not running")
                    return f"S3 does not answer yet (ObjectStore {key[2]}/{key[3]}: {state})"
                return cluster.load_balancer_blocker()
        return "no ObjectStore of the variant serves this name"

    def _vault(self, args: list[str], heredoc: list[str]) -> None:
        if args[:2] == ["policy", "write"]:
            self.vault.policies[args[2]] = set(
                re.findall(r'path "[\w-]+/data/([\w./-]+)"', "\n".join(heredoc))
            )
        elif args[:1] == ["write"] and args[1].startswith("auth/") and args[1].endswith("/config"):
            mount = args[1].removeprefix("auth/").removesuffix("/config")
            self.vault.mounts[mount] = dict(a.split("=", 1) for a in args[2:] if "=" in a)
        elif args[:1] == ["write"] and args[1].startswith("auth/") and "/role/" in args[1]:
            mount, _, role = args[1].removeprefix("auth/").partition("/role/")
            self.vault.roles[(mount, role)] = dict(a.split("=", 1) for a in args[2:] if "=" in a)
        elif args[:2] == ["kv", "put"]:
            self.vault.keys.add(args[2].partition("/")[2])  # <kv mount>/<key>

    # ---- Argo CD -------------------------------------------------------------------------------
    def _start_root(self, root: Mapping[str, Any]) -> None:
        hub = self.clusters[self.layout.hub.name]
        bootstrap = self._repo_path(root["spec"]["source"]["path"])
        bodies = [
            b
            for b in self._docs_under(bootstrap)
            if not (b.get("kind") == "Application" and b["metadata"]["name"] == "root")
        ]
        servers = {self.layout.server(c): c.name for c in self.layout.clusters}
        config = hub.find("ConfigMap", self.argocd_namespace, "argocd-cm")
        checks = HealthChecks.from_config_map((config.body.get("data") or {}) if config else {})
        for index, body in enumerate(bodies):
            if body.get("kind") not in ("Application", "ApplicationSet"):
                continue
            found, errors = applications([Document(bootstrap / f"{index}.yaml", 0, body)])
            for _, error in errors:
                raise Stop(Blocker(hub.name, self.step, body["metadata"]["name"], error.message))
            generated = found
            for app in generated:
                server, namespace = app.destination
                cluster = servers.get(server)
                if cluster is None:
                    raise Stop(
                        Blocker(
                            hub.name,
                            self.step,
                            app.name,
                            f"destination {server} is no cluster of the variant",
                        )
                    )
                source = self._repo_path(app.sources[0]["path"])
                self.apps[app.name] = AppSync(
                    app.name, self.clusters[cluster], self._docs_under(source),
                    sync_options=list((app.spec.get("syncPolicy") or {}).get("syncOptions") or []),
                    destination_namespace=namespace,
                    retry_limit=int(((app.spec.get("syncPolicy") or {}).get("retry") or {}).get("limit", 0)),
                    registered=self._registration(server, cluster),
                    providers=self.providers,
                )  # fmt: skip
                if body["kind"] == "ApplicationSet":
                    self.apps[app.name].generated_by = body["metadata"]["name"]
                self.apps[app.name].wave = int(app.wave or 0)
        self.root = RootSync(
            "root", hub, bodies,
            sync_options=list(root["spec"]["syncPolicy"].get("syncOptions") or []),
            destination_namespace=root["spec"]["destination"]["namespace"],
            retry_limit=int(root["spec"]["syncPolicy"].get("retry", {}).get("limit", 0)),
            registered=lambda: None, providers=self.providers,
        )  # fmt: skip
        self.root.children = self.apps
        for sync in (self.root, *self.apps.values()):
            sync.checks = checks
        self.root.created = True
        self._event(hub.name, f"root Application: {len(self.apps)} Applications to create")

    def _registration(self, server: str, cluster: str) -> Any:
        hub = self.clusters[self.layout.hub.name]
        if cluster == hub.name:
            return lambda: None

        def registered() -> str | None:
            for (_, kind, ns, _), applied in hub.objects.items():
                template = ((applied.body.get("spec") or {}).get("target") or {}).get("template") or {}
                if (
                    kind == "ExternalSecret"
                    and ns == self.argocd_namespace
                    and (template.get("data") or {}).get("server") == server
                ):
                    why = hub.external_secret_ready(applied.body)
                    return None if why is None else f"cluster {cluster} is not registered with Argo CD: {why}"
            return f"cluster {cluster} is not registered with Argo CD (no cluster Secret for {server})"

        return registered

    def _converge(self, deferred: list[RunbookStep]) -> None:
        if self.root is None:
            raise Stop(
                Blocker(
                    self.layout.hub.name, "runbook", "root", "the runbook never applies the root Application"
                )
            )
        self.step = "Argo CD"
        syncs = [self.root, *self.apps.values()]
        while True:
            moved = False
            for cluster in self.clusters.values():
                before = cluster.changes
                cluster.reconcile(self.rails[cluster.name])
                moved |= cluster.changes != before
            for sync in syncs:
                failures = len(sync.failures)
                moved |= sync.step()
                for failure in sync.failures[failures:]:
                    self._judge(sync, failure)
            self._note_health()
            for step in list(deferred):
                app = self.apps.get(step.after_app or "")
                if app is None:
                    raise Stop(
                        Blocker(
                            "-",
                            step.label,
                            step.after_app or "",
                            "waits on an Application that does not exist",
                        )
                    )
                if app.name in self.healthy:
                    deferred.remove(step)
                    self._run_step(step)
                    self.step = "Argo CD"
                    moved = True
            if not moved:
                break
        self._final(deferred)

    def replay_day2(self, budgets: dict[str, dict[str, Any]]) -> None:
        """The day-2 scenarios on the installed site (day2.py); a blocker ends them."""
        from sitegen.check.bringup import day2

        try:
            day2.replay(self, budgets)
        except Stop as stop:
            self.result.blocker = stop.blocker

    def settle(self) -> None:
        """Controllers and syncs run until nothing moves (day 2: no runbook step waits)."""
        syncs = [s for s in (self.root, *self.apps.values()) if s is not None]
        while True:
            moved = False
            for cluster in self.clusters.values():
                before = cluster.changes
                cluster.reconcile(self.rails[cluster.name])
                moved |= cluster.changes != before
            for sync in syncs:
                moved |= sync.step()
            self._note_health()
            if not moved:
                return

    def _judge(self, sync: AppSync, failure: Failure) -> None:
        """A failed attempt an app's own retry fixes is Argo CD as usual; one waiting on another app is
        an ordering defect: it converges, if at all, only by retrying until the other app is there."""
        if failure.provider is None or failure.provider == sync.name:
            self.result.retried.append(failure)
            return
        wave = sync.wave
        raise Stop(Blocker(
            sync.cluster.name, f"root wave {self._root_wave()}", sync.name,
            f"sync failed before {failure.provider} was Healthy (sync wave {wave}"
            f"{self._wave_note(failure.provider)}): {failure}",
        ))  # fmt: skip

    def _wave_note(self, provider: str) -> str:
        app = self.apps.get(provider)
        if app is None:
            return ""
        note = f" vs {app.wave}"
        return note + (
            f"; generated by ApplicationSet {app.generated_by}, whose waves order nothing"
            if app.generated_by
            else ""
        )

    def _root_wave(self) -> str:
        if self.root is None or not self.root.groups:
            return "-"
        group = self.root.groups[min(self.root._group, len(self.root.groups) - 1)]
        return str(
            int(
                ((group[0].get("metadata") or {}).get("annotations") or {}).get(
                    "argocd.argoproj.io/sync-wave", "0"
                )
            )
        )

    def _note_health(self) -> None:
        """Log, by the wave of the Application they belong to, what became Healthy and what the
        controllers did in this round."""
        events: list[tuple[int, int, int, str, str, str]] = []  # wave, kind, order, cluster, label, what
        current = self._wave_of("")
        here = f"wave {current}" if self.step == "Argo CD" else self.step
        for cluster in self.clusters.values():
            for line in cluster.device_report():
                events.append((current, 0, len(events), cluster.name, here, line))
            for owner, line in cluster.log:
                wave = self._wave_of(owner)
                label = f"wave {wave}" if owner in self.apps else here
                events.append((wave, 0, len(events), cluster.name, label, line))
            cluster.log.clear()
        for name, app in self.apps.items():
            if name not in self.healthy and app.synced and app.health()[0] == HEALTHY:
                self.healthy.add(name)
                events.append((app.wave, 1, len(events), app.cluster.name, "", name))
        healthy: dict[tuple[int, str], list[str]] = {}
        for wave, kind, _, cluster, label, what in sorted(events):
            if kind == 1:
                healthy.setdefault((wave, cluster), []).append(what)
                continue
            self._flush(healthy, before=wave)
            self.result.timeline.append(Event(cluster, label, what))
        self._flush(healthy, before=None)

    def _flush(self, healthy: dict[tuple[int, str], list[str]], before: int | None) -> None:
        for wave, cluster in sorted(healthy):
            if before is None or wave < before:
                names = healthy.pop((wave, cluster))
                self.result.timeline.append(Event(cluster, f"wave {wave}", "Healthy: " + ", ".join(names)))

    def _wave_of(self, owner: str) -> int:
        app = self.apps.get(owner)
        if app is not None:
            return app.wave
        return int(self._root_wave()) if self._root_wave().lstrip("-").isdigit() else -99

    def _drain(self) -> None:
        """Move what the controllers did outside Argo CD's syncs into the timeline."""
        for cluster in self.clusters.values():
            lines = [*cluster.device_report(), *(line for _, line in cluster.log)]
            cluster.log.clear()
            for line in lines:
                self.result.timeline.append(Event(cluster.name, self.step, line))

    def _final(self, deferred: list[RunbookStep]) -> None:
        assert self.root is not None
        sick = sorted(
            (app.wave, name) for name, app in self.apps.items() if app.health()[0] != HEALTHY or not app.synced
        )  # fmt: skip
        if sick:
            _, name = sick[0]
            app = self.apps[name]
            status, why = app.health()
            if not app.created:
                status, why = "never created", f"the root is stuck: {self.root.health()[1]}"
            raise Stop(Blocker(app.cluster.name, f"root wave {self._root_wave()}", name, f"{status}: {why}"))
        status, why = self.root.health()
        if status != HEALTHY:
            raise Stop(Blocker(self.layout.hub.name, "root", "root", f"{status}: {why}"))
        for step in deferred:
            raise Stop(Blocker("-", step.label, step.after_app or "", "never ran"))
        self._check_node_identity()
        self._rerun_queued_jobs()
        for cluster in self.clusters.values():
            for w in sorted(cluster.workloads.values(), key=lambda w: w.template.ref):
                if w.template.kind == "CronJob":
                    nodes = [
                        n
                        for n in cluster.nodes.values()
                        if w.template.why_not(n) is None and not n.fits({**w.template.requests, "pods": 1})
                    ]
                    if not nodes:
                        raise Stop(
                            Blocker(
                                cluster.name,
                                "after sync",
                                w.owner,
                                f"{w.template.ref} can never run: no node takes its pods",
                            )
                        )
            self.result.timeline.append(
                Event(
                    cluster.name,
                    "done",
                    f"{len(cluster.nodes)} nodes Ready, {sum(1 for a in self.apps.values() if a.cluster is cluster)} Applications Healthy",
                )
            )

    def _check_node_identity(self) -> None:
        """The seed's labels and taints reached every node: labels by the runbook and the kubelet's
        own node-labels, taints at registration only (nothing in dist/ creates a Node)."""
        self.step = "nodes"
        for cluster in self.clusters.values():
            for node in cluster.nodes.values():
                pool = self.hosts[node.name]
                missing = {k: v for k, v in pool.labels.items() if node.labels.get(k) != v}
                if missing:
                    label = ", ".join(f"{k}={v}" for k, v in sorted(missing.items()))
                    raise Stop(
                        Blocker(cluster.name, self.step, node.name, f"lacks its pool's labels: {label}")
                    )
                taints = {Taint(t.key, t.value or "", t.effect) for t in pool.taints}
                if not taints <= set(node.taints):
                    absent = ", ".join(sorted(map(str, taints - set(node.taints))))
                    raise Stop(
                        Blocker(cluster.name, self.step, node.name, f"lacks its pool's taints: {absent}")
                    )
            self.result.timeline.append(
                Event(
                    cluster.name,
                    self.step,
                    f"every node carries its pool's labels and taints ({len(cluster.nodes)})",
                )
            )

    def _rerun_queued_jobs(self) -> None:
        """Day 2 on day 1: the acceptance job runs again (after maintenance) while everything else
        runs. It must still be admitted, preempting what its priority allows, and what it preempted
        must come back once it completes."""
        for cluster in self.clusters.values():
            self.step = "acceptance re-run"
            jobs = [w for w in cluster.workloads.values() if w.done and cluster.queue_of(w)]
            for job in jobs:
                job.done, job.admitted, job.reason = False, None, "submitted again"
                cluster.changes += 1
            if not jobs:
                continue
            cluster.reconcile(self.rails[cluster.name])
            self._drain()
            for w in sorted(cluster.workloads.values(), key=lambda w: w.template.ref):
                if w.template.kind == "CronJob" or (w.template.kind == "Job" and w not in jobs):
                    continue
                finished = w.done if w.template.kind == "Job" else w.running
                if not finished:
                    raise Stop(Blocker(cluster.name, self.step, w.owner, f"{w.template.ref}: {w.reason}"))


class RootSync(AppSync):
    children: dict[str, AppSync]

    def step(self) -> bool:
        moved = super().step()
        for (_, _, _, name), applied in self.cluster.of_kind("Application", "ApplicationSet"):
            if applied.owner == self.name:
                for child in self.children.values():
                    if (child.name == name or child.generated_by == name) and not child.created:
                        child.created = True
                        moved = True
        return moved

    def live_status(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """A child Application's status as Argo CD writes it: its sync and its health."""
        if body.get("kind") != "Application":
            return super().live_status(body)
        child = self.children[body["metadata"]["name"]]
        status, why = child.health()
        return {
            "sync": {"status": "Synced" if child.synced else "OutOfSync"},
            "health": {"status": status, **({"message": why} if why else {})},
        }


def _reservations(patch: Mapping[str, Any] | None) -> dict[str, int]:
    """What pods cannot request: kube and system reservations of the kubelet patch the node joined
    with, and the kubelet's default hard eviction threshold (memory.available 100Mi)."""
    reserved: dict[str, int] = {"memory": EVICTION_HARD_MEMORY}
    if patch is None:
        return reserved
    for field_name in ("systemReserved", "kubeReserved"):
        for name, value in (patch.get(field_name) or {}).items():
            reserved[name] = reserved.get(name, 0) + quantity(value, milli=name == "cpu")
    eviction = (patch.get("evictionHard") or {}).get("memory.available")
    if eviction:
        reserved["memory"] = reserved.get("memory", 0) + quantity(eviction)
    return reserved


def _meta_labels(cluster: Cluster, w: Any) -> dict[str, str]:
    body = cluster.objects_body(w)
    return {k: str(v) for k, v in ((body.get("metadata") or {}).get("labels") or {}).items()}


def _names(names: list[str]) -> str:
    return ", ".join(names) if len(names) <= 6 else f"{', '.join(names[:3])}, ... {names[-1]}"
