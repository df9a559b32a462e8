"""The benchmark's 10x site is a valid config (the budget is measured on a site that synthesizes)."""

from __future__ import annotations

from sitegen.model import load_site
from sitegen.report.bench import scaled_config, set_health_age

from .conftest import CONFIG, tree_bytes


def test_the_scaled_site_loads_with_ten_times_the_workers(tmp_path, site):
    nodes = scaled_config(CONFIG, tmp_path / "scaled", 10)
    scaled = load_site(tmp_path / "scaled")
    control_plane = site.pools["control-plane"].count  # etcd stays at its size
    workers = sum(p.count for p in site.pools.values()) - control_plane
    assert nodes == control_plane + 10 * workers == sum(len(p.hosts) for p in scaled.pools.values())


def test_the_edit_loops_change_touches_one_construct_file_and_no_chart(
    config_copy, tmp_path, linked_copy, site
):
    """The edit loop is measured on a change a site owner makes: it must reach dist/ (else synth
    measures nothing) and touch no chart (else it measures a render)."""
    from .conftest import DIST, invoke_sitegen

    out = linked_copy(DIST / "one-cluster", tmp_path / "dist" / "one-cluster").parent
    before = tree_bytes(out)
    set_health_age(config_copy, site.services.health.max_age_days + 1)
    assert load_site(config_copy).model_copy(update={"services": site.services}) == site.model_copy(
        update={"services": site.services}
    )
    result = invoke_sitegen("synth", "--config", config_copy, "--variant", "one-cluster", "--out", out)
    assert result.exit_code == 0, result.output
    after = tree_bytes(out)
    changed = sorted(p for p in after if after[p] != before.get(p))
    assert changed == ["one-cluster/apps/ai/observability/monitoring.prometheusrule.site.yaml"]
