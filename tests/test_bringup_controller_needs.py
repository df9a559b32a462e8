"""What the RUNBOOK must provide and what controllers need once they run (refusals/controllers.py):
TopoLVM's volume group on its hosts, every vault property an ExternalSecret reads, the RBAC of each
controller's API calls (declared with its component), and network policies that let controllers reach
the API server and the vault. Each defect is put back into a copy of the tree and named with app,
object and reason; a harmless variation of the same field still comes up."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from sitegen.check.bringup import bringup, timeline
from sitegen.check.bringup.refusals import controllers
from sitegen.check.bringup.storage import step_pools
from sitegen.check.bringup.vault import Vault
from sitegen.components.catalog import COMPONENTS
from sitegen.components.runtime_needs import ApiCall

from .bringup_cases import ONE, blocked, edited, run, runbook_without

APPS = "one-cluster/apps/ai"
RUNBOOK = PurePosixPath(ONE, "bootstrap", "RUNBOOK.md")


def up(site, inputs, *, tree=None, texts=None):
    """The first install only (no day 2): a harmless variation must come up."""
    base_tree, base_texts = inputs[ONE]
    result = bringup(
        site, ONE, base_tree if tree is None else tree, base_texts if texts is None else texts, day2=False
    )
    assert result.ok, timeline(result)
    return result


def runbook_with(inputs, pattern: str, replacement: str) -> dict[PurePosixPath, str]:
    texts = dict(inputs[ONE][1])
    texts[RUNBOOK], count = re.subn(pattern, replacement, texts[RUNBOOK], flags=re.M)
    assert count, pattern
    return texts


# --- 1. the volume group TopoLVM's lvmd needs on its hosts -----------------------------------------------


def test_a_runbook_that_never_makes_the_volume_group(site, inputs):
    """lvmd (topolvm v0.41.0 cmd/lvmd/app/root.go) exits when a device class's volume group is not on
    its host: the lvmd DaemonSet never runs and the node plugin's app stays Progressing."""
    texts = runbook_without(inputs, ONE, r"^bash \S+/local-cache-(gpu|infra)\.sh .*$")
    blocked(
        run(site, inputs, ONE, texts=texts),
        "topolvm-node", "DaemonSet topolvm-node/topolvm-lvmd-0", "volume group not found", "nvme-cache",
        "vgcreate nvme-cache", "local-cache-",
    )  # fmt: skip


def test_a_volume_group_made_with_other_options_comes_up(site, inputs):
    texts = dict(inputs[ONE][1])
    for pool in ("gpu", "infra"):
        script = PurePosixPath(ONE, "kubeadm", "ai", f"local-cache-{pool}.sh")
        texts[script], count = re.subn(
            r"^vgcreate nvme-cache ", "vgcreate -s 32M nvme-cache ", texts[script], flags=re.M
        )
        assert count == 1
    up(site, inputs, texts=texts)


def test_the_pools_a_host_step_is_for():
    pools = {"infra", "gpu", "compute"}
    assert step_pools("Local NVMe cache: volume group on the infra, gpu hosts", pools) == {"infra", "gpu"}
    assert step_pools("Local NVMe cache: volume group on the gpu hosts", pools) == {"gpu"}
    assert step_pools("Node labels and namespaces", pools) == set()


# --- 2. every vault property an ExternalSecret reads ------------------------------------------------------


def _ask_for(prop_from: str, prop_to: str | None):
    def change(doc):
        for item in doc["spec"]["data"]:
            if item["remoteRef"].get("property") == prop_from:
                if prop_to is None:
                    del item["remoteRef"]["property"]
                else:
                    item["remoteRef"]["property"] = prop_to

    return change


def test_an_external_secret_reading_a_property_nobody_writes(site, inputs):
    """External Secrets v2.9.0 (providers/v1/vault/client_get.go): a property the key does not hold is
    SecretSyncedError "cannot find secret data for key", and the target Secret is never made."""
    tree = edited(
        inputs, ONE, f"{APPS}/aistor/aistor.externalsecret.aistor-env", _ask_for("user", "username")
    )
    blocked(
        run(site, inputs, ONE, tree=tree),
        "ai-aistor", "aistor-env", 'cannot find secret data for key: "username"', "aistor/aistor/root",
    )  # fmt: skip


def test_an_external_secret_reading_the_whole_key_comes_up(site, inputs):
    """Without a property External Secrets reads the whole key as JSON: nothing to miss."""
    tree = edited(inputs, ONE, f"{APPS}/aistor/aistor.externalsecret.aistor-env", _ask_for("user", None))
    up(site, inputs, tree=tree)


def test_the_vault_keeps_the_properties_the_runbook_writes():
    vault = Vault()
    vault.listed("harbor/core", "csrf-key, secret. secret: 16 characters; csrf-key: 32 characters")
    vault.listed("serving/api-keys", "(one property per client: id -> key)")
    vault.write("put", ["secret/aistor/users/loki", "access_key=<from", "above>", "secret_key=<from"])
    vault.write("patch", ["secret/aistor/users/loki", "session=x"])
    vault.write("patch", ["secret/never/put", "token=x"])  # KV v2 patches existing secrets only
    assert vault.properties["harbor/core"] == {"csrf-key", "secret"}
    assert not vault.missing_property("serving/api-keys", "any-client")
    assert vault.properties["aistor/users/loki"] == {"access_key", "secret_key", "session"}
    assert vault.missing_property("harbor/core", "csrf")
    assert "never/put" not in vault.keys
    vault.write("put", ["secret/aistor/users/loki", "access_key=y"])  # a put is a new version: only these
    assert vault.missing_property("aistor/users/loki", "secret_key")


# --- 3. RBAC a controller's API calls need ---------------------------------------------------------------


def _drop_resource(resource: str):
    def change(doc):
        for rule in doc.get("rules") or []:
            rule["resources"] = [r for r in rule["resources"] if r != resource]
        doc["rules"] = [r for r in doc.get("rules") or [] if r["resources"]]

    return change


def test_kueue_without_the_right_to_watch_its_workloads(site, inputs):
    """kueue v0.19.2's Workload controller lists and watches Workloads: without the rule its caches
    never sync and the manager is not Ready."""
    tree = edited(inputs, ONE, f"{APPS}/kueue/clusterrole.kueue-manager-role", _drop_resource("workloads"))
    blocked(
        run(site, inputs, ONE, tree=tree),
        "ai-kueue", "kueue-controller-manager",
        'workloads.kueue.x-k8s.io is forbidden: User "system:serviceaccount:kueue-system:kueue-controller-manager" '
        'cannot list resource "workloads" in API group "kueue.x-k8s.io" at the cluster scope',
    )  # fmt: skip


def test_kueue_granted_every_verb_on_its_workloads_comes_up(site, inputs):
    def every_verb(doc):
        for rule in doc["rules"]:
            if "workloads" in rule["resources"]:
                rule["verbs"] = ["*"]

    up(site, inputs, tree=edited(inputs, ONE, f"{APPS}/kueue/clusterrole.kueue-manager-role", every_verb))


def test_external_secrets_without_the_right_to_ask_a_reader_token(site, inputs):
    """Each SecretStore's Kubernetes auth has the controller create a token for the store's reader
    account (providers/v1/vault/auth.go): refused, every store is not Ready."""
    tree = edited(
        inputs, ONE, f"{APPS}/external-secrets/clusterrole.external-secrets-controller",
        _drop_resource("serviceaccounts/token"),
    )  # fmt: skip
    blocked(
        run(site, inputs, ONE, tree=tree),
        "SecretStore", 'cannot request Kubernetes service account token for service account "vault-reader"',
        'cannot create resource "serviceaccounts/token"',
    )  # fmt: skip


def test_rbac_as_the_authorizer_reads_it():
    call = ApiCall("w", "create", "serviceaccounts/token", name="vault-reader")
    named = {
        "apiGroups": [""],
        "resources": ["serviceaccounts/token"],
        "verbs": ["create"],
        "resourceNames": ["vault-reader"],
    }
    assert controllers.grants([named], call)
    assert not controllers.grants([named], ApiCall("w", "create", "serviceaccounts/token", name="other"))
    assert controllers.grants([{"apiGroups": [""], "resources": ["serviceaccounts/*"], "verbs": ["*"]}], call)
    assert not controllers.grants(
        [{"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["*"]}], call
    )
    listing = ApiCall("w", "list", "workloads", "kueue.x-k8s.io")
    assert not controllers.grants(
        [{**named, "apiGroups": ["*"], "resources": ["*"], "verbs": ["list"]}], listing
    )


def test_at_least_four_components_declare_their_controllers_calls():
    declaring = [kind.name for kind in COMPONENTS if kind.runtime_needs.api]
    assert len(declaring) >= 4, declaring
    assert all(call.source for kind in COMPONENTS for call in kind.runtime_needs.api)


# --- 4. network policy for the controllers' own egress ---------------------------------------------------


def _egress(namespace: str, change):
    def edit(doc):
        if doc["kind"] == "CiliumNetworkPolicy":
            doc["spec"]["egress"] = change(doc["spec"]["egress"])

    return edit


def _without_entity(entity: str):
    return lambda rules: [r for r in rules if entity not in (r.get("toEntities") or [])]


def test_a_namespace_policy_without_egress_to_the_api_server(site, inputs):
    tree = edited(
        inputs, ONE, f"{APPS}/network-policies/velero.ciliumnetworkpolicy.site-flows",
        _egress("velero", _without_entity("kube-apiserver")),
    )  # fmt: skip
    blocked(
        run(site, inputs, ONE, tree=tree),
        "ai-velero", "Deployment velero/velero", "network policies of namespace velero",
        "no egress to the API server (port 6443)",
    )  # fmt: skip


def test_egress_to_the_api_server_on_its_port_only_comes_up(site, inputs):
    def on_its_port(rules):
        return [
            {**r, "toPorts": [{"ports": [{"port": "6443", "protocol": "TCP"}]}]}
            if "kube-apiserver" in (r.get("toEntities") or []) else r
            for r in rules
        ]  # fmt: skip

    path = f"{APPS}/network-policies/velero.ciliumnetworkpolicy.site-flows"
    up(site, inputs, tree=edited(inputs, ONE, path, _egress("velero", on_its_port)))


def test_external_secrets_cut_off_from_the_vault(site, inputs):
    """The controller calls the vault itself: without egress to its address no store validates."""
    tree = edited(
        inputs, ONE, f"{APPS}/network-policies/external-secrets.ciliumnetworkpolicy.site-flows",
        _egress("external-secrets", _without_entity("world")),
    )  # fmt: skip
    blocked(
        run(site, inputs, ONE, tree=tree),
        "SecretStore", "external-secrets/external-secrets cannot reach the vault",
        "no egress to the vault vault.hpc.example.internal:8200",
    )  # fmt: skip


def test_egress_rules_as_cilium_reads_them():
    dns, api = controllers.DNS, controllers.API_SERVER
    vault = controllers.vault_destination("vault.example", 8200)
    dns_rule = {"toEndpoints": [{"matchLabels": {"k8s:io.kubernetes.pod.namespace": "kube-system", "k8s:k8s-app": "kube-dns"}}],
                "toPorts": [{"ports": [{"port": "53", "protocol": "ANY"}]}]}  # fmt: skip
    assert controllers._cilium_allows(dns_rule, "velero", dns)
    assert not controllers._cilium_allows({"toEndpoints": [{}]}, "velero", dns)  # its own namespace only
    assert controllers._cilium_allows({"toEntities": ["cluster"]}, "velero", api)
    assert not controllers._cilium_allows({"toEntities": ["world"]}, "velero", api)
    assert controllers._cilium_allows({"toFQDNs": [{"matchPattern": "*.example"}]}, "velero", vault)
    tcp_only = {"toEntities": ["world"], "toPorts": [{"ports": [{"port": "8200", "protocol": "UDP"}]}]}
    assert not controllers._cilium_allows(tcp_only, "velero", vault)
