"""One cluster during its first install: nodes, the objects applied so far, and the controllers' work
on them (scheduling, readiness, secrets, certificates, volumes, Kueue admission, device plugins).

`Cluster` is the cluster's state and object index (`ClusterObjects`, objects.py) with one part per
concern, each given the state and the other parts it reads: `scheduler` (scheduling.py), `kueue`,
`admission`, `secrets`, `storage`, `node_agents` (nodes.py) and `operators`. What crosses them is
here: applying an object (the index, then what operators make of it), the controllers' loop
(`reconcile`), what a pod waits on before it can start (`pod_blocker`), and deletion.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from constructs.objects import pod_account
from sitegen.check.admission_policy import POD_MAKERS, admitted_pod
from sitegen.check.bringup.admission import Admission
from sitegen.check.bringup.kube import claim_refs, config_map_refs, secret_refs
from sitegen.check.bringup.kueue import Kueue
from sitegen.check.bringup.nodes import NodeAgents
from sitegen.check.bringup.objects import ClusterObjects, Key, Workload
from sitegen.check.bringup.operators import Operators
from sitegen.check.bringup.refusals import pod_refusal
from sitegen.check.bringup.scheduling import Scheduler
from sitegen.check.bringup.secrets import Secrets
from sitegen.check.bringup.storage import Storage
from sitegen.check.bringup.vault import Vault
from sitegen.check.pod_security import violations

PSA_ENFORCE = "pod-security.kubernetes.io/enforce"


class Cluster(ClusterObjects):
    """One cluster: its objects, the parts above over them; the controllers' loop and the pods'
    prerequisites."""

    def __init__(self, name: str, vault: Vault) -> None:
        super().__init__(name, vault)
        self.secrets = Secrets(self)
        self.storage = Storage(self)
        self.scheduler = Scheduler(self, self.pod_blocker)
        self.kueue = Kueue(self, self.scheduler, self.pod_blocker)
        self.admission = Admission(self, self.secrets)
        self.node_agents = NodeAgents(self, self.scheduler)
        self.operators = Operators(self, self.node_agents, self.secrets)

    def apply(self, body: Mapping[str, Any], owner: str) -> None:
        """The object, and the workloads an operator makes of it."""
        super().apply(body, owner)
        self.operators.applied(body, owner)

    # ---- workloads -------------------------------------------------------------------------------
    def reconcile(self, rails: Mapping[str, set[str]]) -> None:
        """Run the controllers until nothing changes."""
        while True:
            before = self.changes
            self.node_agents.refresh_readiness()
            self.node_agents.refresh_devices(rails)
            self.node_agents.refresh_serving_certificates()
            self.kueue.admit()
            for key in sorted(self.workloads):
                self.scheduler.start(key, self.workloads[key])
            if self.changes == before:
                return

    def pod_blocker(self, w: Workload) -> str | None:
        """Why pods of this template cannot be created or start, nodes aside."""
        t = w.template
        if not self.has_namespace(t.namespace):
            return f"namespace {t.namespace} does not exist"
        refused = self.pod_security_refusal(t.namespace, t.spec)
        if refused:
            return refused
        down = self.admission.admission_blocker(
            admitted_pod(t.namespace, t.name, t.labels, t.spec), user=POD_MAKERS.get(t.kind, self.applier)
        )
        if down:
            return down
        account = pod_account(t.spec)
        if account != "default" and self.find("ServiceAccount", t.namespace, account) is None:
            return f"ServiceAccount {account} does not exist"
        priority = t.spec.get("priorityClassName")
        if priority and not self.resolves("PriorityClass", "", priority):
            return f"PriorityClass {priority} does not exist"
        runtime = t.spec.get("runtimeClassName")
        if runtime and not self.node_agents.runtime_class_exists(runtime):
            return f"RuntimeClass {runtime} does not exist"
        for name in sorted(secret_refs(t)):
            why = self.secrets.secret_blocker(t.namespace, name)
            if why is not None:
                return f"Secret {name} is not there: {why}"
        for name in sorted(config_map_refs(t)):
            if not self.resolves("ConfigMap", t.namespace, name):
                return f"ConfigMap {t.namespace}/{name} does not exist (nothing in dist/ makes it)"
        for name in sorted(claim_refs(t)):
            why = self.storage.claim_status(t.namespace, name)
            if why:
                return why
        for storage_class in w.claim_classes:
            why = self.storage.claim_blocker(storage_class, consumer=True)
            if why:
                return f"volume claim: {why}"
        if w.operator and not self.controller_running(*w.operator):
            return f"the {w.operator[1]} operator is not running"
        return (
            pod_refusal(w, self)
            or self.admission.quota_blocker(w)
            or self.node_agents.kubelet_client_blocker(w)
        )

    def pod_security_refusal(self, namespace: str, spec: Mapping[str, Any]) -> str | None:
        """PodSecurity admission: the namespace's enforce label, else the API server's default level;
        exempt namespaces pass (check/pod_security.py has the Pod Security Standards)."""
        default, exempt = self.pod_security
        if namespace in exempt:
            return None
        level = self.namespace_labels(namespace).get(PSA_ENFORCE, default)
        broken = violations(level, dict(spec))
        return f"PodSecurity ({level}) refuses its pods: {broken[0]}" if broken else None

    # ---- deletion --------------------------------------------------------------------------------
    def delete(self, key: Key) -> list[Key]:
        """The object is deleted (an Application's resources finalizer, a prune): its pods go and give
        their nodes back, a CRD's kind is served no more, and a Namespace takes what is in it (the
        namespace controller). Returns every key deleted."""
        applied = self.objects.pop(key, None)
        if applied is None:
            return []
        gone = [key]
        self._kinds.get(key[1], {}).pop(key, None)
        if self._named.get((key[1], key[2], key[3])) == key:
            del self._named[(key[1], key[2], key[3])]
        workload = self.workloads.pop(key, None)
        if workload is not None:
            self.scheduler.release(workload)
        if key[1] == "CustomResourceDefinition":
            spec = applied.body["spec"]
            self.crds.pop((spec["group"], spec["names"]["kind"]), None)
        if key[1] == "Namespace" and key[0] == "":
            for inside in [k for k in self.objects if k[2] == key[3]]:
                gone += self.delete(inside)
        self.object_changed(key)
        return gone
