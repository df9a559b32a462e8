"""Facts of the Kubernetes API that the model and the composition both need."""

from __future__ import annotations

# Kinds of the built-in API that are cluster-scoped (by group, kind); everything else a chart renders
# is namespaced unless a CRD of the cluster says otherwise.
CORE_CLUSTER_KINDS = frozenset(
    {
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("apiregistration.k8s.io", "APIService"),
        ("certificates.k8s.io", "CertificateSigningRequest"),
        ("certificates.k8s.io", "ClusterTrustBundle"),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
        ("networking.k8s.io", "IngressClass"),
        ("networking.k8s.io", "IPAddress"),
        ("networking.k8s.io", "ServiceCIDR"),
        ("node.k8s.io", "RuntimeClass"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("resource.k8s.io", "DeviceClass"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("storage.k8s.io", "CSIDriver"),
        ("storage.k8s.io", "CSINode"),
        ("storage.k8s.io", "StorageClass"),
        ("storage.k8s.io", "VolumeAttachment"),
        ("storage.k8s.io", "VolumeAttributesClass"),
    }
)
