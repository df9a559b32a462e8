"""Every component's output on the small site, snapshotted: its objects or its values document.

Parametrized from the registry, so a new component is snapshotted without a line here. The one-cluster
variant, and the `aistor` cluster of two-cluster (the components that differ outside the hub).
"""

from __future__ import annotations

import pytest

from sitegen.compose.apps import variant_apps
from sitegen.model import load_site, resolve

from ..pins import pin_placeholders, unpinned
from .conftest import SMALL_SITE, context, output

_site = load_site(SMALL_SITE)
_PINS = pin_placeholders(_site.versions)
CASES = [
    (variant, cluster.name, component.name)
    for variant, clusters in (("one-cluster", None), ("two-cluster", "aistor"))
    for cluster in resolve(_site, variant).clusters
    if clusters is None or cluster.name == clusters
    for component in variant_apps(_site, resolve(_site, variant)).by_cluster[cluster.name]
]


@pytest.mark.parametrize(("variant", "cluster", "app"), CASES, ids=["/".join(c) for c in CASES])
def test_component_output(one, two, variant, cluster, app, snapshot):
    ctx = context(one if variant == "one-cluster" else two, cluster)
    component = next(c for c in ctx.components if c.name == app)
    assert unpinned(output(ctx, component), _PINS) == snapshot
