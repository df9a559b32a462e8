"""Nodes once joined: Ready once the CNI runs on them; the devices the operators' plugins
advertise (NVIDIA GPUs where Node Feature Discovery found them and the ClusterPolicy's tolerations
admit, RDMA shared devices on the interfaces the fabric preparation named); the runtime classes the GPU
Operator creates; kubelet serving certificates (serverTLSBootstrap) and the approvers of their CSRs,
and the clients that verify kubelets against them; and the addresses of Cilium's LB IPAM.

Not modelled: node conditions other than Ready (pressure, disk), a lost node's return, devices other
than GPUs and RDMA shared devices, kubelet certificates other than serving ones.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache
from ipaddress import ip_address, ip_network
from typing import Any

from constructs.objects import pod_account
from sitegen.check.bringup.kube import (
    DAEMONSET_TOLERATIONS,
    NOT_READY,
    Node,
    Taint,
    node_affinity_matches,
    tolerates,
    untolerated,
)
from sitegen.check.bringup.objects import ClusterObjects, Workload
from sitegen.check.bringup.scheduling import Scheduler
from sitegen.check.rbac import allows, granted_names
from sitegen.tree.fields import dig

KUBELET_SERVING = "kubernetes.io/kubelet-serving"
NFD_WORKER = "nfd-worker"  # the NFD worker's binary, its container's command
# metrics-server's flags for how it reaches kubelets (DirectPV's --kubelet-dir-path is no client's)
KUBELET_CLIENT_FLAGS = (
    "--kubelet-preferred-address-types",
    "--kubelet-use-node-status-port",
    "--kubelet-port",
)


class NodeAgents:
    """The node agents' work: readiness once the CNI runs, devices the plugins advertise, runtime
    classes, kubelet serving certificates and who approves them, LB IPAM addresses."""

    def __init__(self, cluster: ClusterObjects, scheduler: Scheduler) -> None:
        self.cluster = cluster
        self.scheduler = scheduler
        self.server_tls_bootstrap = False  # kubelets ask the cluster CA for serving certificates
        self.devices_changed: set[str] = set()  # what the controllers did that an operator would want to see

    # ---- nodes and devices -----------------------------------------------------------------------
    def runtime_class_exists(self, name: str) -> bool:
        if self.cluster.find("RuntimeClass", "", name):
            return True
        # the GPU Operator creates its runtime classes once its ClusterPolicy is reconciled
        return name.startswith("nvidia") and self._cluster_policy() is not None

    def _cluster_policy(self) -> Mapping[str, Any] | None:
        found = self.cluster.of_kind("ClusterPolicy")
        if not found or not self.cluster.controller_running("nvidia.com", "ClusterPolicy"):
            return None
        return found[0][1].body

    def _node_runs_command(self, node: Node, command: str) -> bool:
        """A pod of a DaemonSet whose container runs `command` runs on the node (whichever app ships it)."""
        return node.reporting and any(
            node.name in w.placed
            and w.template.daemon
            and any((c.get("command") or [""])[0] == command for c in w.template.spec.get("containers") or [])
            for w in self.cluster.workloads.values()
        )

    def refresh_devices(self, rails: Mapping[str, set[str]]) -> None:
        """Extended resources appear where the device plugins the operators deploy can run."""
        policy = self._cluster_policy()
        # the operator places its device plugin where Node Feature Discovery labelled an NVIDIA device:
        # the NFD worker on the node writes its NodeFeature object, from which the master labels the node
        master = self.cluster.controller_running("nfd.k8s-sigs.io", "NodeFeature")
        rdma = self._rdma_policy()
        for node in self.cluster.nodes.values():
            if policy is not None and node.capacity.get("hardware/gpu"):
                spec = policy["spec"].get("daemonsets") or {}
                tolerated = not untolerated(spec.get("tolerations") or [], _operator_daemon_taints(node))
                labelled = master and self._node_runs_command(node, NFD_WORKER)
                self._set(
                    node, "nvidia.com/gpu", node.capacity["hardware/gpu"] if tolerated and labelled else 0
                )
            if rdma is not None:
                self._rdma(node, rails.get(node.name, set()), rdma)

    def _rdma_policy(self) -> Mapping[str, Any] | None:
        """The NicClusterPolicy's spec, once the Network Operator that acts on it runs."""
        cluster_policies = self.cluster.of_kind("NicClusterPolicy")
        if not cluster_policies or not self.cluster.controller_running("mellanox.com", "NicClusterPolicy"):
            return None
        return cluster_policies[0][1].body["spec"]  # type: ignore[no-any-return]

    def _rdma(self, node: Node, named_interfaces: set[str], cp: Mapping[str, Any]) -> None:
        taints = _operator_daemon_taints(node)
        admitted = node_affinity_matches(
            {"affinity": {"nodeAffinity": cp.get("nodeAffinity") or {}}}, node.labels
        )
        admitted = admitted and not untolerated(cp.get("tolerations") or [], taints)
        for _, applied in self.cluster.of_kind("NicNodePolicy"):
            spec = applied.body["spec"]
            if not all(node.labels.get(k) == str(v) for k, v in (spec.get("nodeSelector") or {}).items()):
                continue
            config = _device_plugin_config(dig(spec, "rdmaSharedDevicePlugin", "config") or "{}")
            for entry in config.get("configList") or []:
                names = set(dig(entry, "selectors", "ifNames") or [])
                count = int(entry.get("rdmaHcaMax", 0)) if admitted and names <= named_interfaces else 0
                self._set(node, f"rdma/{entry['resourceName']}", count)

    def _set(self, node: Node, resource: str, amount: int) -> None:
        if node.capacity.get(resource, 0) != amount:
            node.capacity[resource] = amount
            self.devices_changed.add(resource)
            self.cluster.changes += 1

    def device_report(self) -> list[str]:
        out = []
        for resource in sorted(self.devices_changed):
            nodes = [n for n in self.cluster.nodes.values() if n.capacity.get(resource)]
            per = sorted({n.capacity[resource] for n in nodes})
            out.append(f"{resource}: {'/'.join(map(str, per)) or 0} on {len(nodes)} nodes")
        self.devices_changed.clear()
        return out

    def refresh_readiness(self) -> None:
        """A node turns Ready once the CNI's agents run on it and its operator runs (it hands out the
        pod CIDRs). Both are on the host network: nothing else of the CNI can run before."""
        host = [w for w in self.cluster.owner_apps(self.cluster.cni_app) if w.template.host_network]
        operator_up = any(w.template.kind == "Deployment" for w in host) and all(
            w.running for w in host if w.template.kind == "Deployment"
        )
        agents = [w for w in host if w.template.kind == "DaemonSet"]
        for node in self.cluster.nodes.values():
            ready = operator_up and bool(agents) and all(w.running and node.name in w.placed for w in agents)
            if ready and node.reporting and not node.ready:
                node.ready = True
                node.taints = [t for t in node.taints if t not in NOT_READY]
                self.scheduler.nodes_changed()
                self.cluster.changes += 1

    # ---- the CNI's load-balancer addresses -------------------------------------------------------
    def load_balancer_blocker(self) -> str | None:
        """Cilium's LB IPAM hands out the address: it needs a pool and the CNI running."""
        if not self.cluster.of_kind("CiliumLoadBalancerIPPool"):
            return "no CiliumLoadBalancerIPPool gives it an address"
        if not self.cluster.app_running(self.cluster.cni_app):
            return "Cilium is not running"
        return None

    # ---- kubelet serving certificates -----------------------------------------------------------
    def approvers(self) -> list[Workload]:
        """Running workloads whose service account may approve kubelet-serving requests by name (an
        operator that may approve any signer approves no kubelet; one that may also create CSRs, like
        AIStor's, signs its own TLS through kubelet-serving and approves only its own requests)."""
        rbac = self.cluster.rbac()
        found = []
        for w in self.cluster.workloads.values():
            if not w.running:
                continue
            rules = rbac.rules_of((w.template.namespace, pod_account(w.template.spec)))
            if granted_names(rules, ("approve",), "certificates.k8s.io", "signers") & {
                KUBELET_SERVING
            } and not allows(rules, ("create",), "certificates.k8s.io", "certificatesigningrequests"):
                found.append(w)
        return found

    def refresh_serving_certificates(self) -> None:
        """kube-controller-manager signs a kubelet's serving CSR once something approves it: an
        approver whose checks (node name pattern, IP prefixes of kubelet-csr-approver) admit the node."""
        waiting = [n for n in self.cluster.nodes.values() if not n.serving_certificate]
        if not waiting or not self.server_tls_bootstrap:
            return
        for approver in self.approvers():
            env = {
                e["name"]: str(e.get("value", ""))
                for c in approver.template.containers()
                for e in c.get("env") or []
            }
            names = re.compile(env.get("PROVIDER_REGEX", ".*"))
            prefixes = [
                ip_network(p.strip()) for p in env.get("PROVIDER_IP_PREFIXES", "0.0.0.0/0").split(",")
            ]
            approved = [
                n for n in waiting
                if names.search(n.name) and n.address and any(ip_address(n.address) in p for p in prefixes)
            ]  # fmt: skip
            for node in approved:
                node.serving_certificate = True
            if approved:
                self.cluster.changes += 1
                self.cluster.log.append(
                    (approver.owner, f"approved the serving certificates of {len(approved)} kubelet(s)")
                )
            waiting = [n for n in waiting if not n.serving_certificate]

    def kubelet_client_blocker(self, w: Workload) -> str | None:
        """A client of the kubelets that verifies them (metrics-server without --kubelet-insecure-tls)
        is not Ready while a kubelet serves no certificate of the cluster CA."""
        args = [
            str(a)
            for c in w.template.containers()
            for a in [*(c.get("args") or []), *(c.get("command") or [])]
        ]
        if not any(a.startswith(KUBELET_CLIENT_FLAGS) for a in args) or "--kubelet-insecure-tls" in args:
            return None
        waiting = sorted(n.name for n in self.cluster.nodes.values() if not n.serving_certificate)
        if not waiting:
            return None
        if not self.server_tls_bootstrap:
            return "cannot verify the kubelets: they serve self-signed certificates (no serverTLSBootstrap)"
        return (
            f"cannot verify {len(waiting)} kubelet(s) ({waiting[0]}, ...): their serving certificate "
            f"requests wait for an approver of {KUBELET_SERVING}"
        )


@cache
def _device_plugin_config(text: str) -> dict[str, Any]:
    return json.loads(text)  # type: ignore[no-any-return]


def _operator_daemon_taints(node: Node) -> list[Taint]:
    """The taints an operator's DaemonSet pods must tolerate themselves: not the node's not-ready
    ones, nor what the DaemonSet controller tolerates for every DaemonSet (a cordon among them)."""
    return [t for t in node.taints if t not in NOT_READY and not tolerates(DAEMONSET_TOLERATIONS, t)]
