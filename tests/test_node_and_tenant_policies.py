"""The admission policies of the security review's H4 and M2: a node agent changes only its own Node and
never what the scheduler places platform components by; PersistentVolumes come from Git or a CSI
provisioner; a tenant pod mounts storage through claims, gets GPUs only from the device plugin, and never
holds the vault reader's token."""

from __future__ import annotations

import copy

import pytest

from sitegen.check.admission_policy import Policy, Request, denying_policies
from sitegen.tree.documents import load_tree

from .conftest import DIST

NODE_NAME = "authentication.kubernetes.io/node-name"


@pytest.fixture(scope="module")
def policies() -> dict[str, Policy]:
    docs = [d.body for d in load_tree(DIST) if d.variant == "one-cluster" and d.cluster == "ai"]
    return {p.name: p for p in denying_policies(docs)}


def _agent(account: str, on: str) -> Request:
    return Request(f"system:serviceaccount:{account}", operation="UPDATE", extra=((NODE_NAME, (on,)),))


TOPOLVM = "topolvm-node:topolvm-node"
NODE = {
    "apiVersion": "v1", "kind": "Node",
    "metadata": {"name": "gpu03", "labels": {"node-role.kubernetes.io/gpu": "true", "gpu-platform": "hgx-b300"},
                 "annotations": {"capacity.topolvm.io/cache": "100"}},
    "spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]},
}  # fmt: skip


def _node(change) -> dict:
    node = copy.deepcopy(NODE)
    change(node)
    return node


@pytest.mark.parametrize(
    ("change", "request_", "admitted"),
    [
        # TopoLVM's own work: its node's capacity annotation
        (lambda n: n["metadata"]["annotations"].update({"capacity.topolvm.io/cache": "90"}), _agent(TOPOLVM, "gpu03"), True),
        # the review's attack: another node, relabelled infra and untainted
        (lambda n: n["metadata"]["annotations"].update({"x": "y"}), _agent(TOPOLVM, "gpu04"), False),
        (lambda n: n["metadata"]["labels"].update({"node-role.kubernetes.io/infra": "true"}), _agent(TOPOLVM, "gpu03"), False),
        (lambda n: n["spec"].pop("taints"), _agent(TOPOLVM, "gpu03"), False),
        (lambda n: n["spec"].update({"unschedulable": True}), _agent(TOPOLVM, "gpu03"), False),
        (lambda n: n["metadata"]["labels"].pop("gpu-platform"), _agent(TOPOLVM, "gpu03"), False),
        # a token from no pod (no node name) changes nothing
        (lambda n: n["metadata"]["annotations"].update({"x": "y"}), Request(f"system:serviceaccount:{TOPOLVM}", operation="UPDATE"), False),
        # PowerScale's node plugin labels its own node with its topology keys
        (lambda n: n["metadata"]["labels"].update({"csi-isilon.dellemc.com/10.0.0.1": "csi-isilon.dellemc.com"}),
         _agent("isilon-node:csi-isilon-node", "gpu03"), True),
        # accounts that are not node agents are another policy's business
        (lambda n: n["spec"].pop("taints"), Request("system:serviceaccount:gpu-operator:gpu-operator", operation="UPDATE"), True),
    ],
)  # fmt: skip
def test_a_node_agent_changes_only_its_own_node(policies, change, request_, admitted):
    policy = policies["sitegen-node-agents-own-node"]
    node = _node(change)
    assert policy.matches(node, None, "UPDATE")
    assert (policy.refusal(node, request_, NODE) is None) is admitted


def _volume(**source) -> dict:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"}, "spec": source}


CSI = {"csi": {"driver": "csi-isilon.dellemc.com", "volumeHandle": "x"}}


@pytest.mark.parametrize(
    ("volume", "user", "admitted"),
    [
        (_volume(**CSI), "system:serviceaccount:isilon:csi-isilon-controller", True),
        (_volume(**CSI), "system:serviceaccount:isilon-node:csi-isilon-node", False),  # a node plugin
        (_volume(hostPath={"path": "/"}), "system:serviceaccount:topolvm-system:topolvm-controller", False),
        (_volume(nfs={"server": "nas", "path": "/ifs"}), "system:serviceaccount:velero:velero-server", False),
        (
            _volume(hostPath={"path": "/srv"}),
            "system:serviceaccount:argocd:argocd-application-controller",
            True,
        ),
        (_volume(**CSI), "oidc:alice", False),
    ],
)
def test_persistent_volumes_come_from_git_or_a_provisioner(policies, volume, user, admitted):
    policy = policies["sitegen-persistent-volumes"]
    assert policy.matches(volume, None, "CREATE")
    assert (policy.refusal(volume, Request(user)) is None) is admitted


def _pod(**spec) -> dict:
    base = {"containers": [{"name": "c", "image": "busybox"}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ai-research"},
            "spec": {**base, **spec}}  # fmt: skip


MANAGED = {"sitegen.io/kueue-managed": "true"}
TENANT = Request("oidc:alice", ("ai-research-users",))


@pytest.mark.parametrize(
    ("pod", "admitted"),
    [
        (_pod(volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}, {"name": "t", "emptyDir": {}}]), True),
        (_pod(volumes=[{"name": "d", "nfs": {"server": "nfs.powerscale", "path": "/ifs/ai/homes"}}]), False),
        (_pod(volumes=[{"name": "d", "csi": {"driver": "csi-isilon.dellemc.com"}}]), False),
        (_pod(containers=[{"name": "c", "image": "cuda", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}]), False),
        (_pod(ephemeralContainers=[{"name": "e", "image": "x", "env": [{"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "all"}]}]), False),
        # a raw block device of a local volume: its extents hold what the node's last tenant wrote
        (_pod(containers=[{"name": "c", "image": "x", "volumeDevices": [{"name": "d", "devicePath": "/dev/xvda"}]}],
              volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "raw"}}]), False),
        (_pod(initContainers=[{"name": "i", "image": "x", "volumeDevices": [{"name": "d", "devicePath": "/dev/xvda"}]}],
              volumes=[{"name": "d", "ephemeral": {"volumeClaimTemplate": {"spec": {"volumeMode": "Block"}}}}]), False),
        (_pod(containers=[{"name": "c", "image": "x", "volumeMounts": [{"name": "d", "mountPath": "/data"}]}],
              volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "cache"}}]), True),
        # the vault reader's token may have the API server review any token (system:auth-delegator)
        (_pod(serviceAccountName="vault-reader"), False),
        (_pod(serviceAccountName="default"), True),
    ],
)  # fmt: skip
def test_a_tenant_pod_uses_claims_and_the_device_plugin_only(policies, pod, admitted):
    policy = policies["sitegen-tenant-pods"]
    assert policy.matches(pod, MANAGED, "CREATE") and not policy.matches(pod, {}, "CREATE")
    assert (policy.refusal(pod, TENANT) is None) is admitted


@pytest.mark.parametrize(
    ("secret_type", "admitted"),
    [("kubernetes.io/service-account-token", False), ("Opaque", True), ("kubernetes.io/basic-auth", True)],
)
def test_a_tenant_namespace_holds_no_long_lived_token(policies, secret_type, admitted):
    """A token Secret naming the vault reader would give a tenant pod that account's token, which the pod
    rules keep it from running as."""
    secret = {
        "apiVersion": "v1", "kind": "Secret", "type": secret_type,
        "metadata": {"name": "t", "namespace": "ai-research",
                     "annotations": {"kubernetes.io/service-account.name": "vault-reader"}},
    }  # fmt: skip
    policy = policies["sitegen-tenant-secrets"]
    assert policy.matches(secret, MANAGED, "CREATE") and not policy.matches(secret, {}, "CREATE")
    assert (policy.refusal(secret, TENANT) is None) is admitted
