"""The API server's policy files: Secrets' encryption at rest, the audit policy, anonymous
authentication and the admission plugins' configuration (Pod Security, EventRateLimit).

They are host files, not kubeadm configuration: the runbook copies them to every control-plane node
before `kubeadm init` or join, and kubeadm's ClusterConfiguration points the API server's flags at
their paths (kubeadm.py).
"""

from __future__ import annotations

from constructs import Construct
from constructs import host_config as api
from constructs.host_file import HostFile, config_document

# Host paths the API server reads; the runbook creates them before `kubeadm init`.
AUDIT_POLICY = "/etc/kubernetes/audit/policy.yaml"
ADMISSION_CONFIG = "/etc/kubernetes/admission/admission.yaml"
AUTHENTICATION_CONFIG = "/etc/kubernetes/authn/authentication.yaml"
# CIS 1.2.1: anonymous requests only for the load balancer's and kubelet's health checks
ANONYMOUS_PATHS = ("/livez", "/readyz", "/healthz")
ENCRYPTION_CONFIG = "/etc/kubernetes/enc/enc.yaml"

# Events per second the API server accepts (burst after a quiet spell): for the whole server, per
# namespace (a noisy tenant cannot starve the rest) and per user.
EVENT_RATE_LIMITS = (("Server", 100, 200, None), ("Namespace", 20, 100, 2000), ("User", 10, 50, 2000))

ENCRYPTION_KEY_VAR = "ENCRYPTION_KEY"
ENCRYPTION_KEY_NAME = "key1"
ENCRYPTION_PROVIDER = "secretbox"  # XSalsa20-Poly1305: Kubernetes' advice over aescbc (padding oracle)


class ApiServerPolicies(Construct):
    """Audit policy, Pod Security admission defaults and Secrets' encryption at rest, the files the API
    server flags point at."""

    def __init__(self, scope: Construct, id: str, *, kubernetes_minor: str) -> None:
        super().__init__(scope, id)
        self._encryption()
        self._audit_policy()
        self._authentication()
        self._admission(kubernetes_minor)

    def _encryption(self) -> None:
        encryption = HostFile(
            self,
            "Encryption",
            file_name="encryption-config.yaml",
            header=(
                f"Secrets at rest: the key comes from the vault (${{{ENCRYPTION_KEY_VAR}}}, envsubst) into "
                f"{ENCRYPTION_CONFIG}, mode 0600, on every control-plane node before kubeadm init or join."
            ),
        )
        config_document(
            encryption,
            api.EncryptionConfiguration(
                resources=[
                    api.EncryptedResources(
                        resources=["secrets"],
                        providers=[
                            api.EncryptionProvider(
                                secretbox={
                                    "keys": [
                                        api.EncryptionKey(
                                            name=ENCRYPTION_KEY_NAME, secret=f"${{{ENCRYPTION_KEY_VAR}}}"
                                        )
                                    ]
                                }
                            ),
                            api.EncryptionProvider(identity={}),
                        ],
                    )
                ]
            ),
        )

    def _audit_policy(self) -> None:
        audit = HostFile(
            self,
            "AuditPolicy",
            file_name="audit-policy.yaml",
            header=f"Copy to {AUDIT_POLICY} on every control-plane node before kubeadm init or join.",
        )
        config_document(
            audit,
            api.AuditPolicy(
                omitStages=["RequestReceived"],
                rules=[
                    api.AuditRule(
                        level="None", nonResourceURLs=["/healthz*", "/livez*", "/readyz*", "/version"]
                    ),
                    api.AuditRule(
                        level="None", resources=[api.GroupResources(group="", resources=["events"])]
                    ),
                    api.AuditRule(
                        level="None",
                        users=["system:kube-scheduler", "system:kube-controller-manager"],
                        verbs=["get", "list", "watch"],
                    ),
                    # Secret payloads must never reach the log: metadata only.
                    api.AuditRule(
                        level="Metadata",
                        resources=[
                            api.GroupResources(
                                group="", resources=["secrets", "configmaps", "serviceaccounts/token"]
                            ),
                            api.GroupResources(group="authentication.k8s.io", resources=["tokenreviews"]),
                        ],
                    ),
                    api.AuditRule(
                        level="RequestResponse",
                        resources=[
                            api.GroupResources(group="rbac.authorization.k8s.io"),
                            api.GroupResources(group="admissionregistration.k8s.io"),
                        ],
                    ),
                    api.AuditRule(level="Metadata"),
                ],
            ),
        )

    def _authentication(self) -> None:
        authentication = HostFile(
            self,
            "Authentication",
            file_name="authentication-config.yaml",
            header=f"Copy to {AUTHENTICATION_CONFIG} on every control-plane node before kubeadm init or join.",
        )
        config_document(
            authentication,
            api.AuthenticationConfiguration(
                anonymous=api.Anonymous(
                    enabled=True, conditions=[api.AnonymousCondition(path=p) for p in ANONYMOUS_PATHS]
                )
            ),
        )

    def _admission(self, version: str) -> None:
        admission = HostFile(
            self,
            "Admission",
            file_name="admission-config.yaml",
            header=f"Copy to {ADMISSION_CONFIG} on every control-plane node before kubeadm init or join.",
        )
        config_document(
            admission,
            api.AdmissionConfiguration(
                plugins=[
                    api.AdmissionPlugin(
                        name="PodSecurity",
                        configuration=api.PodSecurityConfiguration(
                            apiVersion="pod-security.admission.config.k8s.io/v1",
                            kind="PodSecurityConfiguration",
                            # Unlabelled namespaces get baseline; every namespace we render is labelled.
                            defaults=api.PodSecurityDefaults(
                                enforce="baseline",
                                enforce_version=version,
                                audit="restricted",
                                audit_version=version,
                                warn="restricted",
                                warn_version=version,
                            ),
                            # Static control-plane pods (kube-vip, etcd) live here and need host access.
                            exemptions=api.PodSecurityExemptions(
                                usernames=[],
                                # none: an exempt request skips enforce, audit and warn; GPU pods
                                # need nothing baseline refuses (memlock is a host limit)
                                runtimeClasses=[],
                                namespaces=["kube-system"],
                            ),
                        ),
                    ),
                    api.AdmissionPlugin(
                        name="EventRateLimit",
                        configuration=api.EventRateLimitConfiguration(
                            apiVersion="eventratelimit.admission.k8s.io/v1alpha1",
                            kind="Configuration",
                            limits=[
                                api.EventRateLimit(type=kind, qps=qps, burst=burst, cacheSize=cache)
                                for kind, qps, burst, cache in EVENT_RATE_LIMITS
                            ],
                        ),
                    ),
                ]
            ),
        )
