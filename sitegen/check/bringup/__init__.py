"""`sitegen bringup`: the offline first install of a variant (see simulate.py)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from sitegen.check.bringup.simulate import Blocker, Event, Result, Simulation, Texts, Tree
from sitegen.check.tree import parse_documents
from sitegen.compose import paths
from sitegen.compose.writer import OutputFile, render
from sitegen.model import Site, resolve

__all__ = ["Blocker", "Event", "Result", "bringup", "from_dist", "from_files", "timeline"]


def _is_text(path: PurePosixPath) -> bool:
    """Files the simulation reads as text: the runbook, host scripts, host configs (their headers)."""
    return path.suffix in (".md", ".sh") or (len(path.parts) > 1 and path.parts[1] == paths.KUBEADM)


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
        if file.path.parts[0] != variant:
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


def bringup(site: Site, variant: str, tree: Tree, texts: Texts) -> Result:
    simulation = Simulation(
        resolve(site, variant), tree, texts, argocd_namespace=site.gitops.argocd.namespace
    )
    return simulation.run()


def timeline(result: Result) -> str:
    lines = [f"bring-up of {result.variant}"]
    for event in result.timeline:
        lines.append(f"  [{event.cluster}] {event.step}: {event.what}")
    if result.retried:
        lines.append(f"  {len(result.retried)} sync attempts failed and were retried by their own app")
    lines.append(f"BLOCKED {result.blocker}" if result.blocker else "OK: every Application Healthy")
    return "\n".join(lines)
