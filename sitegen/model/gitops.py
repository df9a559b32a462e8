"""config/gitops.yaml: the repository Argo CD reads, and where Argo CD itself lives."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from sitegen.model.fields import DnsLabel, DnsName, HttpsUrl, Strict

GroupName = Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z0-9._:/@-]+$")]


class Sso(Strict):
    """The site's OIDC provider: Argo CD's only way in (its local admin is disabled)."""

    issuer: HttpsUrl
    client_id: Annotated[str, Field(min_length=1)]
    groups_claim: Annotated[str, Field(min_length=1)] = "groups"


class ArgoCD(Strict):
    namespace: DnsLabel = "argocd"
    hostname: DnsName
    sso: Sso
    # the identity provider's groups and the built-in Argo CD role each gets; nobody else gets any
    rbac: Annotated[dict[GroupName, Literal["admin", "readonly"]], Field(min_length=1)]
    # Lifetime of the bound token Argo CD manages a spoke with (the RUNBOOK issues and rotates it).
    spoke_token_days: Annotated[int, Field(ge=1, le=365)] = 90


GpgKeyId = Annotated[str, Field(pattern=r"^[0-9A-F]{16}$")]


class GitOps(Strict):
    repo_url: Annotated[str, Field(pattern=r"^(https://|ssh://|git@)\S+$")]
    revision: Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z0-9._/-]+$")]
    argocd: ArgoCD
    # Commit signature verification: GPG key ID (16 hex digits) -> ASCII-armoured public key. When set,
    # every project syncs only commits signed by one of them; empty: not verified.
    signature_keys: dict[
        GpgKeyId, Annotated[str, Field(pattern=r"^-----BEGIN PGP PUBLIC KEY BLOCK-----")]
    ] = {}
    # Applications a change of config/ removes (a component, tenant or cluster gone, or renamed), as
    # `<variant>/<application>` (or `<variant>`, all of its Applications: a variant dropped from
    # variants.yaml): synth refuses to drop one from dist/ unless it is listed here. Their
    # ApplicationSet deletes them and leaves their objects running, unmanaged (RUNBOOK: removing apps).
    acknowledged_removals: list[Annotated[str, Field(pattern=r"^[a-z0-9-]+(/[a-z0-9-]+)?$")]] = []
    # `<variant>/<cluster> <what>: <before> -> <after>`: synth refuses to move an address or name that
    # running clients or hosts hold (an S3 front door, a load-balancer pool, a rail's IPoIB blocks, the
    # API server's endpoint and certificate names) unless the move is listed here, as synth prints it.
    acknowledged_moves: list[Annotated[str, Field(pattern=r"^[a-z0-9-]+/[a-z0-9-]+ .+: .* -> .*$")]] = []
