"""Day 2: hosts rebuilt empty, brought back by the RUNBOOK's own sections (procedures/replacement.py),
replayed line by line on a host that starts with nothing.

Per cluster a control-plane member is lost (its node NotReady, its etcd member down) and comes back
rebuilt; per worker pool one host does; and each member a config moves (`replaced_members`) moves,
from the state before the change was merged (the old member a node and in etcd, the new host empty).

What the replay holds the section to, from the tools' documented behaviour:
- the host: its pool's baseline before the preflight and the join (containerd's CRI, as
  runtime.py judges it), its rails prepared where its pool has some, the kubelet's patch, on the control
  plane the API server's files (host.py), etcd's patch and kube-vip's manifest, the encryption
  configuration filled with the cluster's key from the vault (a new key reads none of the Secrets);
- the values a join takes (`envsubst` of its file): each variable exported by then; a bootstrap token
  made by `kubeadm token create` (the init's and any `kubeadm token generate` printed are not valid on
  day 2: the init's expired with its TTL, a generated one was never registered); on the control plane
  a certificate key under which `kubeadm init phase upload-certs --upload-certs` uploaded the
  certificates again (the init's upload expired with the init's token, two hours after it); the CA's
  hash; values handed over through the vault's join key are what was put there;
- etcd (etcd.py): the lost member removed before a member at its address joins, quorum kept;
  `kubectl exec etcd-<member>` only into a member that runs;
- kubeadm's preflight refuses a join whose Node is registered and Ready.

Then the node must be Ready and schedulable, etcd healthy with exactly the control-plane members, and
what ran on the host before (its DaemonSets' pods, the workloads it held) run again.

Not modelled: the OS install itself, reboots' effects, the time each step takes, the GPU topology
check (it needs the driver's tools on the host).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from constructs.api_server_policies import ENCRYPTION_CONFIG, ENCRYPTION_KEY_VAR
from constructs.kubeadm import ETCD_PATCH, KUBELET_PATCH, PATCHES_DIR
from sitegen.check.bringup.cluster import Cluster
from sitegen.check.bringup.etcd import Member, peer_url
from sitegen.check.bringup.events import Blocker, Event, Stop
from sitegen.check.bringup.host import RebuiltHost
from sitegen.check.bringup.kube import CORDONED, Node
from sitegen.check.bringup.runtime import written_config, written_kernel_settings
from sitegen.compose.procedures.control_plane import KUBE_VIP_MANIFEST
from sitegen.compose.procedures.replacement import (
    ADDRESS,
    BEFORE,
    HEALTHY,
    MEMBER,
    NODE,
    move_title,
    rebuild_title,
    replace_title,
)
from sitegen.model import ClusterLayout, PoolLayout, paths
from sitegen.tree.runbook import JOBS_DONE, jobs_done_as_wait, shell_lines, words_of

if TYPE_CHECKING:
    from pathlib import PurePosixPath

    from sitegen.check.bringup.simulate import Simulation

_ASSIGNMENT = re.compile(r"(\w+)=(\"(?:[^\"\\]|\\.)*\"|'[^']*'|\S+)")
_VAULT_GET = re.compile(r"vault kv get -field=(\w+) (\S+?)\)")
_VARIABLE = re.compile(r"\$\{(\w+)\}")
_REMOVED_ID = re.compile(r"<ID of ([\w-]+)>")
CA_HASH = "the CA's hash"


class Session:
    """One section replayed for one rebuilt host (and, for a move, the member that leaves)."""

    def __init__(
        self,
        sim: Simulation,
        cluster: Cluster,
        layout: ClusterLayout,
        host: RebuiltHost,
        leaving: str | None = None,
    ) -> None:
        self.sim, self.cluster, self.layout, self.host, self.leaving = sim, cluster, layout, host, leaving
        site_kv = _kv_mount(sim, layout)
        self.join_key = f"{site_kv}/kubernetes/{layout.name}/join"
        self.encryption_key = f"{site_kv}/kubernetes/{layout.name}/encryption"
        # what day 1 left under the join key: the init's token and certificate key (expired by now)
        self.vault = {
            "token": "the init's token",
            "certificate_key": "the init's certificate key",
            "ca_cert_hash": CA_HASH,
        }
        self.env: dict[str, str] = {}
        self.tokens: set[str] = set()  # made by `kubeadm token create` in this session
        self.uploaded: set[str] = set()  # certificate keys the certificates were uploaded under
        self.made = 0
        self.config: PurePosixPath | None = None
        self.given: dict[str, str] = {}  # what the join file's variables were at its envsubst
        self.patch: dict[str, Any] | None = None
        self.piped: str | None = None  # the key envsubst filled into the encryption configuration

    def stop(self, component: str, why: str) -> Stop:
        return self.sim.state.blocked(self.cluster.name, component, why)

    def run(self, text: str) -> None:
        for line, _ in shell_lines(text):
            if line.startswith("export "):
                self._export(line)
                continue
            for words in words_of(line):
                self._command(words)

    # ---- values ----------------------------------------------------------------------------------
    def _new(self, what: str) -> str:
        self.made += 1
        return f"{what} #{self.made}"

    def _export(self, line: str) -> None:
        for name, value in _ASSIGNMENT.findall(line.removeprefix("export ")):
            self.env[name] = self._value(value.strip("\"'"))

    def _value(self, value: str) -> str:
        if "kubeadm token create" in value:
            token = self._new("a token of kubeadm token create")
            self.tokens.add(token)
            return token
        if "kubeadm token generate" in value:
            return "a token of kubeadm token generate (printed, never registered)"
        if "kubeadm certs certificate-key" in value:
            return self._new("a certificate key")
        read = _VAULT_GET.search(value + ")") if "vault kv get" in value else None
        if read:
            field, key = read.groups()
            if key == self.join_key:
                return self.vault.get(field, f"nothing (the vault's {key} has no {field})")
            if key == self.encryption_key:
                return "the cluster's encryption key"
            return f"the vault's {key} {field}"
        if "openssl" in value and "ca.crt" in value:
            return CA_HASH
        return value

    # ---- commands --------------------------------------------------------------------------------
    def _command(self, words: list[str]) -> None:
        tool, args = words[0], words[1:]
        if tool == "bash" and args:
            self._script(self.sim.state.repo_path(args[-1]))
        elif tool == "install" and len(args) >= 2:
            self._install(args[-2], args[-1])
        elif tool == "envsubst" and "<" in args:
            self._envsubst(self.sim.state.repo_path(args[args.index("<") + 1]))
        elif tool == "vault" and args[:2] in (["kv", "put"], ["kv", "patch"]):
            self._vault_write(args)
        elif tool == "kubeadm" and args[:3] == ["init", "phase", "upload-certs"]:
            if "--certificate-key" in args:
                self.uploaded.add(self.env.get(args[args.index("--certificate-key") + 1].strip('"$'), ""))
        elif tool == "kubeadm" and args[:1] == ["join"]:
            self._join()
        elif tool == "kubeadm" and args[:1] == ["reset"]:
            self._reset()
        elif tool == "kubectl":
            self._kubectl(args)
        elif tool == JOBS_DONE:
            self._kubectl(jobs_done_as_wait(args))

    def _script(self, script: PurePosixPath) -> None:
        text = self.sim.state.texts.get(script, "")
        pool = script.stem.split("-", 2)[-1]
        if pool != self.host.pool:
            raise self.stop(
                script.name, f"runs on {self.host.name}, a host of pool {self.host.pool}, not {pool}"
            )
        if script.name.startswith("host-prep-"):
            self.host.runtime, self.host.baseline = written_config(text), True
            self.host.kernel = written_kernel_settings(text)
        elif script.name.startswith("host-preflight-") and not self.host.baseline:
            raise self.stop(script.name, f"fails on {self.host.name}: its baseline never ran")
        elif script.name.startswith("fabric-prep-"):
            self.host.rails, self.host.fabric = set(re.findall(r'NAME="([\w.-]+)"', text)), True
        elif script.name.startswith("fabric-preflight-") and not self.host.fabric:
            raise self.stop(script.name, f"fails on {self.host.name}: its rails were never prepared")

    def _install(self, source: str, target: str) -> None:
        self.host.files.add(target)
        if target.endswith(KUBELET_PATCH):
            self.patch = self.sim.replay._one(self.sim.state.repo_path(source), "KubeletConfiguration")
        if target == ENCRYPTION_CONFIG:
            self.host.encryption_key = self.piped if source == "/dev/stdin" else "the key in git's template"

    def _envsubst(self, source: PurePosixPath) -> None:
        text = self.sim.state.texts.get(source, "")
        body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
        wanted = sorted(set(_VARIABLE.findall(body)))
        unset = [v for v in wanted if v not in self.env]
        if unset:
            raise self.stop(
                source.name, f"envsubst leaves ${{{unset[0]}}} empty on {self.host.name}: nothing exported it"
            )
        if ENCRYPTION_KEY_VAR in wanted:
            self.piped = self.env[ENCRYPTION_KEY_VAR]
            return
        self.config, self.given = source, {v: self.env[v] for v in wanted}

    def _vault_write(self, args: list[str]) -> None:
        key = next(a for a in args[2:] if not a.startswith("-"))
        if key == self.encryption_key and args[1] == "put" and "-cas=0" not in args:
            raise self.stop(
                key,
                "replaces the cluster's encryption key: every Secret in etcd was written with the old one",
            )
        if key != self.join_key:
            return
        for name, value in _ASSIGNMENT.findall(" ".join(a for a in args[2:] if "=" in a)):
            variable = value.strip("\"'").lstrip("$").strip("{}")
            self.vault[name] = self.env.get(variable, f"nothing (${variable} was never exported)")

    # ---- kubeadm ---------------------------------------------------------------------------------
    def _join(self) -> None:
        host, cluster = self.host, self.cluster
        if self.config is None:
            raise self.stop("kubeadm join", "no configuration file given")
        docs = self.sim.state.tree.get(self.config, [])
        join = next((d for d in docs if d.get("kind") == "JoinConfiguration"), {})
        control_plane = "controlPlane" in join
        token = self.given.get("KUBEADM_TOKEN", "")
        if token not in self.tokens:
            raise self.stop(host.name, f"kubeadm join is refused: its bootstrap token is {token}, which the "
                            "cluster no longer knows (the init's expired with its TTL)")  # fmt: skip
        if self.given.get("KUBEADM_CA_CERT_HASH") != CA_HASH:
            raise self.stop(
                host.name,
                f"kubeadm join's discovery fails: caCertHashes is {self.given.get('KUBEADM_CA_CERT_HASH')}",
            )
        if control_plane:
            key = self.given.get("KUBEADM_CERTIFICATE_KEY", "")
            if key not in self.uploaded:
                raise self.stop(host.name, f"kubeadm join cannot download the control plane's certificates with "
                                f"{key}: the init's upload expired with its token, two hours after it (`kubeadm "
                                "init phase upload-certs --upload-certs` uploads them again)")  # fmt: skip
            missing = [f for f in (f"{PATCHES_DIR}/{ETCD_PATCH}", KUBE_VIP_MANIFEST) if f not in host.files]
            if missing:
                raise self.stop(host.name, f"joins without {missing[0]}: etcd without its metrics address, or a "
                                "member that never holds the API's VIP")  # fmt: skip
            if ENCRYPTION_CONFIG in host.files and host.encryption_key != "the cluster's encryption key":
                raise self.stop(host.name, f"its encryption configuration holds {host.encryption_key}: its API "
                                "server reads none of the Secrets in etcd")  # fmt: skip
        else:
            name, address = self.env.get("NODE_NAME"), self.env.get("NODE_IP")
            if (name, address) != (host.name, host.address):
                raise self.stop(
                    host.name, f"joins as {name} at {address}, not as {host.name} at {host.address}"
                )
        node = cluster.nodes.get(host.name)
        if node is not None and node.ready:
            raise self.stop(host.name, "kubeadm's preflight refuses the join: a Node of that name is Ready")
        if node is not None:
            cluster.scheduler.remove_node(host.name)
        self.sim.replay._join(cluster, self.config, self.patch, rebuilt=host)

    def _reset(self) -> None:
        """`kubeadm reset` on the member that leaves: it removes its own etcd member, its static pods go."""
        if self.leaving is None:
            return
        refused = self.sim.state.etcd[self.cluster.name].remove(self.leaving)
        if refused:
            raise self.stop(self.leaving, f"kubeadm reset cannot remove its etcd member: {refused}")

    # ---- kubectl ---------------------------------------------------------------------------------
    def _kubectl(self, args: list[str]) -> None:
        cluster = self.cluster
        if "exec" in args:
            pod = args[args.index("exec") + 1]
            member = pod.removeprefix("etcd-")
            found = self.sim.state.etcd[cluster.name].members.get(member)
            node = cluster.nodes.get(member)
            if found is None or not found.started or node is None or not node.ready:
                raise self.stop(pod, "kubectl exec into an etcd that does not run")
            removed = _REMOVED_ID.search(" ".join(args))
            if "remove" in args and removed:
                refused = self.sim.state.etcd[cluster.name].remove(removed.group(1))
                if refused:
                    raise self.stop(removed.group(1), f"etcdctl member remove: {refused}")
            return
        verb = [
            a
            for i, a in enumerate(args)
            if not a.startswith("-") and args[i - 1 : i] not in (["-n"], ["--namespace"])
        ]
        if verb[:2] == ["delete", "node"]:
            for name in verb[2:]:
                if name in cluster.nodes:
                    cluster.scheduler.remove_node(name)
        elif verb[:1] == ["drain"]:
            cluster.scheduler.drain(verb[1:2])
        elif verb[:2] == ["delete", "job"]:
            namespace = args[args.index("-n") + 1]
            for name in verb[2:]:
                cluster.delete(("batch", "Job", namespace, name))
        elif verb[:1] == ["wait"] and any(a.startswith("pod/etcd-") for a in args):
            member = next(a for a in args if a.startswith("pod/etcd-")).removeprefix("pod/etcd-")
            found = self.sim.state.etcd[cluster.name].members.get(member)
            if found is None or found.learner or not found.started:
                raise self.stop(f"pod/etcd-{member}", "never Ready: no started voting member of that name")
        else:
            self.sim.replay._kubectl(cluster, args, self.sim.replay._path_argument(["kubectl", *args]))
        cluster.reconcile(self.sim.state.rails[cluster.name])


def _kv_mount(sim: Simulation, layout: ClusterLayout) -> str:
    """The vault's KV mount, as the RUNBOOK's encryption key names it."""
    runbook = sim.state.texts[paths.bootstrap_dir(sim.state.variant) / paths.RUNBOOK]
    found = re.search(rf"vault kv put -cas=0 ([\w-]+)/kubernetes/{layout.name}/encryption", runbook)
    return found.group(1) if found else "secret"


def _section(sim: Simulation, title: str) -> str:
    runbook = sim.state.texts[paths.bootstrap_dir(sim.state.variant) / paths.RUNBOOK]
    found = re.search(rf"^### {re.escape(title)}\n(.*?)(?=^##)", runbook, flags=re.S | re.M)
    if found is None:
        raise sim.state.blocked("-", "RUNBOOK.md", f"no section {title!r}")
    return found.group(1)


def _substituted(text: str, subs: dict[str, str]) -> str:
    for placeholder, value in subs.items():
        text = text.replace(placeholder, value)
    return text


# --- the scenarios ---------------------------------------------------------------------------------


def hosts_rebuilt(sim: Simulation) -> None:
    """Per cluster, its last control-plane member and the last host of each worker pool, lost and
    rebuilt empty, one after the other."""
    for layout in sim.state.layout.clusters:
        cp = layout.control_plane
        lost, healthy = cp.hosts[-1], cp.hosts[0]
        _rebuild(
            sim, layout, cp, lost.name, replace_title(layout.name), {MEMBER: lost.name, HEALTHY: healthy.name}
        )
        for pool in layout.worker_pools:
            ring = [h.name for h in pool.hosts]
            host = pool.hosts[-1]
            subs = {
                NODE: host.name,
                ADDRESS: str(host.address),
                BEFORE: ring[-2] if len(ring) > 1 else ring[0],
            }
            _rebuild(sim, layout, pool, host.name, rebuild_title(layout.name, pool.name), subs)
        for old, new in sorted(layout.spec.replaced_members.items()):
            if any(h.name == new for h in cp.hosts):
                _move(sim, layout, old, new)


def _address(layout: ClusterLayout, name: str) -> str:
    return next(str(h.address) for p in layout.pools for h in p.hosts if h.name == name)


def _rebuild(
    sim: Simulation, layout: ClusterLayout, pool: PoolLayout, name: str, title: str, subs: dict[str, str]
) -> None:
    cluster = sim.state.clusters[layout.name]
    sim.state.step = f"day 2: {name} rebuilt ({title})"
    text = _substituted(_section(sim, title), subs)
    held = [w for w in cluster.workloads.values() if name in w.placed and w.running]
    cluster.scheduler.lose_node(name)
    etcd = sim.state.etcd.get(layout.name)
    if pool.is_control_plane and etcd is not None:
        etcd.members[name].started = False
    cluster.reconcile(sim.state.rails[cluster.name])
    host = RebuiltHost(name, pool.name, _address(layout, name))
    Session(sim, cluster, layout, host).run(text)
    cluster.reconcile(sim.state.rails[cluster.name])
    _judge(sim, layout, cluster, name, held)
    sim.state.result.timeline.append(Event(cluster.name, sim.state.step, (
        f"{name} rebuilt empty: baseline, {len(host.files)} host files, a new token"
        + (", the certificates uploaded again, etcd " + f"{len(sim.state.etcd[layout.name].members)} members" if pool.is_control_plane else "")
        + f"; Ready, {len(held)} workloads back"
    )))  # fmt: skip


def _judge(sim: Simulation, layout: ClusterLayout, cluster: Cluster, name: str, held: list[Any]) -> None:
    node = cluster.nodes.get(name)
    if node is None or not node.ready:
        raise sim.state.blocked(cluster.name, name, "never comes back Ready")
    if CORDONED in node.taints:
        raise Stop(
            Blocker(cluster.name, sim.state.step, name, "stays cordoned: the section never uncordons it")
        )
    etcd = sim.state.etcd[layout.name]
    members = sorted(h.name for h in layout.control_plane.hosts)
    if sorted(etcd.members) != members or not etcd.healthy():
        state = ", ".join(
            f"{n}{'' if m.started else ' (down)'}{' (learner)' if m.learner else ''}"
            for n, m in sorted(etcd.members.items())
        )
        raise Stop(
            Blocker(cluster.name, sim.state.step, "etcd", f"members {state}, not {', '.join(members)}")
        )
    down = [w for w in held if not w.running and not w.done]
    if down:
        raise Stop(
            Blocker(
                cluster.name,
                sim.state.step,
                down[0].owner,
                f"{down[0].template.ref} does not run again: {down[0].reason}",
            )
        )
    missing = [w for w in held if w.template.daemon and name not in w.placed]
    if missing:
        raise Stop(
            Blocker(
                cluster.name,
                sim.state.step,
                missing[0].owner,
                f"{missing[0].template.ref} has no pod on {name} again",
            )
        )


def _move(sim: Simulation, layout: ClusterLayout, old: str, new: str) -> None:
    """The state before the move was merged (the old member a node and in etcd, the new host not in
    the cluster), then the section."""
    cluster = sim.state.clusters[layout.name]
    sim.state.step = f"day 2: {move_title(layout.name, old, new)}"
    text = _section(sim, move_title(layout.name, old, new))
    etcd = sim.state.etcd[layout.name]
    template = cluster.nodes[new]
    address = next(
        (
            str(h.address)
            for c in sim.state.layout.clusters
            for p in c.pools
            for h in p.hosts
            if h.name == old
        ),
        old,
    )
    cluster.scheduler.remove_node(new)
    del etcd.members[new]
    cluster.nodes[old] = Node(
        old, template.pool, {**template.labels, "kubernetes.io/hostname": old}, list(template.taints),
        dict(template.capacity), dict(template.reserved), ready=True, address=address,
    )  # fmt: skip
    etcd.members[old] = Member(peer_url(address))
    sim.state.rails[cluster.name][old] = set()
    cluster.changes += 1
    cluster.reconcile(sim.state.rails[cluster.name])
    host = RebuiltHost(new, layout.control_plane.name, _address(layout, new))
    Session(sim, cluster, layout, host, leaving=old).run(text)
    cluster.reconcile(sim.state.rails[cluster.name])
    if old in cluster.nodes:
        raise sim.state.blocked(cluster.name, old, "stays a node of the cluster")
    _judge(sim, layout, cluster, new, [])
    sim.state.result.timeline.append(Event(cluster.name, sim.state.step, (
        f"{new} joined empty, {old} left; etcd {len(etcd.members)} members throughout the move or more"
    )))  # fmt: skip
