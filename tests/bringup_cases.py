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
    so, and its cluster has an ApplicationSet for that wave (a copy of one of its others, at that wave
    in its root)."""
    texts = dict(inputs[variant][1])
    path = PurePosixPath(variant, "apps", app, "app.json")
    element = json.loads(texts[path])
    element["wave"] = str(wave)
    texts[path] = json.dumps(element)
    cluster = app.split("/")[0]
    tree = dict(inputs[variant][0])
    sets = sorted(p for p in tree if p.name.startswith(f"argocd.applicationset.{cluster}-wave-"))
    target = sets[0].with_name(f"argocd.applicationset.{cluster}-wave-{wave}.yaml")
    if target not in tree:
        (body,) = copy.deepcopy(tree[sets[0]])
        body["metadata"]["name"] = f"{cluster}-wave-{wave}"
        body["metadata"]["labels"]["sitegen.io/wave"] = str(wave)
        body["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] = str(wave)
        body["spec"]["generators"][0]["selector"]["matchLabels"]["wave"] = str(wave)
        tree[target] = [body]
    return tree, texts


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
