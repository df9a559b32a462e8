"""One reader of dist/'s layout (sitegen.model.paths.DistPath): what a path of the tree is, read back
the way the writers lay it out, and no other module taking dist/ paths apart by hand."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

from sitegen.model import paths
from sitegen.model.paths import DistPath

from .conftest import REPO

# Modules whose `parts[...]` take apart something other than a dist/ path, and what.
OTHER_PARTS = {
    "sitegen/model/paths.py": "the dist/ reader itself",
    "sitegen/report/components.py": "a component's source file, for the component table",
    "sitegen/compose/fingerprint.py": "the repository's own files (code and vendored charts)",
    "sitegen/compose/chart_values.py": "a chart archive's members (subcharts' values files)",
    "sitegen/check/bringup/refusals/multus.py": "a pod's network-attachment annotation",
    "sitegen/check/bringup/refusals/formats.py": "a label or annotation key (prefix/name)",
    "sitegen/check/bringup/apiserver.py": "an API URL the guard script calls",
    "sitegen/check/appsets.py": "an ApplicationSet template expression",
}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (paths.app_dir("one-cluster", "ai", "kueue") / "x.yaml", ("one-cluster", "apps", "ai", "kueue")),
        (paths.values_file("two-cluster", "aistor", "directpv"), ("two-cluster", "values", "aistor", None)),
        (paths.kubeadm_dir("one-cluster", "ai") / "init.yaml", ("one-cluster", "kubeadm", "ai", None)),
        (paths.bootstrap_dir("one-cluster") / paths.RUNBOOK, ("one-cluster", "bootstrap", None, None)),
        (
            paths.cluster_root_dir("two-cluster", "aistor", hub=False) / "a.yaml",
            ("two-cluster", "bootstrap", None, None),
        ),
        (
            paths.kubeadm_dir("one-cluster", "ai"),
            ("one-cluster", "kubeadm", "ai", None),
        ),  # a cluster's folder
    ],
)
def test_a_path_reads_back_as_it_was_laid_out(path, expected):
    where = DistPath(path)
    assert (where.variant, where.area, where.cluster, where.app) == expected


def test_a_cluster_files_path_below_its_cluster():
    where = DistPath(paths.kubeadm_dir("one-cluster", "ai") / "patches" / "etcd.json")
    assert where.in_cluster == PurePosixPath("patches/etcd.json")
    assert DistPath.of("one-cluster/bootstrap/RUNBOOK.md").in_variant == PurePosixPath("bootstrap/RUNBOOK.md")


def test_no_module_takes_dist_paths_apart_by_hand():
    offenders = sorted(
        str(p.relative_to(REPO))
        for p in [*(REPO / "sitegen").rglob("*.py"), *(REPO / "constructs").glob("*.py")]
        if "parts[" in p.read_text() and str(p.relative_to(REPO)) not in OTHER_PARTS
    )
    assert offenders == [], "read dist/ paths with sitegen.model.paths.DistPath"
    for module in OTHER_PARTS:  # an entry whose module no longer needs it goes
        assert "parts[" in (REPO / module).read_text(), module
