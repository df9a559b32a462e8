"""The operator's part of the first install: the RUNBOOK's steps replayed command by command, as
sitegen/tree/runbook.py reads them. kubeadm init and joins make nodes (NotReady, with the registration,
labels, taints and kubelet reservations of the host files they name); `kubectl` labels nodes, applies files and
folders of dist/ (the root Application starts Argo CD: convergence.py), waits on nodes and Deployments,
issues a service-account token, initializes DirectPV's drives, `vgcreate` makes an LVM volume group on the
hosts of the pools the step's title names, cordons and uncordons nodes, makes a Job
of a CronJob and waits for Jobs to complete; `vault` writes policies, auth mounts,
roles and keys (and the keys a step lists are put in the vault); `mc` needs an S3 endpoint that answers;
a host script (`bash <file>`) may call only tools its hosts have by then (HOST_TOOLS: the GPU driver's
nvidia-smi once the GPU Operator installed it; no OFED or infiniband-diags tool, which the plan never
installs); a fabric preparation names the interfaces of its pool.

Not modelled: any other command or flag (it is read and does nothing), a command's own failure (the
scripts' own logic runs in tests), the hosts beyond the kubeadm and kubelet files the runbook installs.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from constructs.argocd import application_name
from constructs.kubeadm import KUBELET_PATCH
from sitegen.check.bringup.cluster import Cluster
from sitegen.check.bringup.convergence import Convergence
from sitegen.check.bringup.etcd import Etcd, Member, peer_url
from sitegen.check.bringup.events import Blocker, Stop
from sitegen.check.bringup.host import RebuiltHost, api_server_files
from sitegen.check.bringup.host_tools import HOST_TOOLS
from sitegen.check.bringup.kube import (
    CORDONED,
    NOT_READY,
    Node,
    label_selector_matches,
    node_affinity_matches,
    pod_template,
)
from sitegen.check.bringup.objects import key_of, show
from sitegen.check.bringup.refusals import create_refusal
from sitegen.check.bringup.registration import (
    KUBELET_LABELS,
    capacity,
    joining_addresses,
    registered_labels,
    registered_taints,
    reservations,
)
from sitegen.check.bringup.runtime import kernel_refusal, refusal, written_config, written_kernel_settings
from sitegen.check.bringup.services_replay import mc_command, vault_command
from sitegen.check.bringup.state import SimulationState
from sitegen.check.bringup.storage import step_pools
from sitegen.model import paths
from sitegen.tree.fields import dig
from sitegen.tree.runbook import JOBS_DONE, RunbookStep, commands, jobs_done_as_wait, listed_keys


class RunbookReplay:
    """The operator's commands over the simulation's state: applying the root Application starts Argo CD
    (`Convergence.start_root`), and after a step what the controllers did goes to the timeline
    (`Convergence.drain`, or `note_health` once Argo CD runs)."""

    def __init__(self, state: SimulationState, convergence: Convergence) -> None:
        self.state = state
        self.convergence = convergence

    # ---- the runbook ---------------------------------------------------------------------------
    def run_step(self, step: RunbookStep) -> None:
        self.state.step = step.label
        cluster_name = step.cluster
        config: PurePosixPath | None = None
        patch: dict[str, Any] | None = None
        for key, listed in listed_keys(step.body):
            self.state.vault.listed(key, listed)
        for words, heredoc in commands(step.body):
            tool = words[0]
            args = words[1:]
            target = self._path_argument(words)
            if target is not None and cluster_name is None:
                cluster_name = self.state.cluster_of_path(target)
            cluster = self.state.clusters.get(cluster_name or "")
            if tool == "envsubst" and target is not None:
                config = target
            elif tool == "install" and target is not None and words[-1].endswith(KUBELET_PATCH):
                patch = self._one(target, "KubeletConfiguration")
            elif tool == "install" and cluster_name is not None:  # a file placed on the cluster's hosts
                self.state.host_files.setdefault(cluster_name, set()).add(words[-1])
            elif tool == "bash" and target is not None:  # on the hosts of the cluster the script is for
                self._host_script(self.state.cluster_of_path(target) or cluster_name, target)
            elif tool == "kubeadm" and args[:1] in (["init"], ["join"]):
                if config is None or cluster is None:
                    raise Stop(
                        Blocker(
                            cluster_name or "-", self.state.step, "kubeadm", "no configuration file given"
                        )
                    )
                self._join(cluster, config, patch)
            elif tool == "kubectl" and cluster is not None:
                self._kubectl(cluster, args, target)
            elif tool == JOBS_DONE and cluster is not None:
                self._kubectl(cluster, jobs_done_as_wait(args), target)
            elif tool == "vault":
                vault_command(self.state, args, heredoc)
            elif tool == "mc":
                mc_command(self.state, cluster, args)
            elif tool == "vgcreate" and cluster is not None:  # on the hosts of the pools the step names
                cluster.storage.vgcreate(
                    args, step_pools(step.title, {p.name for p in self.state.hosts.values()})
                )
        for cluster in self.state.clusters.values():
            cluster.reconcile(self.state.rails[cluster.name])
        self._note_controllers()

    def _note_controllers(self) -> None:
        """What the controllers did so far, into the timeline (before Argo CD runs, as it happened)."""
        if self.state.root is None:
            self.convergence.drain()
        else:
            self.convergence.note_health()

    def _host_script(self, cluster_name: str | None, script: PurePosixPath) -> None:
        """A script the runbook runs on a pool's hosts: the tools it calls must be on those hosts by
        then (HOST_TOOLS); the fabric preparation names the pool's IPoIB interfaces."""
        text = self.state.texts.get(script, "")
        pool = re.sub(
            r"^(fabric-prep|fabric-preflight|fabric-topology|host-prep|host-preflight|local-cache)-",
            "",
            script.stem,
        )
        if script.name.startswith("host-prep-"):  # what containerd and the kernel run with from here on
            self.state.runtimes[(cluster_name or "-", pool)] = written_config(text)
            self.state.kernel_settings[(cluster_name or "-", pool)] = written_kernel_settings(text)
        cluster = self.state.clusters.get(cluster_name or "")
        if script.name.startswith("local-cache-") and cluster is not None:  # its volume group, made
            cluster.storage.vgcreate(re.findall(r"^vgcreate (.+)$", text, re.M)[0].split(), {pool})
        if script.name.startswith("fabric-prep-"):
            self.state.prepared[pool] = set(re.findall(r'NAME="([\w.-]+)"', text))
        code = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
        for tool, (source, provided) in sorted(HOST_TOOLS.items()):
            if not re.search(rf"(?<![\w-]){re.escape(tool)}(?![\w-])", code):
                continue
            why = provided(self.state, cluster_name, pool)
            if why:
                raise self.state.blocked(
                    cluster_name or "-",
                    script.name,
                    f"runs {tool} on the {pool} hosts, but {source} is not there yet: {why}",
                )
        self.state.event(cluster_name or "-", f"{script.name} run on the {pool} hosts")

    def _path_argument(self, words: list[str]) -> PurePosixPath | None:
        for word in words:
            if word.startswith(f"{paths.REPO_DIST}/"):
                return self.state.repo_path(word.rstrip("/"))
        return None

    def _one(self, path: PurePosixPath, kind: str) -> dict[str, Any]:
        for body in self.state.tree.get(path, []):
            if body.get("kind") == kind:
                return body
        raise self.state.blocked("-", str(path), f"no {kind} in the file")

    # ---- hosts ---------------------------------------------------------------------------------
    def _api_server_files(self, cluster: Cluster, config: PurePosixPath, files: set[str]) -> None:
        """kube-apiserver does not start when a file its flags name is missing: the audit policy, the
        admission and authentication configurations, the encryption config (which only the runbook
        writes, its key from the vault) must be on the host before init or a control-plane join (a
        join takes the ClusterConfiguration kubeadm keeps from the init)."""
        missing = [
            (flag, f)
            for flag, f in api_server_files(self.state.cluster_setup.get(cluster.name, {}))
            if f not in files
        ]
        if missing:
            flag, wanted = missing[0]
            raise self.state.blocked(
                cluster.name,
                str(config),
                f"kube-apiserver does not start: --{flag} names {wanted}, which no runbook step placed on "
                "the control-plane host",
            )

    def _join(
        self,
        cluster: Cluster,
        config: PurePosixPath,
        patch: Mapping[str, Any] | None,
        rebuilt: RebuiltHost | None = None,
    ) -> None:
        """kubeadm init or join with `config`: every host it names on day 1, or the one `rebuilt` host
        (its runtime, files and rails its own, not its pool's)."""
        docs = self.state.tree.get(config, [])
        init = next((d for d in docs if d.get("kind") in ("InitConfiguration", "JoinConfiguration")), None)
        if init is None:
            raise self.state.blocked(cluster.name, str(config), "no Init/JoinConfiguration")
        registration = init.get("nodeRegistration") or {}
        control_plane = init["kind"] == "InitConfiguration" or "controlPlane" in init
        if init["kind"] == "InitConfiguration":
            self.state.cluster_setup[cluster.name] = next(
                (d for d in docs if d.get("kind") == "ClusterConfiguration"), {}
            )
        if control_plane:
            host_files = rebuilt.files if rebuilt else self.state.host_files.get(cluster.name, set())
            self._api_server_files(cluster, config, host_files)
        patches = dig(init, "patches", "directory")
        if patches:
            self.state.patch_dirs.setdefault(cluster.name, set()).add(patches)
        addresses = joining_addresses(registration, self.state.texts.get(config, ""))
        names = list(addresses)
        if rebuilt is not None:
            names = [n for n in names if n == rebuilt.name]
        if init["kind"] == "InitConfiguration":  # kubeadm uploads it; every joining kubelet downloads it
            kubelet = next((d for d in docs if d.get("kind") == "KubeletConfiguration"), {})
            cluster.node_agents.server_tls_bootstrap = bool(kubelet.get("serverTLSBootstrap"))
            self.state.kubelets[cluster.name] = dict(kubelet)
        pool_taints = registered_taints(registration, control_plane=control_plane)
        labels = registered_labels(registration, control_plane=control_plane)
        if patch is None:
            raise self.state.blocked(
                cluster.name,
                str(config),
                f"joins {_names(names)} without kubelet reservations (no {KUBELET_PATCH} installed): pods "
                "may request the memory the kubelet and container runtime live on",
            )
        reserved = reservations(patch)
        for name in names:
            pool = self.state.hosts.get(name)
            if pool is None:
                raise Stop(
                    Blocker(cluster.name, self.state.step, name, "a host the model does not know joins")
                )
            written = rebuilt.runtime if rebuilt else self.state.runtimes.get((cluster.name, pool.name))
            kernel = rebuilt.kernel if rebuilt else self.state.kernel_settings.get((cluster.name, pool.name))
            kubelet = {**self.state.kubelets.get(cluster.name, {}), **patch}  # the pool's patch over it
            # kubeadm's default cgroup driver since 1.22 where the configuration names none
            runtime = refusal(written, str(kubelet.get("cgroupDriver", "systemd"))) or kernel_refusal(
                kernel or {}, kubelet
            )
            if runtime:
                raise Stop(
                    Blocker(
                        cluster.name,
                        self.state.step,
                        name,
                        f"kubeadm {init['kind'][:-13].lower()} stops: {runtime}",
                    )
                )
            cluster.nodes[name] = Node(
                name, pool.name, {**KUBELET_LABELS, "kubernetes.io/hostname": name, **labels},
                [*pool_taints, *NOT_READY], capacity(pool.hardware), dict(reserved),
                address=addresses.get(name, ""),
            )  # fmt: skip
            self.state.rails[cluster.name][name] = (
                rebuilt.rails if rebuilt else self.state.prepared.get(pool.name, set())
            )
            if control_plane:
                self._etcd_member(cluster, init, name, addresses.get(name, ""))
        cluster.scheduler.nodes_changed()
        cluster.changes += 1
        self.state.event(cluster.name, f"{len(names)} node(s) joined NotReady: {_names(names)}")

    def _etcd_member(self, cluster: Cluster, init: Mapping[str, Any], name: str, address: str) -> None:
        """The node's etcd member: the first of the cluster at init, a learner promoted at a join."""
        endpoint = (init.get("controlPlane") or init).get("localAPIEndpoint") or {}
        url = peer_url(str(endpoint.get("advertiseAddress") or address))
        if init["kind"] == "InitConfiguration":
            self.state.etcd[cluster.name] = Etcd({name: Member(url)})
            return
        refused = self.state.etcd.setdefault(cluster.name, Etcd()).join(name, url)
        if refused:
            raise Stop(
                Blocker(
                    cluster.name,
                    self.state.step,
                    name,
                    f"kubeadm join stops adding its etcd member: {refused}",
                )
            )

    def _kubectl(self, cluster: Cluster, args: list[str], target: PurePosixPath | None) -> None:
        verb = next(
            (
                a
                for i, a in enumerate(args)
                if not a.startswith("-") and args[i - 1 : i] not in (["-n"], ["--namespace"])
            ),
            "",
        )
        if verb in ("cordon", "uncordon"):
            self._cordon(cluster, args[args.index(verb) + 1 :], cordoned=verb == "cordon")
        elif "create" in args and args[args.index("create") + 1 : args.index("create") + 2] == ["job"]:
            self._job_from_cron_job(cluster, args)
        elif verb == "label" and "node" in args:
            rest = args[args.index("node") + 1 :]
            names = [a for a in rest if "=" not in a and not a.startswith("-")]
            pairs = dict(a.split("=", 1) for a in rest if "=" in a and not a.startswith("-"))
            for name in names:
                if name not in cluster.nodes:
                    raise Stop(
                        Blocker(cluster.name, self.state.step, name, "labels a node that has not joined")
                    )
                cluster.nodes[name].labels.update(pairs)
            cluster.scheduler.nodes_changed()
            cluster.changes += 1
        elif verb == "get" and "kube-root-ca.crt" in args and ">" in args:
            # the cluster's CA (every namespace's kube-root-ca.crt) where a client will trust it
            written = args[args.index(">") + 1]
            if "/.mc/certs/CAs/" in written:
                self.state.mc_trusted.add(cluster.name)
        elif verb == "apply" and target is not None:
            self._apply(cluster, target)
        elif verb == "wait":
            cluster.reconcile(self.state.rails[cluster.name])
            self._wait(cluster, args)
        elif "create" in args and args[args.index("create") + 1 : args.index("create") + 2] == ["token"]:
            account = args[args.index("token") + 1]
            namespace = args[args.index("-n") + 1] if "-n" in args else "default"
            if cluster.find("ServiceAccount", namespace, account) is None:
                raise self.state.blocked(
                    cluster.name,
                    f"ServiceAccount {namespace}/{account}",
                    "a token for a service account that does not exist",
                )
            cluster.manager = (namespace, account)
            self.state.event(cluster.name, f"token issued for {namespace}/{account}")
        elif verb == "directpv" and "init" in args:
            cluster.storage.drives_initialized = True
            cluster.changes += 1
            self.state.event(cluster.name, "DirectPV drives initialized")

    def _apply(self, cluster: Cluster, target: PurePosixPath) -> None:
        if target.suffix == ".yaml":
            bodies, owner = list(self.state.tree.get(target, [])), "runbook"
        else:
            bodies = self.state.docs_under(target)
            owner = (
                application_name(cluster.name, target.name)
                if target.parent.name == cluster.name
                else "runbook"
            )
        if not bodies:
            raise self.state.blocked(cluster.name, str(target), "nothing to apply there")
        if any(b.get("kind") == "Application" and b["metadata"]["name"] == "root" for b in bodies):
            self.convergence.start_root(bodies[0])
            return
        for body in sorted(
            bodies, key=lambda b: (b.get("kind") != "CustomResourceDefinition", b.get("kind") != "Namespace")
        ):
            _, kind, ns, _ = key_of(body)
            if ns and not cluster.has_namespace(ns):
                raise Stop(
                    Blocker(
                        cluster.name, self.state.step, show(key_of(body)), f"namespace {ns} does not exist"
                    )
                )
            if not cluster.serves(*key_of(body)[:2]):
                raise Stop(
                    Blocker(
                        cluster.name, self.state.step, show(key_of(body)), f"the cluster serves no {kind}"
                    )
                )
            refused = create_refusal(body, cluster)
            if refused:
                raise self.state.blocked(cluster.name, show(key_of(body)), refused)
            cluster.apply(body, owner)
        cluster.reconcile(self.state.rails[cluster.name])
        self.state.event(cluster.name, f"applied {target.name}: {len(bodies)} objects")

    def _cordon(self, cluster: Cluster, names: list[str], *, cordoned: bool) -> None:
        """kubectl cordon: the node takes no new pod but those that tolerate its cordon (DaemonSets'
        do); uncordon gives it back."""
        for name in (n for n in names if not n.startswith("-")):
            node = cluster.nodes.get(name)
            if node is None:
                raise self.state.blocked(cluster.name, name, "cordons a node that has not joined")
            node.taints = [t for t in node.taints if t != CORDONED] + ([CORDONED] if cordoned else [])
        cluster.changes += 1
        self.state.event(cluster.name, f"{'cordoned' if cordoned else 'uncordoned'} {_names(names)}")

    def _job_from_cron_job(self, cluster: Cluster, args: list[str]) -> None:
        """kubectl create job <name> --from=cronjob/<cronjob>: a Job of the CronJob's template."""
        namespace = args[args.index("-n") + 1] if "-n" in args else "default"
        name = args[args.index("job") + 1]
        source = next((a.split("/", 1)[1] for a in args if a.startswith("--from=cronjob/")), "")
        cron = cluster.find("CronJob", namespace, source)
        if cluster.find("Job", namespace, name) is not None:
            raise self.state.blocked(
                cluster.name,
                f"Job {namespace}/{name}",
                "kubectl create job: AlreadyExists (the Job of an earlier run is still there: delete it first)",
            )
        if cron is None:
            raise Stop(
                Blocker(cluster.name, self.state.step, f"CronJob {namespace}/{source}", "does not exist")
            )
        template = copy.deepcopy(cron.body["spec"]["jobTemplate"])
        body = {"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {**(template.get("metadata") or {}), "name": name, "namespace": namespace},
                "spec": template["spec"]}  # fmt: skip
        self._no_crossed_pins(cluster, body)
        cluster.apply(body, "runbook")
        cluster.changes += 1

    def _no_crossed_pins(self, cluster: Cluster, job: Mapping[str, Any]) -> None:
        """The scheduler places a Job's pods one at a time (all at once is Kueue's admission, and the
        RUNBOOK's Jobs are outside Kueue). Two unfinished Jobs of several pods, each pinned to as many
        nodes as it has pods, that share a node can each hold one of their nodes and wait forever for
        the other's. Not modelled: such a wait among Jobs that may choose from more nodes."""
        pinned = _pinned_nodes(cluster, job)
        namespace, name = job["metadata"]["namespace"], job["metadata"]["name"]
        for (_, kind, ns, other), found in sorted(cluster.objects.items()):
            if kind != "Job" or ns != namespace or other == name:
                continue
            w = cluster.workloads.get(("batch", "Job", ns, other))
            shared = pinned & _pinned_nodes(cluster, found.body)
            if shared and (w is None or not w.done):
                raise self.state.blocked(
                    cluster.name,
                    f"Job {namespace}/{name}",
                    f"started while Job {ns}/{other} waits for the same node {min(shared)}: each may hold "
                    "one of its nodes and wait forever for the other's",
                )

    def _wait(self, cluster: Cluster, args: list[str]) -> None:
        jobs = [a.split("/", 1)[1] for a in args if a.startswith("job/")]
        if jobs and "--for=condition=complete" in args:
            namespace = args[args.index("-n") + 1] if "-n" in args else "default"
            for name in jobs:
                w = cluster.workloads.get(("batch", "Job", namespace, name))
                if w is None or not w.done:
                    why = w.reason if w is not None else "it does not exist"
                    raise Stop(
                        Blocker(
                            cluster.name,
                            self.state.step,
                            f"Job {namespace}/{name}",
                            f"never completes: {why}",
                        )
                    )
            self._note_controllers()  # the Jobs' completions come before the wait that saw them
            self.state.event(cluster.name, f"{len(jobs)} Jobs completed in {namespace}")
            return
        if "nodes" in args:
            down = [n for n in cluster.nodes.values() if not n.ready]
            if down:
                raise self.state.blocked(cluster.name, "nodes", self._not_ready(cluster, down))
            self.state.event(cluster.name, f"{len(cluster.nodes)} nodes Ready")
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
                raise self.state.blocked(cluster.name, ns, what)
            self.state.event(cluster.name, f"{len(found)} Deployments Available in {ns}")

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


def _meta_labels(cluster: Cluster, w: Any) -> dict[str, str]:
    body = cluster.objects_body(w)
    return {k: str(v) for k, v in (dig(body, "metadata", "labels") or {}).items()}


def _names(names: list[str]) -> str:
    return ", ".join(names) if len(names) <= 6 else f"{', '.join(names[:3])}, ... {names[-1]}"


def _pinned_nodes(cluster: Cluster, job: Mapping[str, Any]) -> set[str]:
    """The nodes a Job of several pods may run on, when it has no more nodes than pods."""
    template = pod_template(job)
    if template is None or template.replicas < 2:
        return set()
    nodes = {n.name for n in cluster.nodes.values() if node_affinity_matches(template.spec, n.labels)}
    return nodes if len(nodes) <= template.replicas else set()
