"""Scheduling: where a workload's pods run, or why they do not. A node is a candidate when the pod's
node selector and affinity, hard topology-spread keys and tolerations admit it (kube.py); a pod fits
beside what is placed there (requests plus one pod). A DaemonSet takes a pod on every candidate; other
workloads go one pod at a time to the candidate with the largest free share of cpu, among those Ready
(any, for a pod on the host network) and, under a required anti-affinity on the hostname, without one
of its pods yet. A workload runs once its pods are placed; a Job completes at once and gives its nodes
back. A node lost (NotReady) and a drain release pods as the node lifecycle controller and `kubectl
drain` do.

A pod's host ports (hostPort, or every container port on the host network) must be free on the node
(the NodePorts filter).

Not modelled: the scheduler's scoring beyond that spread, pod affinity to other workloads, the balance a
topology spread asks for, preemption by PriorityClass (Kueue's is kueue.py's), ephemeral storage, time.
"""

from __future__ import annotations

from collections.abc import Mapping

from sitegen.check.bringup.kube import CORDONED, NOT_READY, Node, PodTemplate, add
from sitegen.check.bringup.objects import ClusterObjects, Key, Workload

# the CSI drivers whose volumes live on one node's drives (DirectPV, TopoLVM): a claim of a class they
# provision ties its pod to that node
NODE_LOCAL_PROVISIONERS = frozenset({"directpv-min-io", "topolvm.io"})


class Scheduling(ClusterObjects):
    """Mixed into `Cluster` (cluster.py), whose `pod_blocker` says what a pod waits on besides nodes, and
    whose Kueue part holds the workloads it has not admitted."""

    # ---- workloads -------------------------------------------------------------------------------
    def _start(self, key: Key, w: Workload) -> None:
        if w.running or w.done or w.template.kind == "CronJob":
            return
        if w.admitted is False:
            return
        if w.admitted is None and (self.objects_body(w).get("spec") or {}).get("suspend"):
            w.reason = "suspended, and no Kueue manages its namespace to admit it"
            return
        if w.stranded_on is not None and w.stranded_on in self.nodes:
            w.stranded_on = None  # the host joined again under its name: the volume's node is back
        lost = [n for n in sorted(w.placed) if not self.nodes[n].reporting]
        if w.stranded_on is not None:
            why: str | None = (
                f"its claim's volume is on {w.stranded_on}, whose Node is deleted: delete the claim"
            )
        elif lost:
            why = f"its pod on {lost[0]} is not ready: the node is NotReady"
        else:
            why = self.pod_blocker(w)
        if why is None:
            why = self._place(w)
        # waitForPodsReady counts an admitted workload's pods not Ready, whatever keeps them (recovery
        # of a running one that lost a node aside)
        w.unplaced = why is not None and bool(w.admitted) and not lost
        if why is None:
            w.running = True
            w.reason = ""
            if w.template.kind == "Job":
                self._finish(w)
            self.changes += 1
        elif why != w.reason:
            w.reason = why

    def _candidates(self, t: PodTemplate) -> tuple[list[Node], dict[str, int]]:
        refused: dict[str, int] = {}
        found = []
        for node in self.nodes.values():
            why = t.why_not(node)
            if why is None:
                found.append(node)
            else:
                refused[why] = refused.get(why, 0) + 1
        return found, refused

    def _place(self, w: Workload) -> str | None:
        t = w.template
        nodes, refused = self._candidates(t)
        requests = {**t.requests, "pods": 1}
        if t.daemon:
            if not nodes:
                return f"no node takes it ({_summary(refused)})"
            for node in nodes:
                if node.name in w.placed:
                    continue
                taken = _port_conflict(node, t)
                if taken:
                    return f"{taken} on {node.name}"
                short = node.fits(requests)
                if short:
                    return f"{short} does not fit on {node.name} ({_free(node, short)})"
                if not (node.ready or t.host_network):
                    return f"{node.name} is NotReady (no CNI yet) and the pod is not on the host network"
            for node in nodes:
                if node.name not in w.placed:
                    add(node.used, requests)
                    _take_ports(node, t)
                    w.placed[node.name] = 1
            return None
        pending = t.replicas - sum(w.placed.values())
        while pending > 0:
            usable = [
                n for n in nodes
                if (n.ready or t.host_network) and not n.fits(requests)
                and not (t.one_per_node and n.name in w.placed)
                and not _port_conflict(n, t)
            ]  # fmt: skip
            if not usable:
                return self._unplaceable(t, nodes, refused, requests, w)
            node = max(usable, key=lambda n: (_share(n), n.name))
            add(node.used, requests)
            _take_ports(node, t)
            w.placed[node.name] = w.placed.get(node.name, 0) + 1
            pending -= 1
        return None

    def _unplaceable(
        self,
        t: PodTemplate,
        nodes: list[Node],
        refused: dict[str, int],
        requests: dict[str, int],
        w: Workload,
    ) -> str:
        if not nodes:
            return f"no node takes it ({_summary(refused)})"
        ready = [n for n in nodes if n.ready or t.host_network]
        if not ready:
            return f"its {len(nodes)} candidate nodes are NotReady (no CNI yet)"
        short = sorted({n.fits(requests) for n in ready if n.fits(requests)} - {None})
        if short:
            best = max(ready, key=lambda n: n.free(short[0]))
            return (
                f"{short[0]} does not fit: {amount(short[0], requests[short[0]])} per pod, at most "
                f"{_free(best, short[0])} on any of {len(ready)} candidate nodes"
            )
        return f"one pod per node and only {len(ready)} candidate nodes"

    def node_local(self, w: Workload) -> bool:
        """Whether a claim of the workload is of a class whose volumes stay on one node."""
        for name in w.claim_classes:
            found = self.find("StorageClass", "", name) if name else None
            if found is not None and found.body.get("provisioner") in NODE_LOCAL_PROVISIONERS:
                return True
        return False

    def lose_node(self, name: str) -> list[str]:
        """A node stops reporting (a GPU node rebooting for a driver upgrade, a host down for an hour):
        the node lifecycle controller taints it not-ready. A DaemonSet's pod there is unavailable and a
        StatefulSet's stays bound to it until it returns; a Deployment's pods are evicted (after the
        default 300 s toleration) and created again where they fit. Returns what it affected."""
        node = self.nodes[name]
        node.ready = node.reporting = False
        node.taints = [*node.taints, *(t for t in NOT_READY if t not in node.taints)]
        affected = []
        for w in self.workloads.values():
            if name not in w.placed or not w.running:
                continue
            if w.template.daemon or w.template.kind == "StatefulSet":
                w.running = False
                w.reason = f"its pod on {name} is not ready: the node is NotReady"
            else:
                self._release(w)
                w.reason = f"evicted from {name} (NotReady)"
            affected.append(w.template.ref)
            self.changes += 1
        return affected

    def nodes_changed(self) -> None:
        """A node came, turned Ready or took labels: each DaemonSet's controller looks again for the
        nodes it should have a pod on."""
        for w in self.workloads.values():
            if w.template.daemon and w.running:
                w.running = False
                self.changes += 1

    def drain(self, batch: list[str]) -> set[str]:
        """Cordon and evict as `kubectl drain --ignore-daemonsets` does; the workloads whose pods wait for
        a drained node (node-local claims) are returned. The caller reconciles."""
        waiting = set()
        for name in batch:
            node = self.nodes[name]
            node.taints = [*(t for t in node.taints if t != CORDONED), CORDONED]
        for w in self.workloads.values():
            if w.template.daemon or w.done or not set(batch) & set(w.placed):
                continue
            self.evict(w, f"evicted by the drain of {', '.join(sorted(set(batch) & set(w.placed)))}")
            if self.node_local(w):
                waiting.add(w.template.ref)
                w.reason = "waits for its node (its volume is on it)"
        return waiting

    def remove_node(self, name: str) -> list[str]:
        """`kubectl delete node`: the pod garbage collector deletes the pods bound to it. A DaemonSet is
        complete on the nodes left; another workload's controller makes the pod again where it fits,
        but one whose claim's volume is node-local waits for that node (the volume's node affinity)
        until the claim is deleted or a node of that name joins again. Returns what it affected."""
        self.nodes.pop(name)
        affected = []
        for w in self.workloads.values():
            if w.placed.pop(name, 0):
                w.running = False
                w.reason = "" if w.template.daemon else f"its pod on {name} went with the Node"
                if not w.template.daemon and self.node_local(w):
                    w.stranded_on = name
                affected.append(w.template.ref)
                self.changes += 1
        return affected

    def evict(self, w: Workload, why: str) -> None:
        """Its pods are deleted (a drain): the controller creates them again where they fit."""
        self._release(w)
        w.reason = why
        self.changes += 1

    def delete_pods_on(self, w: Workload, node: str, why: str) -> None:
        """Its pods on one node are deleted with what bound them there (an operator's instance whose
        claims are gone): the controller creates them again where they fit; the others stay."""
        pods = w.placed.pop(node, 0)
        requests = {**w.template.requests, "pods": 1}
        if node in self.nodes:
            add(self.nodes[node].used, {k: v * pods for k, v in requests.items()}, -1)
        w.running = False
        w.reason = why
        self.changes += 1

    def _release(self, w: Workload) -> None:
        """Give back what the workload's pods took on their nodes."""
        requests = {**w.template.requests, "pods": 1}
        for node, pods in w.placed.items():
            add(self.nodes[node].used, {k: v * pods for k, v in requests.items()}, -1)
            held = self.nodes[node].host_ports
            for port in [p for p, ref in held.items() if ref == w.template.ref]:
                del held[port]
        w.placed.clear()
        w.running = False

    def _finish(self, w: Workload) -> None:
        """A Job that ran completes and gives its nodes and quota back."""
        self._release(w)
        w.done = True
        self.log.append((w.owner, f"{w.template.ref} ran to completion"))
        w.admitted = None if w.admitted is None else False


def _port_conflict(node: Node, t: PodTemplate) -> str | None:
    """The scheduler's NodePorts filter: a host port another workload's pod holds on the node."""
    for protocol, port in sorted(t.host_ports):
        other = node.host_ports.get((protocol, port))
        if other is not None and other != t.ref:
            return f"host port {protocol}/{port} is taken by {other}"
    return None


def _take_ports(node: Node, t: PodTemplate) -> None:
    for port in t.host_ports:
        node.host_ports[port] = t.ref


def usage(used: Mapping[str, int], need: Mapping[str, int], quota: Mapping[str, int]) -> str:
    """The resources a quota is short of, as a blocker says it (Kueue's and ResourceQuotas')."""
    short = [r for r in sorted(need) if used.get(r, 0) + need[r] > quota[r]]
    return ", ".join(
        f"{r}: {amount(r, used.get(r, 0))} in use + {amount(r, need[r])} asked > {amount(r, quota[r])}"
        for r in short
    )


def _share(node: Node) -> float:
    alloc = node.allocatable("cpu") or 1
    return node.free("cpu") / alloc


def amount(resource: str, value: int) -> str:
    """An amount of a resource as people read it: cores, GB, or a count."""
    if resource == "cpu":
        return f"{value / 1000:g} cores"
    if resource in ("memory", "ephemeral-storage"):
        return f"{value / 1e9:.1f} GB"
    return str(value)


def _free(node: Node, resource: str) -> str:
    return f"{amount(resource, max(node.free(resource), 0))} free of {amount(resource, node.allocatable(resource))}"


def _summary(refused: Mapping[str, int]) -> str:
    return (
        "; ".join(f"{n} nodes: {why}" for why, n in sorted(refused.items(), key=lambda kv: -kv[1]))
        or "no nodes"
    )
