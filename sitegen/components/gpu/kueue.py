"""`kueue`: the job-queueing controller ("job scheduler components" of the seed), on the system pool."""

from __future__ import annotations

from collections.abc import Mapping

import yaml

from constructs.kueue import GPU_RESOURCE, MANAGED_NAMESPACE_LABEL, QUEUE_LABEL, gpu_queue_resources
from sitegen.components.base import ChartComponent, Layer, NamespaceSecurity
from sitegen.components.context import ClusterContext, ClusterScope
from sitegen.components.gpu import PROJECT
from sitegen.components.networking.cilium import Cilium
from sitegen.components.ownership import WrittenField
from sitegen.components.platform.namespaces import Namespaces
from sitegen.components.privilege import AGGREGATES_ROLES, PATCHES_PRIVILEGED_PODS, Reviewed, RoleReview
from sitegen.components.runtime_needs import ApiCall, RuntimeNeeds
from sitegen.components.values import Image, Placed, Resources, Values, placed, requests


class ManagerImage(Image):
    pullPolicy: str = "IfNotPresent"


class Manager(Values):
    # the chart's default is a staging build on a moving branch tag (release-0.19): the release
    # image, pinned, instead
    image: ManagerImage
    resources: Resources


class ControllerManager(Placed):
    replicas: int
    manager: Manager


class ManagerConfig(Values):
    controllerManagerConfigYaml: str


class KueueValues(Values):
    controllerManager: ControllerManager
    managerConfig: ManagerConfig


PULL_SECONDS = 10 * 60  # image pulls of a large training image over the site's mirror


def pods_ready_timeout(ctx: ClusterContext) -> str:
    """waitForPodsReady's timeout (and recovery timeout): the image pulls, then the longest start a
    workload of the cluster declares (a model server loading its weights). Kueue has one timeout for
    every workload: a shorter one evicts a model server before it is Ready, again and again."""
    startup = max((c.startup_seconds(ctx) for c in ctx.components), default=0)
    return f"{(PULL_SECONDS + startup) // 60}m"


USAGE_HALF_LIFE = "168h"  # a tenant's GPU use a week ago counts half in its turn (fair sharing)


def manager_config(covered: list[str], pods_ready: str) -> str:
    """Kueue's Configuration: the chart's defaults, but for what the site decides. The chart renders
    `managedJobsNamespaceSelector` into its webhooks' namespace selectors too. `covered`: the GPU
    ClusterQueue's resources, weighed for fair sharing (GPUs alone count); `pods_ready`: how long an
    admitted workload may take to be Ready."""
    config = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443"},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": {
            "groupKindConcurrency": {
                "Job.batch": 5,
                "Pod": 5,
                "Workload.kueue.x-k8s.io": 10,
                "LocalQueue.kueue.x-k8s.io": 5,
                "ClusterQueue.kueue.x-k8s.io": 5,
                "ResourceFlavor.kueue.x-k8s.io": 1,
            }
        },
        "clientConnection": {"qps": 300, "burst": 500},
        "managedJobsNamespaceSelector": {"matchLabels": {MANAGED_NAMESPACE_LABEL: "true"}},
        # Every job and pod of a tenant namespace goes through Kueue: one without a queue label is
        # suspended (its pods gated) and never admitted, since no tenant has a LocalQueue `default`;
        # without this, a Job that names no queue runs outside every quota.
        "manageJobsWithoutQueueName": True,
        # what the site's tenants run: Jobs, and pods of StatefulSets and Deployments (model servers)
        "integrations": {"frameworks": ["batch/job", "pod", "deployment", "statefulset"]},
        # All or nothing for whole-node jobs: a workload whose pods are not all Ready in time (a job of
        # 12 GPU nodes admitted while one is down) is evicted, its quota given back, and requeued with
        # backoff, instead of holding 88 GPUs forever. Present means on (config v1beta2 has no `enable`).
        # Admission fair sharing (beta, on by default since v0.15) between the tenants' LocalQueues of
        # the GPU ClusterQueue (its admissionScope): GPUs alone count; a resource left out of the
        # weights counts 1 per unit, so cores and bytes of memory would outweigh every GPU
        # (v0.19.2 pkg/util/admissionfairsharing CalculateUsage).
        "admissionFairSharing": {
            "usageHalfLifeTime": USAGE_HALF_LIFE,
            "usageSamplingInterval": "5m",
            "resourceWeights": {r: 1.0 if r == GPU_RESOURCE else 0.0 for r in covered},
        },
        "waitForPodsReady": {
            "timeout": pods_ready,
            "recoveryTimeout": pods_ready,  # a running job that loses a pod for this long
            "requeuingStrategy": {
                "timestamp": "Eviction",
                "backoffBaseSeconds": 60,
                "backoffMaxSeconds": 1800,
            },
        },
    }
    return yaml.safe_dump(config, sort_keys=False)


class Kueue(ChartComponent):
    name = "kueue"
    chart = "kueue"
    serves = ("kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2")
    project = PROJECT
    layer = Layer.FOUNDATION
    after = (Cilium, Namespaces)
    namespace = "kueue-system"
    security = NamespaceSecurity("baseline", "the chart's pods are not verified against restricted")
    images = {"kueue": "the Kueue controller (the chart defaults to a staging build)"}
    # kueue v0.19.2, the kubebuilder RBAC markers of the controllers its manager starts: Workloads
    # (pkg/controller/core/workload_controller.go), ClusterQueues (clusterqueue_controller.go),
    # LocalQueues (localqueue_controller.go), ResourceFlavors (resourceflavor_controller.go), batch Jobs
    # (pkg/controller/jobs/job/job_controller.go); their informers list and watch each kind.
    runtime_needs = RuntimeNeeds(
        api=tuple(
            ApiCall("kueue-controller-manager", verb, resource, group, source=f"kueue v0.19.2 {source}")
            for resource, group, source in (
                ("workloads", "kueue.x-k8s.io", "pkg/controller/core/workload_controller.go"),
                ("clusterqueues", "kueue.x-k8s.io", "pkg/controller/core/clusterqueue_controller.go"),
                ("localqueues", "kueue.x-k8s.io", "pkg/controller/core/localqueue_controller.go"),
                ("resourceflavors", "kueue.x-k8s.io", "pkg/controller/core/resourceflavor_controller.go"),
                ("jobs", "batch", "pkg/controller/jobs/job/job_controller.go"),
            )
            for verb in ("list", "watch")
        )
    )
    writes = (
        WrittenField(
            "batch", "Job", "/spec/suspend", label=QUEUE_LABEL,
            why="Kueue admits a queued Job by setting suspend to false, and suspends it again when it "
            "evicts or preempts it (kueue v0.19 pkg/controller/jobframework, RunWithPodSetsInfo and Suspend)",
            trigger="admission",
        ),
    )  # fmt: skip

    @classmethod
    def applies(cls, scope: ClusterScope) -> bool:
        return scope.has_gpus

    def values(self, ctx: ClusterContext) -> KueueValues:
        return KueueValues(
            controllerManager=ControllerManager(
                replicas=2,  # leader election; the webhook stays available during a restart
                manager=Manager(
                    image=ManagerImage(
                        repository=ctx.image("kueue").repository, tag=ctx.image("kueue").pinned_tag
                    ),
                    resources=requests("500m", "512Mi", "2Gi"),
                ),
                **placed(ctx.system_placement),
            ),
            managerConfig=ManagerConfig(
                controllerManagerConfigYaml=manager_config(
                    gpu_queue_resources(ctx.gpu_pools, ctx.site.fabric), pods_ready_timeout(ctx)
                )
            ),
        )

    def reviewed_roles(self, scope: ClusterScope) -> Mapping[str, RoleReview]:
        return {
            "kueue-batch-admin-role": RoleReview(
                (AGGREGATES_ROLES,),
                "Kueue's own roles labelled rbac.kueue.x-k8s.io/batch-admin: queues and workloads, for batch administrators",
            ),
            "kueue-batch-user-role": RoleReview(
                (AGGREGATES_ROLES,),
                "Kueue's own roles labelled rbac.kueue.x-k8s.io/batch-user: workloads and local queues, for batch users",
            ),
        }

    def powers(self, scope: ClusterScope) -> Mapping[str, Reviewed]:
        return {
            f"{self.namespace}/kueue-controller-manager": Reviewed(
                (PATCHES_PRIVILEGED_PODS,),
                "ungates and labels the pods of the workloads it admits, in every namespace it manages",
            ),
        }
