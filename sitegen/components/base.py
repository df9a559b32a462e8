"""What a component is: one Argo CD Application of one cluster, and everything the generator knows of it.

A component module declares, in one place: its app (project, layer, namespace, Pod Security level and
why), when it applies to a cluster, the chart and image pins it needs, what it must come after, its
typed Helm values or the objects it renders, the names other components use, and its policy
declarations (node agents and the pools they reach, S3 buckets it consumes (s3.py), the traffic it
starts (flows.py), web routes it serves).
The registry lists the components; everything else (apps per cluster, sync order, projects, required
pins, allow-lists, the runbook's lists) is derived from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING, ClassVar, Literal

from constructs import Construct
from constructs.edge import Route
from constructs.namespaces import PsaLevel, Quota
from constructs.secrets import VaultSecret
from constructs.site_watches import Watch
from sitegen.components.operands import Operand
from sitegen.components.operator_steps import OperatorStep
from sitegen.components.ownership import JobSecret, WrittenField
from sitegen.components.patches import JsonPatch, ObjectPatch
from sitegen.components.runtime_needs import RuntimeNeeds
from sitegen.model import Placement

if TYPE_CHECKING:
    from sitegen.components.context import ClusterContext, ClusterScope
    from sitegen.components.flows import Flow, RemoteAccess
    from sitegen.components.privilege import Reviewed, RoleReview
    from sitegen.components.s3 import S3Access
    from sitegen.components.values import Values


class Layer(IntEnum):
    """Argo CD has no dependencies between Applications; layers and declared dependencies order them
    by sync wave (10 x layer + depth among the layer's dependencies)."""

    FOUNDATION = 0  # namespaces, node labels, CNI, CRDs and operators, Argo CD itself
    RESOURCES = 1  # custom resources of those operators
    SERVICES = 2  # cluster services
    TENANTS = 3  # workloads of the site's users


@dataclass(frozen=True)
class Project:
    """An Argo CD AppProject: a folder of components/ is one project."""

    name: str
    description: str


@dataclass(frozen=True)
class NamespaceSecurity:
    """The Pod Security level a component's namespace enforces, and why it needs that level."""

    level: PsaLevel
    why: str
    # privileged only: why pods that need no host access (controllers) run there too, when they must;
    # empty: the namespace holds node agents alone (PSA-004)
    controllers: str = ""


EVERY_POOL = "*"


@dataclass(frozen=True)
class NodeAgent:
    """A workload that must run on the nodes of several pools: it tolerates exactly their taints."""

    pools: frozenset[str]  # pool names it must reach; EVERY_POOL = every pool of the cluster
    why: str
    # Where the chart places the agent by itself, when its values have no node selector.
    implied_selector: Mapping[str, str] = field(default_factory=dict)


DataClass = Literal["state", "cache", "metrics", "logs"]


@dataclass(frozen=True)
class State:
    """What one workload of a component keeps on its volumes, of which class (`state`: it has no other
    source; a `cache` is rebuilt from one; `metrics` and `logs` age out), and how it comes back once
    they are lost: its copies (each with its place and how far behind it is), or, with none, why none
    is needed. `sitegen plan` lists them; DATA-001 refuses a volume in the tree that no component
    states, DATA-002 state without a copy."""

    workload: str  # the StatefulSet, claim or custom resource (Cluster, Prometheus, ObjectStore) named
    holds: str
    data: DataClass
    copies: tuple[str, ...] = ()
    without_copy: str = ""

    def __post_init__(self) -> None:
        if bool(self.copies) == bool(self.without_copy):
            raise ValueError(f"{self.workload}: a state has copies or says why it has none, not both")


@dataclass(frozen=True)
class VaultSecretSpec:
    """A Secret a component's software reads, written from the vault key `key` by External Secrets:
    `properties` become variables of `template` (the Secret's data) or, without one, keys of their own."""

    name: str
    namespace: str
    key: str
    properties: tuple[str, ...]
    template: Mapping[str, str] | None = None

    def render(self, scope: Construct, store: str) -> None:
        VaultSecret(
            scope, f"{self.namespace}-{self.name}", name=self.name, namespace=self.namespace, store=store,
            key=self.key, properties=list(self.properties),
            template=dict(self.template) if self.template is not None else None,
        )  # fmt: skip


@dataclass(frozen=True)
class CsiAccess:
    """The CSI access modes a storage driver's CreateVolume takes (read from the driver's source), and
    the message it fails the others with; the bring-up refuses a claim its driver would refuse."""

    driver: str  # the provisioner name StorageClasses give
    single_node_multi_writer: bool  # advertised: ReadWriteOnce maps to SINGLE_NODE_MULTI_WRITER
    modes: frozenset[str]
    refusal: str  # format: {mode} the CSI mode, {volume} the volume's name


def placement_patch(kind: str, name: str, placement: Placement, *, why: str) -> ObjectPatch:
    """Place the pods of a workload the chart gives no placement values for."""
    spec = "/spec/template/spec"
    return ObjectPatch(
        kind,
        name,
        why,
        (
            JsonPatch("add", f"{spec}/nodeSelector", dict(placement.node_selector)),
            JsonPatch("add", f"{spec}/tolerations", [dict(t) for t in placement.tolerations]),
        ),
    )


class Component:
    """Base of every component. Subclasses set the class attributes and override what they need.

    An instance is the component in one cluster; most components have one instance where they apply,
    a family (the tenants) has one per member.
    """

    name: str  # the Argo CD app name (the chart key where it can be)
    project: ClassVar[Project]
    layer: ClassVar[Layer]
    # Destination namespace; cluster-scoped-only apps use kube-system, which always exists.
    namespace: str = "kube-system"
    # The namespace this component creates, with its Pod Security level; None: not ours to create.
    security: ClassVar[NamespaceSecurity | None] = None
    # Its namespace's batch workloads go through Kueue (the namespace opts in; no other does).
    queued: ClassVar[bool] = False

    # Its pods call the API server (controllers, operators, agents): the network policy lets them.
    talks_to_api: ClassVar[bool] = True
    # Reached from outside the cluster (and from the nodes: image pulls, S3 from hosts) through a
    # LoadBalancer address: the Gateway's proxies, the AIStor ObjectStore.
    exposed: ClassVar[bool] = False

    def flows(self, ctx: ClusterContext) -> list[Flow]:
        """What its pods reach beyond DNS, their own namespace and the API server (see Flow)."""
        return []

    def allowed_tolerations(self, ctx: ClusterContext) -> list[dict[str, str]] | None:
        """The only tolerations pods of its namespace may carry (PodTolerationRestriction); None: any."""
        return None

    def namespace_quota(self, ctx: ClusterContext) -> Quota | None:
        """What its namespace may hold at once (a ResourceQuota, created with the namespace)."""
        return None

    def startup_seconds(self, ctx: ClusterContext) -> int:
        """Of workloads Kueue manages: the longest its pods may take to start once their images are
        pulled (their startup probes' allowance); Kueue's waitForPodsReady must wait that long."""
        return 0

    def priority_ceiling(self, ctx: ClusterContext) -> str | None:
        """Of a queued namespace: the tenant priority (`low`, `normal`, `high`) bounding the Kueue
        priority classes its own workloads may carry (what Git holds is bound only by the reserved
        classes' policy); None: not bounded."""
        return None

    # Argo CD health checks (Lua, as argocd-cm takes them) of the custom resources this component makes
    # whose readiness later apps depend on: the pinned Argo CD has no built-in check for them, and
    # would report them Healthy as soon as they exist (see vendor/argocd/).
    health_checks: ClassVar[Mapping[tuple[str, str], str]] = {}
    # Fields of objects in Git that this component's controllers rewrite once they run (see WrittenField).
    writes: ClassVar[tuple[WrittenField, ...]] = ()
    # Secrets its own chart Jobs write at run time (the bring-up waits for the Job)
    job_secrets: ClassVar[tuple[JobSecret, ...]] = ()
    # The workloads its operator makes of its custom resources (see Operand).
    operands: ClassVar[tuple[Operand, ...]] = ()
    # versions.yaml images this component sets, each with what uses it (a missing pin names it).
    images: ClassVar[Mapping[str, str]] = {}
    # Components of the same cluster this one must come after (each must be present).
    after: ClassVar[tuple[type[Component], ...]] = ()
    # Components that must come after this one where the cluster has them: for a companion that
    # writes what a chart reads (its credentials), so the chart's module need not know the companion.
    before: ClassVar[tuple[type[Component], ...]] = ()
    # CRs whose CRD another app installs: skip the dry run (Argo CD dry-runs before any wave applies).
    skip_dry_run: ClassVar[bool] = False
    # The API calls its controllers make that its RBAC must grant, and which of them read the vault.
    runtime_needs: ClassVar[RuntimeNeeds] = RuntimeNeeds()
    # Of a CSI driver: the access modes its CreateVolume takes.
    csi_access: ClassVar[CsiAccess | None] = None

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        """Whether the cluster gets this component."""
        return True

    @classmethod
    def instances(cls, scope: ClusterScope) -> list[Component]:
        return [cls()] if cls.applies(scope) else []

    @property
    def chart_key(self) -> str | None:
        return None

    @property
    def rendered(self) -> bool:
        return self.chart_key is None

    def dependencies(self, ctx: ClusterContext) -> tuple[type[Component], ...]:
        """What this instance must come after in its cluster (default: `after`)."""
        return self.after

    def node_agents(self, scope: ClusterScope) -> Mapping[str, NodeAgent]:
        """Node agents by policy key `Kind/namespace/name` (or `...:$.path` of a CR placement block)."""
        return {}

    def object_key(self, kind: str, name: str, *, namespace: str | None = None, path: str = "") -> str:
        """The policy key of one of this component's objects (`Kind/namespace/name`), or of a placement
        block inside a custom resource (`Kind/namespace/name:$.json.path`); cluster-scoped: namespace ""."""
        ref = f"{kind}/{self.namespace if namespace is None else namespace}/{name}"
        return f"{ref}:{path}" if path else ref

    def privileged_workloads(self, scope: ClusterScope) -> Mapping[str, str]:
        """Workloads we render that cannot run `restricted` (host access), by policy key, and why."""
        return {}

    def bootstrap_critical(self, scope: ClusterScope) -> Mapping[str, str]:
        """Workloads nodes need before they turn Ready (`Kind/namespace/name`), and why: they must
        schedule on nodes that still carry node.kubernetes.io/not-ready."""
        return {}

    def reloads_certificates(self, scope: ClusterScope) -> Mapping[str, str]:
        """Its workloads (`Kind/namespace/name`) that mount a cert-manager Certificate's key pair and take
        a renewed one by themselves, and how (with the source); any other such workload needs a
        CertificateRollover (constructs/certificate_rollover.py) or serves an expired pair one day."""
        return {}

    def node_rbac(self, scope: ClusterScope) -> Mapping[str, str]:
        """Grants of this component's accounts that reach past a node its pods run tenant-reachable
        nodes on (`<namespace>/<account>: <capability>`, see check/node_rbac.py), and why each is needed."""
        return {}

    def powers(self, scope: ClusterScope) -> Mapping[str, Reviewed]:
        """Its accounts (`<namespace>/<account>`) that hold power beyond their namespace (the primitives
        of components/privilege.py, found in the rendered RBAC), and why the software needs each."""
        return {}

    def reviewed_roles(self, scope: ClusterScope) -> Mapping[str, RoleReview]:
        """Its roles, by name, that read every Secret, grant beyond their own rules or gather other roles'
        (privilege.py's ROLE_POWERS), and why: the RBAC admission policies refuse any other such role."""
        return {}

    def admin_bindings(self, scope: ClusterScope) -> Mapping[str, str]:
        """Its bindings of cluster-admin (or a role as strong), by name, and why its software needs
        one: `sitegen-cluster-admin-bindings` refuses any other."""
        return {}

    def vault_formats(self, scope: ClusterScope) -> Mapping[str, str]:
        """Vault keys this component's software constrains -> what their values must be (the RUNBOOK says)."""
        return {}

    def s3_access(self, ctx: ClusterContext) -> list[S3Access]:
        """The AIStor users and buckets this component writes to."""
        return []

    def second_copy(self, ctx: ClusterContext) -> list[S3Access]:
        """Its users of the second backup target (services.backups.second), outside AIStor."""
        return []

    def state(self, ctx: ClusterContext) -> list[State]:
        """What its workloads keep on volumes, each with its copies or why it needs none."""
        return []

    def watches(self, scope: ClusterScope) -> list[Watch]:
        """What the hub's site alerts watch of it (its scheduled backups, its database, its node guard):
        the hub gathers every cluster's, one alert per concern counted by cluster."""
        return []

    def remote_access(self, scope: ClusterScope) -> RemoteAccess | None:
        """How the pods of the variant's other clusters reach it (its addresses and ports in `scope`'s
        cluster), for their flows to it; None: they cannot."""
        return None

    def operator_steps(self, scope: ClusterScope) -> list[OperatorStep]:
        """The RUNBOOK steps its cluster's bring-up asks of the operator for it, each at its stage."""
        return []

    def routes(self, ctx: ClusterContext) -> list[Route]:
        """The web front ends this component serves through the site Gateway."""
        return []

    def vault_secrets(self, ctx: ClusterContext) -> list[VaultSecretSpec]:
        """Of a chart: the Secrets it reads from the vault, which its project's companion app renders
        before it (the observability app for the observability charts; Harbor's and Velero's companions,
        harbor-config and velero-config, still write theirs by name). A rendered component renders its
        own Secrets."""
        return []

    @property
    def sync_options(self) -> list[str]:
        # Server-side apply everywhere: large CRDs (ApplicationSet is 1.4 MB) exceed the client-side
        # last-applied annotation, and partial Node objects need it.
        options = ["ServerSideApply=true"]
        if self.skip_dry_run:
            options.append("SkipDryRunOnMissingResource=true")
        return options

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class RenderedComponent(Component):
    """A component whose objects cdk8s renders: `dist/<variant>/apps/<cluster>/<name>/`."""

    # renders from what the cluster's other apps render (ctx.rendered): rendered after them
    reads_rendered: ClassVar[bool] = False
    # ... including what the other readers render: rendered after those too
    reads_readers: ClassVar[bool] = False

    def render(self, scope: Construct, ctx: ClusterContext) -> None:
        raise NotImplementedError


class ChartComponent(Component):
    """An upstream Helm chart at its pinned version, with values generated from the site model,
    rendered at synth into the app's folder like any other component (see compose/hydrate.py)."""

    chart: ClassVar[str]  # key of versions.yaml `charts`
    release: ClassVar[str | None] = None  # Helm release name when it must differ from the app name
    # API group/versions of the CRDs the chart installs: given to every chart of the cluster as API
    # versions it may use; synth fails when they differ from the CRDs the chart renders.
    serves: ClassVar[tuple[str, ...]] = ()
    # API group/versions the running software registers itself (no CRD in the chart).
    serves_at_runtime: ClassVar[tuple[str, ...]] = ()
    # False for a second release of a chart whose other release installs its CRDs (crds/ folder)
    renders_crds: ClassVar[bool] = True
    # Values the site model sets (dotted path -> the config field): an extensions.yaml override of one
    # would contradict config/, so synth refuses it and names the field to change instead.
    modelled_values: ClassVar[Mapping[str, str]] = {}

    @property
    def chart_key(self) -> str | None:
        return self.chart

    @property
    def release_name(self) -> str:
        return self.release or self.name

    def values(self, ctx: ClusterContext) -> Values:
        raise NotImplementedError

    def patches(self, ctx: ClusterContext) -> list[ObjectPatch]:
        """Changes to rendered objects for what the chart's values cannot express (each says why)."""
        return []

    def keeps(self, kind: str, name: str) -> bool:
        """Whether this app ships an object its chart renders: every one, unless the chart's node agents
        are released apart (ChartAgents), which take theirs."""
        return True


class ChartAgents(ChartComponent):
    """The node agents of a chart that renders them beside its controllers in one release, with no
    value to render either alone: the same chart and values released again into a privileged
    namespace of their own, keeping only the agents' objects (`is_agent`); the controllers' component
    keeps the rest. The two meet only through the API server and the hosts."""

    controllers: ClassVar[type[ChartComponent]]
    renders_crds = False  # the controllers' release installs them

    @staticmethod
    def is_agent(kind: str, name: str) -> bool:
        """An object only the agents use (the controllers' app leaves it out)."""
        raise NotImplementedError

    @staticmethod
    def is_shared(kind: str, name: str) -> bool:
        """An object both halves mount (a configuration), shipped in both namespaces."""
        return False

    @classmethod
    def controllers_keep(cls, kind: str, name: str) -> bool:
        return cls.is_shared(kind, name) or not cls.is_agent(kind, name)

    @property
    def release_name(self) -> str:
        return self.controllers.release or self.controllers.name  # the chart's own object names

    def keeps(self, kind: str, name: str) -> bool:
        return self.is_agent(kind, name) or self.is_shared(kind, name)

    def values(self, ctx: ClusterContext) -> Values:
        return ctx.get(self.controllers).values(ctx)
