"""The bring-up simulation grounded in the real systems (issue 24): each defect a real first install or
day 2 would hit, put back into a copy of the hydrated tree, is named with component, object and reason;
harmless changes still pass. The GPU nodes' own (their host scripts, Kueue, burn-in and guard):
test_bringup_grounded_gpu.py."""

from __future__ import annotations

import re

import yaml

from sitegen.check.bringup import timeline

from .bringup_cases import ONE, TWO, blocked, edited, installed, run, runbook_without

# --- Vault login --------------------------------------------------------------------------------------


def test_readers_that_may_not_have_their_login_reviewed(site, inputs):
    """The mounts review a login with the login's own token: without system:auth-delegator every store
    of the cluster stays NotReady and the root stops at the stores' wave."""
    tree = edited(
        inputs, ONE, "one-cluster/apps/ai/secret-store/clusterrolebinding.vault-readers-token-review",
        lambda doc: False,
    )  # fmt: skip
    blocked(
        run(site, inputs, ONE, tree=tree), "ai-secret-store", "SecretStore", "may not create tokenreviews"
    )


def test_login_tokens_for_the_vault_and_the_api_server_alone(site, inputs):
    """Each vault role wants the audience `vault`; a token of the API server's audience alone (a pod's
    own) does not log in. A token for the vault alone does not either: the mount reviews the login with
    that token, which the API server authenticates only when it is meant for it."""

    def audiences(*wanted):
        def change(doc):
            if doc.get("kind") == "SecretStore":
                doc["spec"]["provider"]["vault"]["auth"]["kubernetes"]["serviceAccountRef"]["audiences"] = (
                    list(wanted)
                )

        return change

    store = "one-cluster/apps/ai/secret-store/ai-research."
    api = "https://kubernetes.default.svc.cluster.local"
    blocked(
        run(site, inputs, ONE, tree=edited(inputs, ONE, store, audiences(api))),
        "its role wants audience vault, and the login token is for " + api,
    )
    blocked(
        run(site, inputs, ONE, tree=edited(inputs, ONE, store, audiences("vault"))),
        "which is for vault, not the API server (" + api + "): the API server does not authenticate it",
    )


def test_an_auth_mount_never_configured(site, inputs):
    texts = runbook_without(inputs, TWO, r"^vault write auth/kubernetes-aistor/config .*$")
    blocked(run(site, inputs, TWO, texts=texts), "aistor", "auth mount kubernetes-aistor is not configured")


def test_mc_without_the_cluster_ca(site, inputs):
    """The ObjectStore's certificate is signed by its cluster's CA, which no workstation trusts: `mc`
    fails on x509 unless the runbook puts that CA in mc's certs/CAs first."""
    texts = runbook_without(inputs, TWO, r"^kubectl -n aistor get configmap kube-root-ca\.crt .*$")
    blocked(
        run(site, inputs, TWO, texts=texts),
        "s3.aistor.hpc.example.internal: x509: certificate signed by unknown authority",
        "the CA of cluster aistor",
    )


# --- Argo CD health as the pinned Argo CD assesses it --------------------------------------------------

ARGOCD_CM = "one-cluster/apps/ai/argo-cd/argocd.configmap.argocd-cm.yaml"


def _without_health(key: str):
    def change(doc):
        assert key in doc["data"], sorted(doc["data"])
        del doc["data"][key]

    return change


def test_an_object_store_without_its_health_check_runs_ahead(site, inputs):
    """Argo CD v3.4.4 has no check for aistor.min.io/ObjectStore: without ours, `ai-aistor` is Healthy
    the moment the object exists, and the buckets-and-keys step runs before S3 answers."""
    tree = edited(
        inputs, ONE, ARGOCD_CM, _without_health("resource.customizations.health.aistor.min.io_ObjectStore")
    )
    blocked(run(site, inputs, ONE, tree=tree), "AIStor buckets and keys", "mc", "S3 does not answer yet")


def test_without_application_health_the_sets_still_order(site, inputs):
    """Argo CD has no health for Application: without argocd-cm's script the root's waves order only
    the foundation's creation. The ApplicationSets' own check reads their apps' health as the
    controller records it, so every generated app still comes up in its wave's order."""
    tree = edited(
        inputs, ONE, ARGOCD_CM, _without_health("resource.customizations.health.argoproj.io_Application")
    )
    result = run(site, inputs, ONE, tree=tree)
    assert result.ok, timeline(result)
    first_install = result.timeline[: next(i for i, e in enumerate(result.timeline) if e.step == "done")]
    healthy = [n for e in first_install if e.what.startswith("Healthy: ") for n in e.what[9:].split(", ")]
    generated = [n for n in healthy if n not in ("ai-namespaces", "ai-cilium", "ai-argo-cd")]
    waves = {n: a.wave for n, a in installed(site, inputs).state.apps.items()}
    assert [waves[n] for n in generated] == sorted(waves[n] for n in generated)


def test_a_health_script_that_breaks_in_argo_cds_lua_is_unknown(site, inputs):
    """Argo CD's Lua has no string library: a script calling it never yields Healthy, the app waits."""

    def change(doc):
        key = "resource.customizations.health.nvidia.com_ClusterPolicy"
        doc["data"][key] = doc["data"][key].replace("hs = {", 'local s = string.lower("X")\nhs = {', 1)

    tree = edited(inputs, ONE, ARGOCD_CM, change)
    blocked(run(site, inputs, ONE, tree=tree), "ai-gpu-operator", "ClusterPolicy", "Unknown", "string")


def test_the_object_store_check_reads_the_operators_status():
    from sitegen.check.bringup.health import run_health_script
    from sitegen.components.storage.aistor import OBJECT_STORE_HEALTH as lua

    pools = [{"name": "pool-0", "state": "PoolInitialized"}, {"name": "pool-1", "state": "PoolCreated"}]
    assert run_health_script(lua, {})[0] == "Progressing"
    assert run_health_script(lua, {"status": {"currentState": "Waiting for Pods to be ready", "healthStatus": "red"}}) == (
        "Progressing", "Waiting for Pods to be ready")  # fmt: skip
    assert run_health_script(lua, {"status": {"currentState": "Initialized", "pools": pools}}) == (
        "Progressing", "server pool pool-1: PoolCreated")  # fmt: skip
    up = {"currentState": "Initialized", "pools": pools[:1]}
    assert run_health_script(lua, {"status": {**up, "healthStatus": "green"}})[0] == "Healthy"
    assert run_health_script(lua, {"status": {**up, "healthStatus": "yellow"}})[0] == "Healthy"
    assert run_health_script(lua, {"status": {**up, "healthStatus": "red"}})[0] == "Degraded"


def test_the_fabric_check_reads_the_network_operators_state():
    from sitegen.check.bringup.health import run_health_script
    from sitegen.components.networking.fabric import NIC_CLUSTER_POLICY_HEALTH as lua

    assert run_health_script(lua, {})[0] == "Progressing"
    assert run_health_script(lua, {"status": {"state": "notReady"}})[0] == "Progressing"
    assert run_health_script(lua, {"status": {"state": "ready"}})[0] == "Healthy"
    assert run_health_script(lua, {"status": {"state": "error", "reason": "x"}}) == ("Degraded", "x")
    # a policy of another name: the operator never reconciles it, so it must not wait for ever
    assert run_health_script(lua, {"status": {"state": "ignore"}})[0] == "Degraded"


def test_kinds_without_a_check_are_healthy_on_creation():
    """From the pinned Argo CD's table: what it checks, and what it takes as Healthy once it exists."""
    from sitegen.check.bringup.health import HealthChecks, has_builtin_check

    assert has_builtin_check("apps", "DaemonSet") and has_builtin_check("", "PersistentVolumeClaim")
    assert has_builtin_check("external-secrets.io", "ExternalSecret")
    assert has_builtin_check("cert-manager.io", "Certificate") and has_builtin_check(
        "argoproj.io", "ApplicationSet"
    )
    assert has_builtin_check("pkg.crossplane.io", "Provider")  # a group wildcard of the table
    for group, kind in [("aistor.min.io", "ObjectStore"), ("nvidia.com", "ClusterPolicy"),
                        ("argoproj.io", "Application"), ("kueue.x-k8s.io", "ClusterQueue"), ("", "ConfigMap")]:  # fmt: skip
        assert not has_builtin_check(group, kind), (group, kind)
    checks = HealthChecks.from_config_map(
        {"resource.customizations.health.argoproj.io_Application": "return {}"}
    )
    assert checks.checked("argoproj.io", "Application") and not checks.checked("nvidia.com", "ClusterPolicy")


# --- day 2 --------------------------------------------------------------------------------------------

ROOT = "one-cluster/bootstrap/argocd.application.root.yaml"


def test_a_node_down_does_not_freeze_the_root(site, inputs):
    """Without ApplyOutOfSyncOnly the root's next sync applies, and waits on, every object again: the
    ApplicationSet of a DaemonSet app that a node down keeps Progressing holds back the change of
    another set."""

    def every_object(doc):
        doc["spec"]["syncPolicy"]["syncOptions"].remove("ApplyOutOfSyncOnly=true")

    result = run(site, inputs, ONE)
    text = "\n".join(e.what for e in result.timeline)
    assert re.search(
        r"gpu01 NotReady \(\d+ workloads\); \d+ DaemonSet apps Progressing .*holding nothing", text
    )
    assert "the root applied 1 changed object(s) and waited on them alone" in text
    tree = edited(inputs, ONE, ROOT, every_object)
    blocked(run(site, inputs, ONE, tree=tree), "day 2: gpu01 NotReady", "root", "frozen")


def test_an_upgrade_without_the_patches(site, inputs):
    texts = runbook_without(inputs, ONE, r" --patches /etc/kubernetes/patches(?=   # first control-plane)")
    blocked(run(site, inputs, ONE, texts=texts), "day 2: Kubernetes upgrade", "kubeadm upgrade apply",
            "without --patches", "kubelet reservations")  # fmt: skip


def test_an_upgrade_batch_beyond_the_budget(site, inputs):
    texts = dict(inputs[ONE][1])
    path = next(p for p in texts if p.name == "RUNBOOK.md")
    texts[path] = texts[path].replace("(30 nodes): 2 at a time", "(30 nodes): 6 at a time")
    blocked(
        run(site, inputs, ONE, texts=texts), "pool storage", "6 at a time", "budget of storage/pool-0 is 2"
    )


def test_a_drain_that_strands_a_workload(site, inputs):
    """A Deployment pinned to one host has nowhere to go while that host is drained."""

    def pinned(doc):
        doc["spec"]["template"]["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "infra01"}

    tree = edited(
        inputs,
        ONE,
        "one-cluster/apps/ai/argo-cd/argocd.deployment.argocd-notifications-controller.yaml",
        pinned,
    )
    blocked(run(site, inputs, ONE, tree=tree), "day 2: Kubernetes upgrade", "ai-argo-cd",
            "draining infra01 leaves Deployment argocd/argocd-notifications-controller without a place")  # fmt: skip


# --- references: in dist/, made by a modelled controller, or reviewed ---------------------------------

GRAFANA = "one-cluster/apps/ai/grafana/grafana.deployment.grafana.yaml"


def _renamed(old: str, new: str):
    def change(doc):
        text = yaml.safe_dump(doc)
        assert old in text
        doc.clear()
        doc.update(yaml.safe_load(text.replace(old, new)))

    return change


def test_a_misspelt_config_map_is_a_blocker(site, inputs):
    tree = edited(
        inputs, ONE, GRAFANA, _renamed("name: grafana-config-dashboards", "name: grafana-config-dashbords")
    )
    blocked(
        run(site, inputs, ONE, tree=tree),
        "ai-grafana",
        "ConfigMap grafana/grafana-config-dashbords does not exist",
    )


def test_a_misspelt_secret_is_a_blocker_not_an_assumption(site, inputs):
    tree = edited(inputs, ONE, GRAFANA, _renamed("name: grafana-admin", "name: grafana-admn"))
    blocked(run(site, inputs, ONE, tree=tree), "ai-grafana", "nothing makes Secret grafana/grafana-admn")


def test_a_chart_secret_waits_for_the_job_that_writes_it(site, inputs):
    tree = edited(
        inputs, ONE, "one-cluster/apps/ai/argo-cd/argocd.job.argocd-redis-secret-init.yaml", lambda d: False
    )
    blocked(  # the RUNBOOK's `kubectl -n argocd wait` for Argo CD's Deployments stops there
        run(site, inputs, ONE, tree=tree),
        "Argo CD, rendered from its chart",
        "argocd-redis",
        "argocd-redis-secret-init: argo-cd writes",
    )


def test_bringup_prints_its_assumptions_and_each_is_reviewed(site, inputs):
    from sitegen.check.bringup.references import EXTERNAL
    from sitegen.components.catalog import COMPONENTS

    result = run(site, inputs, ONE)
    assert result.ok
    reasons = set(EXTERNAL.values()) | {s.why for kind in COMPONENTS for s in kind.job_secrets}
    for line in result.assumed:
        assert any(r in line for r in reasons) or "not modelled, Healthy once applied" in line, line
    assert (
        "PriorityClass system-node-critical: built into every cluster (the API server creates it)"
        in result.assumed
    )
    assert "assumed (reviewed" in timeline(result)


def test_the_labeler_as_shipped_fails_on_pretty_printed_json(site, inputs):
    """The defect of issue 24: the taint check grepped the API server's JSON as if it were compact. The
    bring-up runs the CronJob's script with curl against an API server that pretty-prints for curl."""

    def compact_grep(doc):
        container = doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
        script = container["command"][2]
        assert 'node.min.json"' in script
        container["command"][2] = script.replace("node.min.json", "node.json")

    tree = edited(inputs, ONE, "one-cluster/apps/ai/node-labels/node-labeler.cronjob", compact_grep)
    blocked(
        run(site, inputs, ONE, tree=tree), "ai-node-labels", "CronJob node-labeler/node-labeler", "exits 1",
        "lacks its pool's taint",
    )  # fmt: skip


def test_a_kind_the_project_does_not_admit(site, inputs):
    """Argo CD refuses a sync whose resource its AppProject does not admit: the app never syncs."""

    def narrower(doc):
        entries = doc["spec"]["clusterResourceWhitelist"]
        doc["spec"]["clusterResourceWhitelist"] = [e for e in entries if e["kind"] != "ClusterQueue"]
        assert len(doc["spec"]["clusterResourceWhitelist"]) < len(entries)

    tree = edited(inputs, ONE, "one-cluster/bootstrap/argocd.appproject.gpu", narrower)
    blocked(
        run(site, inputs, ONE, tree=tree), "ai-gpu-queues", "ClusterQueue",
        "cluster-scoped kueue.x-k8s.io/ClusterQueue gpu is not permitted in project gpu",
    )  # fmt: skip


def test_a_host_port_two_daemonsets_want(site, inputs):
    """The scheduler's NodePorts filter: a pod cannot take a host port another pod holds on the node
    (node-exporter runs on the host network: its 9100 is a host port on every node)."""

    def same_port(doc):
        container = doc["spec"]["template"]["spec"]["containers"][0]
        container.setdefault("ports", []).append({"containerPort": 9633, "hostPort": 9100, "protocol": "TCP"})

    tree = edited(
        inputs, ONE, "one-cluster/apps/ai/prometheus-smartctl-exporter/monitoring-agents.daemonset", same_port
    )
    blocked(
        run(site, inputs, ONE, tree=tree), "ai-prometheus-smartctl-exporter", "host port TCP/9100 is taken by",
        "prometheus-node-exporter",
    )  # fmt: skip


def test_claims_beyond_the_tenants_storage_quota(site, inputs):
    """A StatefulSet pod's claims count against its namespace's requests.storage: a tenant quota
    smaller than the model server's cache claim keeps the server from starting."""

    def small(doc):
        doc["spec"]["hard"]["requests.storage"] = "100G"

    tree = edited(inputs, ONE, "one-cluster/apps/ai/namespaces/ai-research.resourcequota.quota", small)
    blocked(
        run(site, inputs, ONE, tree=tree), "ai-models", "llama-3-3-70b", "ResourceQuota quota: requests.storage",
    )  # fmt: skip


def test_a_pod_its_namespace_level_refuses(site, inputs):
    """PodSecurity admission: the tenant namespace enforces baseline; a privileged model server is
    refused when its StatefulSet creates the pod, and the app never turns Healthy."""

    def privileged(doc):
        container = doc["spec"]["template"]["spec"]["containers"][0]
        container.setdefault("securityContext", {})["privileged"] = True

    tree = edited(inputs, ONE, "one-cluster/apps/ai/models/ai-research.statefulset.llama-3-3-70b", privileged)
    blocked(
        run(site, inputs, ONE, tree=tree),
        "ai-models",
        "llama-3-3-70b",
        "PodSecurity (baseline) refuses",
        "vllm: privileged",
    )


def test_a_webhook_namespace_closed_to_the_api_server(site, inputs):
    """Cilium enforces: a webhook whose namespace lets the API server in on no port cannot answer, and
    every object its rules match is refused (cert-manager's webhook, whose rules name resources `*/*`:
    the Issuers and Certificates)."""

    def closed(doc):
        if doc.get("kind") == "CiliumNetworkPolicy":
            ingress = doc["spec"].get("ingress") or []
            doc["spec"]["ingress"] = [
                r for r in ingress if "kube-apiserver" not in (r.get("fromEntities") or [])
            ]

    tree = edited(inputs, ONE, "one-cluster/apps/ai/network-policies/cert-manager.", closed)
    blocked(
        run(site, inputs, ONE, tree=tree), "cert-manager-webhook",
        "the network policy of namespace cert-manager lets the API server in on no port",
    )  # fmt: skip


def test_the_metrics_api_closed_to_the_api_server(site, inputs):
    """kube-aggregator asks an APIService's Service for discovery itself: with kube-system closed to
    the API server, metrics-server's API stays unavailable, whatever port kube-system opens to the
    whole cluster (DNS, 53: not the pod port the Service's named targetPort resolves to)."""

    def closed(doc):
        if doc.get("kind") == "CiliumNetworkPolicy":
            doc["spec"]["ingress"] = [
                r for r in doc["spec"]["ingress"] if r.get("fromEntities") != ["kube-apiserver"]
            ]

    tree = edited(inputs, ONE, "one-cluster/apps/ai/network-policies/kube-system.", closed)
    blocked(
        run(site, inputs, ONE, tree=tree), "ai-metrics-server", "APIService v1beta1.metrics.k8s.io",
        "the network policy of namespace kube-system lets the API server in on no port 10250",
    )  # fmt: skip


def test_a_host_whose_containerd_has_no_cri(site, inputs):
    """Docker's containerd.io ships its configuration with the CRI disabled: a host preparation that
    writes none of its own leaves kubeadm without a runtime."""
    from pathlib import PurePosixPath

    texts = dict(inputs[ONE][1])
    path = PurePosixPath(ONE, "kubeadm/ai/host-prep-gpu.sh")
    texts[path] = re.sub(
        r"cat > /etc/containerd/config.toml <<'EOF'\n.*?^EOF\n", "", texts[path], flags=re.S | re.M
    )
    blocked(run(site, inputs, ONE, texts=texts), "gpu01", "kubeadm join stops", "disables the CRI")
    texts = dict(inputs[ONE][1])
    path = PurePosixPath(ONE, "kubeadm/ai/host-prep-control-plane.sh")
    texts[path] = texts[path].replace("SystemdCgroup = true", "SystemdCgroup = false")
    blocked(
        run(site, inputs, ONE, texts=texts),
        "cp01",
        "kubeadm init stops",
        "runc runs on the cgroupfs cgroup driver",
    )
    texts[path] = re.sub(
        r"^\[plugins.'io.containerd.cri.v1.images'.pinned_images\]\n.*\n",
        "",
        inputs[ONE][1][path],
        flags=re.M,
    )
    blocked(run(site, inputs, ONE, texts=texts), "cp01", "no sandbox image pinned")


def test_a_host_without_the_kernel_settings_its_kubelet_checks(site, inputs):
    """A kubelet with protectKernelDefaults refuses to start on a host whose baseline did not set the
    kernel settings it needs; without protectKernelDefaults it sets them itself and the host joins."""
    from pathlib import PurePosixPath

    texts = dict(inputs[ONE][1])
    path = PurePosixPath(ONE, "kubeadm/ai/host-prep-gpu.sh")
    texts[path], count = re.subn(r"^kernel\.panic = 10\n", "", texts[path], flags=re.M)
    assert count == 1
    blocked(
        run(site, inputs, ONE, texts=texts),
        "gpu01",
        "kubeadm join stops",
        "protectKernelDefaults",
        "does not set kernel.panic=10",
    )

    def unprotected(doc):
        doc.pop("protectKernelDefaults", None)

    tree = edited(inputs, ONE, f"{ONE}/kubeadm/ai/init-", unprotected)
    assert run(site, inputs, ONE, tree=tree, texts=texts).blocker is None


def test_a_chart_secret_its_component_no_longer_declares_is_a_blocker(site, inputs, monkeypatch):
    """The Secrets chart Jobs write are the components' declarations: without Cilium's, nothing makes
    Hubble's client certificates and Hubble Relay never starts."""
    from sitegen.check.bringup import secrets

    monkeypatch.delitem(secrets._JOB_SECRETS, "hubble-relay-client-certs")
    blocked(run(site, inputs, ONE), "hubble-relay-client-certs", "nothing makes Secret")
