"""Helpers of the bring-up tests: run a variant, edit a copy of its tree or runbook, read the blocker."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

from sitegen.check.bringup import Result, Simulation, bringup, timeline
from sitegen.model import resolve

Tree = dict[PurePosixPath, list[dict[str, Any]]]
ONE, TWO = "one-cluster", "two-cluster"


def run(site, inputs, variant: str = ONE, *, tree=None, texts=None) -> Result:
    base_tree, base_texts = inputs[variant]
    return bringup(site, variant, base_tree if tree is None else tree, base_texts if texts is None else texts)


def edited(inputs, variant: str, where: str, change: Callable[[dict[str, Any]], Any]) -> Tree:
    """A copy of the variant's tree in which `change` edited (or, returning False, dropped) each
    document of the files under `where`."""
    tree = dict(inputs[variant][0])
    hits = 0
    for path in [p for p in tree if str(p).startswith(where)]:
        kept = []
        for doc in copy.deepcopy(tree[path]):
            if change(doc) is not False:
                kept.append(doc)
            hits += 1
        tree[path] = kept
    assert hits, where
    return tree


def runbook_without(inputs, variant: str, pattern: str) -> dict[PurePosixPath, str]:
    texts = dict(inputs[variant][1])
    path = PurePosixPath(variant, "bootstrap", "RUNBOOK.md")
    text, count = re.subn(pattern, "", texts[path], flags=re.M)
    assert count, pattern
    texts[path] = text
    return texts


def blocked(result: Result, *needles: str) -> str:
    assert result.blocker is not None, timeline(result)
    text = str(result.blocker)
    for needle in needles:
        assert needle in text, text
    return text


def rewaved(inputs, variant: str, app: str, wave: int) -> tuple[Tree, dict[PurePosixPath, str]]:
    """The variant with one generated app (`<cluster>/<app>`) moved to another wave: its element says
    so, and it is named by its cluster's ApplicationSet of that wave and its project (a copy of the set
    that named it, at that wave in its root) instead."""
    texts = dict(inputs[variant][1])
    path = PurePosixPath(variant, "apps", app, "app.json")
    element = json.loads(texts[path])
    element["wave"] = str(wave)
    texts[path] = json.dumps(element)
    cluster = app.split("/")[0]
    repo_path = f"dist/{path}"
    tree = dict(inputs[variant][0])
    sets = sorted(p for p in tree if p.name.startswith(f"argocd.applicationset.{cluster}-wave-"))
    (source,) = [p for p in sets if any(f["path"] == repo_path for f in _files(tree[p][0]))]
    (body,) = copy.deepcopy(tree[source])
    _files(body).remove({"path": repo_path})
    tree[source] = [body]
    project = body["spec"]["template"]["spec"]["project"]
    target = source.with_name(f"argocd.applicationset.{cluster}-wave-{wave}-{project}.yaml")
    if target in tree:
        (moved,) = copy.deepcopy(tree[target])
    else:
        moved = copy.deepcopy(body)
        moved["metadata"]["name"] = f"{cluster}-wave-{wave}-{project}"
        moved["metadata"]["labels"]["sitegen.io/wave"] = str(wave)
        moved["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] = str(wave)
        _files(moved).clear()
    _files(moved).append({"path": repo_path})
    tree[target] = [moved]
    if not _files(body):
        del tree[source]
    return tree, texts


def _files(appset: dict[str, Any]) -> list[dict[str, str]]:
    return appset["spec"]["generators"][0]["git"]["files"]


def installed(site, inputs, variant: str = ONE) -> Simulation:
    """The variant brought up, its simulation kept for a day-2 scenario or a look at its apps."""
    tree, texts = inputs[variant]
    sim = Simulation(resolve(site, variant), tree, texts, argocd_namespace=site.gitops.argocd.namespace)
    assert sim.run().ok
    return sim


def with_runbook_edited(sim: Simulation, variant: str, edit: Callable[[str], str]) -> None:
    """The simulation reads the variant's RUNBOOK as `edit` leaves it (it must change something)."""
    path = PurePosixPath(variant, "bootstrap", "RUNBOOK.md")
    texts = dict(sim.state.texts)
    texts[path] = edit(texts[path])
    assert texts[path] != sim.state.texts[path]
    sim.state.texts = texts
