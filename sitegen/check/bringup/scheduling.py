"""Scheduling: where a workload's pods run, or why they do not. A node is a candidate when the pod's
node selector and affinity, hard topology-spread keys and tolerations admit it (kube.py); a pod fits
beside what is placed there (requests plus one pod). A DaemonSet takes a pod on every candidate; other
workloads go one pod at a time to the candidate with the largest free share of cpu, among those Ready
(any, for a pod on the host network) that the InterPodAffinity filter admits (kube-scheduler v1.35:
required pod affinity and anti-affinity terms against the pods placed so far, its own included; the
topology key's node label as the domain; the terms' namespaces and namespaceSelector). A workload runs
once its pods are placed; a Job completes at once and gives its nodes back. A node lost (NotReady)
and a drain release pods as the node lifecycle controller and `kubectl drain` do.

A pod's host ports (hostPort, or every container port on the host network) must be free on the node
(the NodePorts filter).

Not modelled: the scheduler's scoring beyond that spread (preferred affinity terms among it), the
balance a topology spread asks for, pods bound to nodes without the scheduler (static pods: their
labels are not matched), preemption by PriorityClass (Kueue's is kueue.py's), ephemeral storage, time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sitegen.check.bringup.kube import CORDONED, NOT_READY, Node, PodTemplate, add
from sitegen.check.bringup.objects import ClusterObjects, Key, Workload
from sitegen.check.labels import label_selector_matches
from sitegen.tree.fields import dig

# the CSI drivers whose volumes live on one node's drives (DirectPV, TopoLVM): a claim of a class they
# provision ties its pod to that node
NODE_LOCAL_PROVISIONERS = frozenset({"directpv-min-io", "topolvm.io"})


class Scheduler:
    """kube-scheduler and the workload controllers: where pods go, and what a lost, drained or deleted
    node does to them; `pod_blocker` (cluster.py's) says what a pod waits on besides nodes, Kueue's
    part holds the workloads it has not admitted."""

    def __init__(self, cluster: ClusterObjects, pod_blocker: Callable[[Workload], str | None]) -> None:
        self.cluster = cluster
        self.pod_blocker = pod_blocker  # what a pod waits on besides nodes (cluster.py)

    # ---- workloads -------------------------------------------------------------------------------
    def start(self, key: Key, w: Workload) -> None:
        if w.running or w.done or w.template.kind == "CronJob":
            return
        if w.admitted is False:
            return
        if w.admitted is None and dig(self.cluster.objects_body(w), "spec", "suspend"):
            w.reason = "suspended, and no Kueue manages its namespace to admit it"
            return
        if w.stranded_on is not None and w.stranded_on in self.cluster.nodes:
            w.stranded_on = None  # the host joined again under its name: the volume's node is back
        lost = [n for n in sorted(w.placed) if not self.cluster.nodes[n].reporting]
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
                self.finish(w)
            self.cluster.changes += 1
        elif why != w.reason:
            w.reason = why

    def _candidates(self, t: PodTemplate) -> tuple[list[Node], dict[str, int]]:
        refused: dict[str, int] = {}
        found = []
        for node in self.cluster.nodes.values():
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
        existing = _affinity_peers(t, self.cluster.workloads.values(), self.cluster.namespace_labels)
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
                apart = interpod_refusal(t, node, existing, self.cluster.nodes, self.cluster.namespace_labels)
                if apart:
                    return f"its pod for {node.name} stays Pending: {apart}"
            for node in nodes:
                if node.name not in w.placed:
                    add(node.used, requests)
                    _take_ports(node, t)
                    w.placed[node.name] = 1
            return None
        pending = t.replicas - sum(w.placed.values())
        while pending > 0:
            fitting = [
                n for n in nodes
                if (n.ready or t.host_network) and not n.fits(requests) and not _port_conflict(n, t)
            ]  # fmt: skip
            apart: dict[str, int] = {}
            usable = []
            for n in fitting:
                why = interpod_refusal(t, n, existing, self.cluster.nodes, self.cluster.namespace_labels)
                if why is None:
                    usable.append(n)
                else:
                    apart[why] = apart.get(why, 0) + 1
            if not usable:
                return self._unplaceable(t, nodes, refused, requests, apart)
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
        apart: dict[str, int],
    ) -> str:
        if not nodes:
            return f"no node takes it ({_summary(refused)})"
        ready = [n for n in nodes if n.ready or t.host_network]
        if not ready:
            return f"its {len(nodes)} candidate nodes are NotReady (no CNI yet)"
        if apart:  # nodes it fits on, refused by the InterPodAffinity filter
            return f"0/{len(ready)} candidate nodes are available: {_summary(apart)}"
        short = sorted({n.fits(requests) for n in ready if n.fits(requests)} - {None})
        if short:
            best = max(ready, key=lambda n: n.free(short[0]))
            return (
                f"{short[0]} does not fit: {amount(short[0], requests[short[0]])} per pod, at most "
                f"{_free(best, short[0])} on any of {len(ready)} candidate nodes"
            )
        return f"host ports taken on all {len(ready)} candidate nodes"

    def node_local(self, w: Workload) -> bool:
        """Whether a claim of the workload is of a class whose volumes stay on one node."""
        for name in w.claim_classes:
            found = self.cluster.find("StorageClass", "", name) if name else None
            if found is not None and found.body.get("provisioner") in NODE_LOCAL_PROVISIONERS:
                return True
        return False

    def lose_node(self, name: str) -> list[str]:
        """A node stops reporting (a GPU node rebooting for a driver upgrade, a host down for an hour):
        the node lifecycle controller taints it not-ready. A DaemonSet's pod there is unavailable and a
        StatefulSet's stays bound to it until it returns; a Deployment's pods are evicted (after the
        default 300 s toleration) and created again where they fit. Returns what it affected."""
        node = self.cluster.nodes[name]
        node.ready = node.reporting = False
        node.taints = [*node.taints, *(t for t in NOT_READY if t not in node.taints)]
        affected = []
        for w in self.cluster.workloads.values():
            if name not in w.placed or not w.running:
                continue
            if w.template.daemon or w.template.kind == "StatefulSet":
                w.running = False
                w.reason = f"its pod on {name} is not ready: the node is NotReady"
            else:
                self.release(w)
                w.reason = f"evicted from {name} (NotReady)"
            affected.append(w.template.ref)
            self.cluster.changes += 1
        return affected

    def nodes_changed(self) -> None:
        """A node came, turned Ready or took labels: each DaemonSet's controller looks again for the
        nodes it should have a pod on."""
        for w in self.cluster.workloads.values():
            if w.template.daemon and w.running:
                w.running = False
                self.cluster.changes += 1

    def drain(self, batch: list[str]) -> set[str]:
        """Cordon and evict as `kubectl drain --ignore-daemonsets` does; the workloads whose pods wait for
        a drained node (node-local claims) are returned. The caller reconciles."""
        waiting = set()
        for name in batch:
            node = self.cluster.nodes[name]
            node.taints = [*(t for t in node.taints if t != CORDONED), CORDONED]
        for w in self.cluster.workloads.values():
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
        self.cluster.nodes.pop(name)
        affected = []
        for w in self.cluster.workloads.values():
            if w.placed.pop(name, 0):
                w.running = False
                w.reason = "" if w.template.daemon else f"its pod on {name} went with the Node"
                if not w.template.daemon and self.node_local(w):
                    w.stranded_on = name
                affected.append(w.template.ref)
                self.cluster.changes += 1
        return affected

    def evict(self, w: Workload, why: str) -> None:
        """Its pods are deleted (a drain): the controller creates them again where they fit."""
        self.release(w)
        w.reason = why
        self.cluster.changes += 1

    def delete_pods_on(self, w: Workload, node: str, why: str) -> None:
        """Its pods on one node are deleted with what bound them there (an operator's instance whose
        claims are gone): the controller creates them again where they fit; the others stay."""
        pods = w.placed.pop(node, 0)
        requests = {**w.template.requests, "pods": 1}
        if node in self.cluster.nodes:
            add(self.cluster.nodes[node].used, {k: v * pods for k, v in requests.items()}, -1)
        w.running = False
        w.reason = why
        self.cluster.changes += 1

    def release(self, w: Workload) -> None:
        """Give back what the workload's pods took on their nodes."""
        requests = {**w.template.requests, "pods": 1}
        for node, pods in w.placed.items():
            add(self.cluster.nodes[node].used, {k: v * pods for k, v in requests.items()}, -1)
            held = self.cluster.nodes[node].host_ports
            for port in [p for p, ref in held.items() if ref == w.template.ref]:
                del held[port]
        w.placed.clear()
        w.running = False

    def finish(self, w: Workload) -> None:
        """A Job that ran completes and gives its nodes and quota back."""
        self.release(w)
        w.done = True
        self.cluster.log.append((w.owner, f"{w.template.ref} ran to completion"))
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


# ---- inter-pod affinity (kube-scheduler v1.35 plugins/interpodaffinity, required terms) --------------
AFFINITY_REFUSED = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_REFUSED = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_REFUSED = "node(s) didn't satisfy existing pods anti-affinity rules"
Placed = tuple[PodTemplate, Mapping[str, int]]  # a workload's pods: its template, node -> pods


def required_terms(t: PodTemplate, kind: str) -> list[Mapping[str, Any]]:
    """The required terms of the pod's `podAffinity` or `podAntiAffinity`."""
    found = dig(t.spec, "affinity", kind, "requiredDuringSchedulingIgnoredDuringExecution")
    return list(found or [])


def term_matches(
    term: Mapping[str, Any],
    owner: PodTemplate,
    pod: PodTemplate,
    namespace_labels: Callable[[str], Mapping[str, str]],
) -> bool:
    """Whether `pod` is one the term of `owner`'s pods selects: in the term's namespaces (`namespaces`
    and those `namespaceSelector` selects, `{}` all; neither: the owner's own), its labelSelector (null:
    none) with the owner's values of matchLabelKeys (In) and mismatchLabelKeys (NotIn) added, as the API
    server merges them at the pod's creation."""
    names, selector = term.get("namespaces") or [], term.get("namespaceSelector")
    if not names and selector is None:
        inside = pod.namespace == owner.namespace
    else:
        inside = pod.namespace in names or (
            selector is not None and label_selector_matches(selector, namespace_labels(pod.namespace))
        )
    labels = term.get("labelSelector")
    if not inside or labels is None:
        return False
    merged = [
        *(labels.get("matchExpressions") or []),
        *({"key": k, "operator": "In", "values": [owner.labels[k]]} for k in term.get("matchLabelKeys") or [] if k in owner.labels),
        *({"key": k, "operator": "NotIn", "values": [owner.labels[k]]} for k in term.get("mismatchLabelKeys") or [] if k in owner.labels),
    ]  # fmt: skip
    return label_selector_matches({**labels, "matchExpressions": merged}, pod.labels)


def _affinity_peers(
    t: PodTemplate, workloads: Iterable[Workload], namespace_labels: Callable[[str], Mapping[str, str]]
) -> list[Placed]:
    """The workloads whose placed pods the InterPodAffinity filter weighs for `t`'s pods: those its terms
    select, and those with anti-affinity terms (which may refuse `t`). Their `placed` stays live, so the
    pods of `t` placed one by one count for the next."""
    own = [*required_terms(t, "podAffinity"), *required_terms(t, "podAntiAffinity")]
    return [
        (w.template, w.placed)
        for w in workloads
        if w.template.kind != "CronJob" and (
            required_terms(w.template, "podAntiAffinity")
            or any(term_matches(term, t, w.template, namespace_labels) for term in own)
        )
    ]  # fmt: skip


def interpod_refusal(
    t: PodTemplate,
    node: Node,
    existing: list[Placed],
    nodes: Mapping[str, Node],
    namespace_labels: Callable[[str], Mapping[str, str]],
) -> str | None:
    """The InterPodAffinity filter for a pod of `t` on `node`, against the pods placed so far: its
    required affinity (the node has every term's topology key, and in each term's domain runs a pod that
    matches all terms; the first pod of a set that matches its own terms passes while no pod anywhere
    matches them), its required anti-affinity (no matching pod in the term's domain), and the existing
    pods' anti-affinity terms that match it (no such pod in their domain)."""

    def domain(name: str, key: str) -> str | None:
        found = nodes.get(name)
        return None if found is None else found.labels.get(key)

    affinity = required_terms(t, "podAffinity")
    if affinity:
        if any(term["topologyKey"] not in node.labels for term in affinity):
            return AFFINITY_REFUSED
        matching = [
            placed for owner, placed in existing
            if any(placed.values()) and all(term_matches(term, t, owner, namespace_labels) for term in affinity)
        ]  # fmt: skip
        satisfied = all(
            any(domain(n, term["topologyKey"]) == node.labels[term["topologyKey"]] for placed in matching for n in placed)
            for term in affinity
        )  # fmt: skip
        first = not matching and all(term_matches(term, t, t, namespace_labels) for term in affinity)
        if not (satisfied or first):
            return AFFINITY_REFUSED
    for term in required_terms(t, "podAntiAffinity"):
        key = term["topologyKey"]
        if key in node.labels and any(
            domain(n, key) == node.labels[key]
            for owner, placed in existing if term_matches(term, t, owner, namespace_labels)
            for n, pods in placed.items() if pods
        ):  # fmt: skip
            return ANTI_AFFINITY_REFUSED
    for owner, placed in existing:
        for term in required_terms(owner, "podAntiAffinity"):
            key = term["topologyKey"]
            if (
                key in node.labels
                and term_matches(term, owner, t, namespace_labels)
                and any(pods and domain(n, key) == node.labels[key] for n, pods in placed.items())
            ):
                return EXISTING_ANTI_AFFINITY_REFUSED
    return None
