"""config/gitops.yaml: the repository Argo CD reads, and where Argo CD itself lives."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from sitegen.model.fields import DnsLabel, DnsName, Strict


class ArgoCD(Strict):
    namespace: DnsLabel = "argocd"
    hostname: DnsName


class GitOps(Strict):
    repo_url: Annotated[str, Field(pattern=r"^(https://|ssh://|git@)\S+$")]
    revision: Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z0-9._/-]+$")]
    argocd: ArgoCD
