"""config/versions.yaml: the pinned Kubernetes version, charts and images (reviewed data, with sources)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from sitegen.model.fields import ConfigError, DnsLabel, ExactVersion, HttpsUrl, ImageTag, Strict


class ChartPin(Strict):
    chart: str
    repo: Annotated[str, Field(pattern=r"^(https://|oci://)\S+$")]
    version: ExactVersion

    @property
    def is_oci(self) -> bool:
        return self.repo.startswith("oci://")

    @property
    def argo_repo(self) -> str:
        """The repoURL Argo CD takes: an OCI Helm registry without its scheme (registered with enableOCI)."""
        return self.repo.removeprefix("oci://")


class ImagePin(Strict):
    repository: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._/-]*$")]
    tag: ImageTag
    # Renovate adds and keeps it (pinDigests) where it can reach the registry; never typed by hand
    digest: Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")] | None = None

    @property
    def ref(self) -> str:
        return f"{self.repository}:{self.pinned_tag}"

    @property
    def pinned_tag(self) -> str:
        """The tag as values that join `repository:tag` take it: with the digest when there is one."""
        return f"{self.tag}@{self.digest}" if self.digest else self.tag


class ManifestPin(Strict):
    url: HttpsUrl
    version: ExactVersion
    channel: str | None = None


class Versions(Strict):
    kubernetes: Annotated[str, Field(pattern=r"^v1\.\d+\.\d+$")]
    charts: dict[DnsLabel, ChartPin]
    images: dict[DnsLabel, ImagePin]
    manifests: dict[DnsLabel, ManifestPin] = {}

    @property
    def kubernetes_minor(self) -> str:
        return self.kubernetes.rsplit(".", 1)[0]

    def chart_pins(self, keys: Iterable[str]) -> dict[str, ChartPin]:
        """The pins of these chart keys (what the chart store supplies and checks), by key."""
        return {key: self.charts[key] for key in sorted(set(keys))}


@dataclass(frozen=True)
class PinNeeds:
    """The chart and image keys the generator uses, each with what needs it (for the error)."""

    charts: Mapping[str, str]
    images: Mapping[str, str]


def check_pins(versions: Versions, needs: PinNeeds) -> None:
    for name, needed_by in needs.images.items():
        if name not in versions.images:
            raise ConfigError(("versions", "images", name), f"missing pin (needed by {needed_by})")
    for name, needed_by in needs.charts.items():
        if name not in versions.charts:
            raise ConfigError(("versions", "charts", name), f"missing pin (needed by {needed_by})")
