"""A custom resource in a version its CRD does not serve: the API server (kube-apiserver v1.35's
apiextensions-apiserver) installs a REST endpoint only for the versions a CRD lists with `served: true`,
so a client's REST mapping of `<group>/<version>, Kind=<kind>` fails before anything is sent, as
kubectl says it (`resource mapping not found ...: no matches for kind "X" in version "g/v"`; Argo CD's
sync reports the same mapping failure). The CRD is read as the cluster holds it (the last one applied).

Not modelled: built-in kinds in a version the API server no longer serves (the schema validation of
validation.py judges those), kinds an aggregated APIService serves (runtime groups: their versions are
the extension server's), a CRD whose kind is served only after its Established condition (immediate
here), and conversion between served versions (a conversion webhook that is down: the webhook's rules).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sitegen.check.bringup.kube import group_of
from sitegen.check.bringup.objects import ClusterObjects
from sitegen.check.bringup.refusals.types import CreateCheck, PodCheck
from sitegen.tree.fields import dig


def served_versions(crd: Mapping[str, Any]) -> list[str]:
    """The versions a CRD serves, in the order it lists them."""
    return [str(v.get("name")) for v in dig(crd, "spec", "versions") or [] if v.get("served")]


def unserved_version(body: Mapping[str, Any], cluster: ClusterObjects) -> str | None:
    group, kind = group_of(body), str(body.get("kind"))
    found = cluster.crds.get((group, kind))
    if found is None:  # a built-in kind, an aggregated API's, or one not served at all (argo.py says so)
        return None
    crd = cluster.find("CustomResourceDefinition", "", f"{found[0]}.{group}")
    if crd is None:
        return None
    version = str(body.get("apiVersion", "")).rpartition("/")[2]
    served = served_versions(crd.body)
    if version in served:
        return None
    return (
        f'resource mapping not found: no matches for kind "{kind}" in version "{group}/{version}" '
        f"(CustomResourceDefinition {found[0]}.{group} serves {', '.join(served) or 'no version'})"
    )


ON_CREATE: tuple[CreateCheck, ...] = (unserved_version,)
ON_POD: tuple[PodCheck, ...] = ()
