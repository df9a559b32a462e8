"""The bring-up keeps what it reads of one kind of object (RBAC, admission policies, webhooks, network
policies) until an object of that kind changes (`ClusterObjects.unchanged_kinds`): an apply, a
controller's or a person's write and a delete each make it read them again; nothing else does."""

from __future__ import annotations

from typing import Any

from sitegen.check.bringup.cluster import Cluster
from sitegen.check.bringup.objects import key_of
from sitegen.check.bringup.vault import Vault
from sitegen.check.netpol import End

ADMISSION = "admissionregistration.k8s.io/v1"


def _config_map(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "team"}}


def _refusing_policy() -> list[dict[str, Any]]:
    rules = [
        {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"], "operations": ["CREATE"]}
    ]
    policy = {
        "apiVersion": ADMISSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "no-config-maps"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": rules},
            "validations": [{"expression": "false", "message": "no ConfigMaps here"}],
        },
    }
    binding = {
        "apiVersion": ADMISSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "no-config-maps"},
        "spec": {"policyName": "no-config-maps", "validationActions": ["Deny"]},
    }
    return [policy, binding]


def _webhook(failure: str) -> dict[str, Any]:
    rules = [
        {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"], "operations": ["CREATE"]}
    ]
    service = {"namespace": "hooks", "name": "hook", "port": 443}
    hook = {
        "name": "hook.example.com",
        "failurePolicy": failure,
        "rules": rules,
        "clientConfig": {"service": service},
    }
    return {
        "apiVersion": ADMISSION,
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "hook"},
        "webhooks": [hook],
    }


def test_an_admission_policy_binding_applied_edited_and_deleted_is_read_each_time() -> None:
    cluster = Cluster("test", Vault())
    assert cluster.admission.admission_blocker(_config_map("a")) is None
    policy, binding = _refusing_policy()
    cluster.apply(policy, "app")
    cluster.apply(binding, "app")
    assert "no ConfigMaps here" in (cluster.admission.admission_blocker(_config_map("b")) or "")
    cluster.write_field(key_of(binding), "/spec/validationActions", ["Audit"], None)
    assert cluster.admission.admission_blocker(_config_map("c")) is None
    cluster.apply(binding, "app")
    assert cluster.admission.admission_blocker(_config_map("d")) is not None
    cluster.delete(key_of(binding))
    assert cluster.admission.admission_blocker(_config_map("e")) is None


def test_a_webhook_that_cannot_answer_refuses_until_its_failure_policy_is_ignore() -> None:
    cluster = Cluster("test", Vault())
    cluster.apply(_webhook("Fail"), "app")
    assert "cannot answer" in (cluster.admission.admission_blocker(_config_map("a")) or "")
    cluster.write_field(key_of(_webhook("Fail")), "/webhooks/0/failurePolicy", "Ignore", None)
    assert cluster.admission.admission_blocker(_config_map("b")) is None
    cluster.apply(_webhook("Fail"), "app")
    assert cluster.admission.admission_blocker(_config_map("c")) is not None


def test_the_network_policy_view_follows_a_default_deny_and_nothing_else() -> None:
    cluster = Cluster("test", Vault())
    view = cluster.admission.policy_view()
    source, dest = End(namespace="team"), End(namespace="other")
    assert view.allows(source, dest, 80)
    cluster.apply(_config_map("unrelated"), "app")
    assert cluster.admission.policy_view() is view
    deny = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "default-deny", "namespace": "team"},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
    }
    cluster.apply(deny, "app")
    assert not cluster.admission.policy_view().allows(source, dest, 80)
    cluster.delete(key_of(deny))
    assert cluster.admission.policy_view().allows(source, dest, 80)
