"""The reviewed exceptions the policy rules allow, derived from the components' declarations.

Nothing here is a hand list of components: a component that needs a privileged namespace or runs a
node agent says so in its own module, with the reason, and it shows up here (and in `sitegen rules`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from constructs.kube_vip import NAMESPACE as KUBE_VIP_NAMESPACE
from constructs.kube_vip import POD_NAME as KUBE_VIP_POD
from sitegen.components.base import NodeAgent
from sitegen.components.privilege import Reviewed
from sitegen.compose.apps import variant_apps
from sitegen.model import Site, resolve

SYSTEM_NAMESPACE = "kube-system"


@dataclass(frozen=True)
class AllowLists:
    # (variant, cluster) -> `Kind/namespace/name` (or `...:$.path` of a CR placement block) -> agent
    agents: Mapping[tuple[str, str], Mapping[str, NodeAgent]]
    privileged_namespaces: Mapping[str, str]  # namespace -> why
    privileged_workloads: Mapping[str, str]  # `Kind/namespace/name` -> why
    # (variant, cluster) -> `Kind/namespace/name` -> why nodes need it before they turn Ready
    bootstrap_critical: Mapping[tuple[str, str], Mapping[str, str]] = field(default_factory=dict)
    # (variant, cluster) -> `Kind/namespace/name` -> how it takes a renewed certificate by itself
    reloads_certificates: Mapping[tuple[str, str], Mapping[str, str]] = field(default_factory=dict)
    # `<namespace>/<account>: <capability>` -> why, for accounts on nodes that run tenant code
    node_rbac: Mapping[str, str] = field(default_factory=dict)
    # privileged namespaces that hold controllers (pods without host access) beside the agents -> why
    privileged_controllers: Mapping[str, str] = field(default_factory=dict)
    # `<namespace>/<account>` -> the primitives of components/privilege.py it may hold, and why
    powers: Mapping[str, Reviewed] = field(default_factory=dict)

    def agents_of(self, variant: str, cluster: str | None) -> Mapping[str, NodeAgent]:
        return self.agents.get((variant, cluster or ""), {})

    def lines(self) -> list[str]:
        """The allow-lists as text, one entry a line, sorted: what `sitegen rules` prints."""
        out = ["privileged namespaces:"]
        out += [f"  {ns}: {why}" for ns, why in sorted(self.privileged_namespaces.items())]
        out.append("controllers in privileged namespaces:")
        out += [f"  {ns}: {why}" for ns, why in sorted(self.privileged_controllers.items())]
        out.append("privileged workloads:")
        out += [f"  {key}: {why}" for key, why in sorted(self.privileged_workloads.items())]
        out.append("node agents:")
        every: dict[str, NodeAgent] = {}
        for agents in self.agents.values():
            for key, agent in agents.items():
                every.setdefault(key, agent)
        for key, agent in sorted(every.items()):
            out.append(f"  {key} -> {', '.join(sorted(agent.pools))}: {agent.why}")
        out.append("bootstrap-critical (schedule on NotReady nodes):")
        critical = {
            k: why for per_cluster in self.bootstrap_critical.values() for k, why in per_cluster.items()
        }
        out += [f"  {key}: {why}" for key, why in sorted(critical.items())]
        out.append("certificates renewed under running servers, taken by the servers themselves:")
        reloads = {
            k: why for per_cluster in self.reloads_certificates.values() for k, why in per_cluster.items()
        }
        out += [f"  {key}: {why}" for key, why in sorted(reloads.items())]
        out.append("node identities that reach the cluster (tenant-reachable nodes):")
        out += [f"  {key}: {why}" for key, why in sorted(self.node_rbac.items())]
        out.append("accounts with power beyond their namespace:")
        out += [
            f"  {account}: {'; '.join(r.primitives)}: {r.why}" for account, r in sorted(self.powers.items())
        ]
        return out


def allow_lists(site: Site) -> AllowLists:
    agents: dict[tuple[str, str], dict[str, NodeAgent]] = {}
    critical: dict[tuple[str, str], dict[str, str]] = {}
    reloads: dict[tuple[str, str], dict[str, str]] = {}
    node_rbac: dict[str, str] = {}
    powers: dict[str, Reviewed] = {}
    workloads = {
        f"Pod/{KUBE_VIP_NAMESPACE}/{KUBE_VIP_POD}": "ARP and IPVS for the API VIP need host networking "
        "and NET_ADMIN/NET_RAW"
    }
    privileged = {
        SYSTEM_NAMESPACE: "static control-plane pods (etcd, API server, kube-vip) and the CNI need host access"
    }
    controllers = {
        SYSTEM_NAMESPACE: "exempt from Pod Security whatever its labels; only the apps that ship workloads "
        "there may put any (sitegen-kube-system-workloads)"
    }
    for variant in site.variants:
        apps = variant_apps(site, resolve(site, variant))
        for ctx, component in apps.members():
            agents.setdefault((variant, ctx.cluster.name), {}).update(component.node_agents(ctx))
            critical.setdefault((variant, ctx.cluster.name), {}).update(component.bootstrap_critical(ctx))
            reloads.setdefault((variant, ctx.cluster.name), {}).update(component.reloads_certificates(ctx))
            node_rbac.update(component.node_rbac(ctx))
            powers.update(component.powers(ctx))
            workloads.update(component.privileged_workloads(ctx))
            if component.security is not None and component.security.level == "privileged":
                privileged.setdefault(component.namespace, component.security.why)
                if component.security.controllers:
                    controllers.setdefault(component.namespace, component.security.controllers)
    return AllowLists(
        agents=agents,
        privileged_namespaces=privileged,
        privileged_controllers=controllers,
        privileged_workloads=workloads,
        bootstrap_critical=critical,
        reloads_certificates=reloads,
        node_rbac=node_rbac,
        powers=powers,
    )
