"""Secrets and who may read them: the vault the runbook fills (vault.py: auth mounts, roles, policies,
keys), External Secrets' stores and their login to it, cert-manager's Certificates and their issuers'
CA Secrets, which object makes which Secret, and the RBAC the vault login depends on (read by
check/rbac.py, as the API server's authorizer reads it).

A Secret a chart's own Job writes is there once that Job ran (its component declares it: `job_secrets`).

Not modelled: the rights of a vault mount's own token reviewer, issuers beyond the CA Secret a CA issuer names (any
other issuer is ready once it exists).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from constructs.secrets import read_keys
from sitegen.check.bringup.kube import made_secret
from sitegen.check.bringup.objects import Applied, ClusterObjects
from sitegen.check.bringup.refusals.controllers import vault_login_refusal
from sitegen.components.catalog import COMPONENTS
from sitegen.components.ownership import JobSecret
from sitegen.tree.fields import dig

# Secret name -> the chart Job that writes it, as the components declare them
_JOB_SECRETS = {s.secret: s for kind in COMPONENTS for s in kind.job_secrets}


class Secrets:
    """Where Secrets come from: the vault through External Secrets, cert-manager, chart Jobs."""

    def __init__(self, cluster: ClusterObjects) -> None:
        self.cluster = cluster
        # Secrets that objects in dist/ make once their app syncs: (namespace, name) -> the app
        self.made_later: dict[tuple[str, str], str] = {}
        self._producers: dict[tuple[str, str], Applied] = {}
        self._producers_at = -1

    # ---- secrets and certificates ----------------------------------------------------------------
    def store_ready(self, kind: str, namespace: str, name: str) -> str | None:
        store = self.cluster.find(kind, "" if kind == "ClusterSecretStore" else namespace, name)
        if store is None:
            return f"{kind} {name} does not exist"
        if not self.cluster.controller_running("external-secrets.io", kind):
            return "the External Secrets controller is not running"
        auth = dig(store.body["spec"], "provider", "vault", "auth") or {}
        kube = auth.get("kubernetes")
        if kube is None:
            return None
        role = self.cluster.vault.roles.get((kube.get("mountPath", "kubernetes"), kube.get("role", "")))
        if role is None:
            return f"the vault has no role {kube.get('role')} on auth mount {kube.get('mountPath')}"
        account = kube.get("serviceAccountRef") or {}
        # a namespaced store's account is in the store's namespace, whatever the reference says
        account_ns = namespace if kind == "SecretStore" else account.get("namespace", "")
        if account.get("name") not in role.get("bound_service_account_names", "").split(","):
            return f"vault role {kube.get('role')} is not bound to service account {account.get('name')}"
        if account_ns not in role.get("bound_service_account_namespaces", "").split(","):
            return f"vault role {kube.get('role')} is not bound to namespace {account_ns}"
        if self.cluster.find("ServiceAccount", account_ns, account.get("name", "")) is None:
            return f"ServiceAccount {account_ns}/{account.get('name')} does not exist"
        vault = dig(store.body["spec"], "provider", "vault") or {}
        refused = vault_login_refusal(
            self.cluster, self.cluster.provider_of_kind("external-secrets.io", kind), str(vault.get("server", "")),
            (account_ns, account.get("name", "")),
        )  # fmt: skip
        if refused:
            return refused
        # External Secrets requests the login token with the reference's audiences (none: the API
        # server's own; external-secrets providers/v1/vault auth_kubernetes.go, TokenRequest)
        audiences = frozenset(account.get("audiences") or self.cluster.api_audiences)
        return self._vault_login(
            kube.get("mountPath", "kubernetes"), (account_ns, account.get("name", "")), role, audiences
        )

    def _vault_login(
        self, mount: str, account: tuple[str, str], role: Mapping[str, str], audiences: frozenset[str]
    ) -> str | None:
        """Vault's Kubernetes auth reviews the login token with the TokenReview API of the cluster: with
        the mount's token_reviewer_jwt when one is set, else with the login token itself (Vault outside
        the cluster), which must then be a token the API server accepts, of an account allowed to create
        tokenreviews. The review asks for the role's `audience` when it has one: the token must carry it
        (vault-plugin-auth-kubernetes, TokenReview spec.audiences)."""
        config = self.cluster.vault.mounts.get(mount)
        if config is None or not config.get("kubernetes_host"):
            return f"the vault's auth mount {mount} is not configured (no kubernetes_host)"
        wanted = role.get("audience")
        if wanted and wanted not in audiences:
            return (
                f"the vault login as {account[0]}/{account[1]} is refused: its role wants audience {wanted}, "
                f"and the login token is for {', '.join(sorted(audiences))}"
            )
        if config.get("token_reviewer_jwt"):
            return None  # a reviewer of its own: its rights are the runbook's to give (not modelled)
        if not audiences & self.cluster.api_audiences:
            return (
                f"the vault login as {account[0]}/{account[1]} is refused: mount {mount} reviews a login with "
                f"the login's own token, which is for {', '.join(sorted(audiences))}, not the API server "
                f"({', '.join(sorted(self.cluster.api_audiences))}): the API server does not authenticate it"
            )
        if not self.cluster.rbac().may(account, "create", "authentication.k8s.io", "tokenreviews"):
            return (
                f"the vault login as {account[0]}/{account[1]} is refused: mount {mount} reviews a login with "
                "the login's own token, and that account may not create tokenreviews "
                "(no binding to system:auth-delegator)"
            )
        return None

    def readable_keys(self, store: Mapping[str, Any]) -> set[str]:
        kube = dig(store["spec"], "provider", "vault", "auth", "kubernetes") or {}
        role = self.cluster.vault.roles.get((kube.get("mountPath", "kubernetes"), kube.get("role", ""))) or {}
        return {
            k for p in role.get("policies", "").split(",") for k in self.cluster.vault.policies.get(p, set())
        }

    def external_secret_ready(self, body: Mapping[str, Any]) -> str | None:
        ref = body["spec"].get("secretStoreRef") or {}
        kind, name = ref.get("kind", "SecretStore"), ref["name"]
        ns = body["metadata"].get("namespace", "")
        down = self.store_ready(kind, ns, name)
        if down:
            return down
        store = self.cluster.find(kind, "" if kind == "ClusterSecretStore" else ns, name)
        assert store is not None
        readable = self.readable_keys(store.body)
        for key in sorted(read_keys(body)):
            if key not in self.cluster.vault.keys:
                return f"the vault holds no {key}"
            if readable and key not in readable:
                return f"no policy of the store's role reads {key}"
        for item in body["spec"].get("data") or []:
            ref = item.get("remoteRef") or {}
            if ref.get("property") and self.cluster.vault.missing_property(ref["key"], ref["property"]):
                # external-secrets v2.9.0 providers/v1/vault/client_get.go getSecretValue: errSecretKeyFmt
                held = ", ".join(sorted(self.cluster.vault.properties[ref["key"]] or ())) or "nothing"
                return (
                    f'SecretSyncedError: cannot find secret data for key: "{ref["property"]}" (the vault\'s '
                    f"{ref['key']} holds {held}): the target Secret is not created"
                )
        return None

    def certificate_ready(self, namespace: str, name: str) -> bool:
        cert = self.cluster.find("Certificate", namespace, name)
        return cert is not None and self.certificate_blocker(cert.body) is None

    def certificate_blocker(self, body: Mapping[str, Any]) -> str | None:
        if not self.cluster.controller_running("cert-manager.io", "Certificate"):
            return "cert-manager is not running"
        issuer = body["spec"]["issuerRef"]
        kind = issuer.get("kind", "Issuer")
        found = self.cluster.find(
            kind, "" if kind == "ClusterIssuer" else body["metadata"]["namespace"], issuer["name"]
        )
        if found is None:
            return f"{kind} {issuer['name']} does not exist"
        ca = dig(found.body["spec"], "ca", "secretName")
        if ca:
            missing = self.secret_blocker(self.issuer_namespace(found), ca)
            if missing:
                return f"{kind} {issuer['name']}'s CA Secret {ca}: {missing}"
        return None

    def issuer_namespace(self, issuer: Applied) -> str:
        ns = issuer.body["metadata"].get("namespace")
        if ns:
            return str(ns)
        # a ClusterIssuer reads its Secret from cert-manager's own namespace
        owner = self.cluster.provider_of_kind("cert-manager.io", "ClusterIssuer")
        return next((w.template.namespace for w in self.cluster.owner_apps(owner or "")), "cert-manager")

    def _secret_producers(self) -> dict[tuple[str, str], Applied]:
        """(namespace, Secret name) -> the object that makes it: a Secret, ExternalSecret or Certificate."""
        if self._producers_at != len(self.cluster.objects):
            self._producers = {}
            for applied in self.cluster.objects.values():
                made = made_secret(applied.body)
                if made is not None:
                    self._producers[made] = applied
            self._producers_at = len(self.cluster.objects)
        return self._producers

    def secret_blocker(self, namespace: str, name: str) -> str | None:
        """None when the Secret is there, else why not: an object of dist/ makes it, a chart's own Job
        writes it (references.py, once the Job ran), or it is a reviewed external one."""
        producer = self._secret_producers().get((namespace, name))
        if producer is None and (namespace, name) in self.made_later:
            return f"{self.made_later[(namespace, name)]} makes it and has not synced"
        if producer is None:
            writer = _JOB_SECRETS.get(name)
            if writer is not None:
                return self._written_by_job(namespace, name, writer)
            if self.cluster.resolves("Secret", namespace, name):
                return None
            return f"nothing makes Secret {namespace}/{name} (no object of dist/, no modelled writer)"
        kind = producer.body["kind"]
        if kind == "ExternalSecret":
            return self.external_secret_ready(producer.body)
        if kind == "Certificate":
            return self.certificate_blocker(producer.body)
        return None

    def _written_by_job(self, namespace: str, name: str, writer: JobSecret) -> str | None:
        jobs = [
            w for w in self.cluster.workloads.values()
            if w.template.kind == "Job" and w.template.namespace == namespace and w.template.name.startswith(writer.job)
        ]  # fmt: skip
        if not jobs:
            return f"the Job that writes it ({writer.job}: {writer.why}) is not in dist/"
        if not any(w.done for w in jobs):
            return f"{jobs[0].template.ref} writes it and has not run: {jobs[0].reason}"
        self.cluster.assumed.add(
            f"Secret {namespace}/{name}: written by Job {jobs[0].template.name} ({writer.why})"
        )
        return None
