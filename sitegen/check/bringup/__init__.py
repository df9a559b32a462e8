"""`sitegen bringup`: the offline first install of a variant (see simulate.py), then day 2 (day2.py)."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path, PurePosixPath
from typing import Any

from sitegen.check.bringup.day2 import replay as replay_day2
from sitegen.check.bringup.events import Blocker, Event, Result, Stop
from sitegen.check.bringup.simulate import Simulation
from sitegen.check.bringup.state import Texts, Tree
from sitegen.compose.tools import every_cpu
from sitegen.compose.writer import OutputFile, render
from sitegen.model import Site, VariantLayout, paths, resolve
from sitegen.model.maintenance import Budget
from sitegen.tree.documents import parse_documents

__all__ = ["Blocker", "Event", "Result", "bring_up_dist", "bringup", "from_dist", "from_files", "timeline"]


def _is_text(path: PurePosixPath) -> bool:
    """Files the simulation reads as text: the runbook, host scripts, host configs (their headers), the
    S3 key policies the runbook attaches."""
    return path.suffix in (".md", ".sh", ".json") or paths.DistPath(path).area == paths.KUBEADM


def from_dist(dist: Path, variant: str) -> tuple[Tree, Texts]:
    tree: dict[PurePosixPath, list[dict[str, Any]]] = {}
    texts: dict[PurePosixPath, str] = {}
    for file in sorted((dist / variant).rglob("*")):
        if not file.is_file():
            continue
        rel = PurePosixPath(file.relative_to(dist).as_posix())
        data = file.read_bytes()
        if rel.suffix == ".yaml":
            tree[rel] = [b for b in parse_documents(data)[1] if isinstance(b, dict)]
        if _is_text(rel):
            texts[rel] = data.decode("utf-8")
    return tree, texts


def from_files(files: Iterable[OutputFile], variant: str) -> tuple[Tree, Texts]:
    tree: dict[PurePosixPath, list[dict[str, Any]]] = {}
    texts: dict[PurePosixPath, str] = {}
    for file in files:
        if paths.DistPath(file.path).variant != variant:
            continue
        if file.path.suffix == ".yaml":
            # hydrated chart objects come pre-rendered (text), ours as documents
            docs = (
                file.documents
                if file.documents or file.text is None
                else parse_documents(file.text.encode())[1]
            )
            tree[file.path] = [d for d in docs if isinstance(d, dict)]
        if _is_text(file.path):
            texts[file.path] = render(file)
    return tree, texts


def bringup(site: Site, variant: str, tree: Tree, texts: Texts, *, day2: bool = True) -> Result:
    """The first install of `variant`; once it is up, with `day2`, the day-2 scenarios on it."""
    layout = resolve(site, variant)
    simulation = Simulation(layout, tree, texts, argocd_namespace=site.gitops.argocd.namespace)
    result = simulation.run()
    if result.ok and day2:
        try:
            replay_day2(simulation, _budgets(site, layout))
        except Stop as stop:
            simulation.state.result.blocker = stop.blocker
    result.assumed = sorted({a for cluster in simulation.state.clusters.values() for a in cluster.assumed})
    return result


def bring_up_dist(site: Site, dist: Path, variants: list[str]) -> list[Result]:
    """Each variant's bring-up from dist/, the variants side by side: a process each, forked once the
    modules are loaded (a variant is seconds of pure Python, and the variants share nothing)."""
    cores = os.cpu_count() or 1
    if len(variants) < 2 or cores < 2:
        return [_bring_up_one(site, dist, v) for v in variants]
    fork = multiprocessing.get_context("fork")
    # on every CPU again: the CLI keeps itself on one for cdk8s (compose.tools.converse_on_one_cpu)
    with ProcessPoolExecutor(min(len(variants), cores), mp_context=fork, initializer=every_cpu) as pool:
        return list(pool.map(_bring_up_one, [site] * len(variants), [dist] * len(variants), variants))


def _bring_up_one(site: Site, dist: Path, variant: str) -> Result:
    return bringup(site, variant, *from_dist(dist, variant))


def _budgets(site: Site, layout: VariantLayout) -> dict[str, dict[str, Budget]]:
    """The model's maintenance budgets per cluster, by pool (AIStor's server pools as pool/pool-N)."""
    found = {}
    for cluster in layout.clusters:
        cp = cluster.control_plane
        budgets = site.pool_budgets(
            (cp.name, len(cp.hosts)), ((p.name, len(p.hosts)) for p in cluster.worker_pools)
        )
        found[cluster.name] = {b.pool: b for b in budgets}
    return found


def timeline(result: Result) -> str:
    lines = [f"bring-up of {result.variant}"]
    for event in result.timeline:
        lines.append(f"  [{event.cluster}] {event.step}: {event.what}")
    if result.retried:
        lines.append(f"  {len(result.retried)} sync attempts failed and were retried by their own app")
    if result.assumed:
        lines.append(
            "  assumed (reviewed: check/bringup/references.py, health.py, the components' job_secrets):"
        )
        lines += [f"    - {what}" for what in result.assumed]
    lines.append(f"BLOCKED {result.blocker}" if result.blocker else "OK: every Application Healthy")
    return "\n".join(lines)
