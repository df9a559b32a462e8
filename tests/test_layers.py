"""The shape of the code: no import cycles among our modules, no module of ours shadowing a library
module, and the console script working outside the checkout (constructs/ joins the jsii namespace)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import grimp
import pytest

import constructs

from .conftest import CONFIG, REPO, SITEGEN

OUR_PACKAGES = ("sitegen", "constructs")


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    # constructs/ is a portion of the jsii library's package: let grimp see both folders
    constructs.__spec__.submodule_search_locations[:] = constructs.__path__
    # type-only imports count: a circle a reader must follow is a circle, run time or not
    return grimp.build_graph(*OUR_PACKAGES, cache_dir=None, exclude_type_checking_imports=False)


def _ours(graph: grimp.ImportGraph) -> set[str]:
    library = Path(constructs.__spec__.origin).parent
    return {
        m
        for m in graph.modules
        if m.startswith("sitegen")
        or (m.startswith("constructs.") and not (library / f"{m.split('.')[1]}").exists())
    }


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def connect(m: str) -> None:
        index[m] = low[m] = len(index)
        stack.append(m)
        for n in sorted(edges[m]):
            if n not in index:
                connect(n)
                low[m] = min(low[m], low[n])
            elif n in stack:
                low[m] = min(low[m], index[n])
        if low[m] == index[m]:
            component = []
            while True:
                n = stack.pop()
                component.append(n)
                if n == m:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for m in sorted(edges):
        if m not in index:
            connect(m)
    return cycles


def test_no_import_cycles_among_our_modules(graph):
    """Any cycle, across component folders too (import-linter compares those only folder by folder),
    through type-only and function-local imports too."""
    modules = _ours(graph)
    edges = {m: graph.find_modules_directly_imported_by(m) & modules for m in modules}
    assert len(modules) > 90
    assert _cycles(edges) == []
    # the same graph with one import back from the model to a component has a cycle
    edges["sitegen.model.site"] = edges["sitegen.model.site"] | {"sitegen.components.catalog"}
    assert any({"sitegen.components.catalog", "sitegen.model.site"} <= set(c) for c in _cycles(edges))


def test_no_module_of_ours_shadows_the_constructs_library():
    library = Path(constructs.__spec__.origin).parent
    ours = {p.stem for p in (REPO / "constructs").glob("*.py")}
    theirs = {p.stem for p in library.iterdir()}
    assert not (ours & theirs)
    assert not (REPO / "constructs" / "__init__.py").exists()  # a portion of the namespace, not a package


def test_console_script_runs_outside_the_checkout(tmp_path):
    result = subprocess.run(
        [
            str(SITEGEN),
            "synth",
            "--config",
            str(CONFIG),
            "--variant",
            "one-cluster",
            "--out",
            str(tmp_path / "out"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "one-cluster" / "apps" / "ai" / "node-labels").is_dir()


PIPELINE = ("model", "constructs", "components", "compose", "check", "report", "cli")


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] == "constructs":
        return PIPELINE.index("constructs")
    return PIPELINE.index(parts[1]) if len(parts) > 1 and parts[1] in PIPELINE else None


def test_no_layer_names_one_above_it_even_for_type_checking():
    """import-linter leaves TYPE_CHECKING imports out (annotation-only cycles inside a package are
    fine), so a lower layer could still depend on a higher one's types: components took ObjectPatch
    from compose.hydrate that way. Every import counts here."""
    constructs.__spec__.submodule_search_locations[:] = constructs.__path__
    full = grimp.build_graph(*OUR_PACKAGES, cache_dir=None, exclude_type_checking_imports=False)
    ours = _ours(full)
    upward = sorted(
        f"{m} -> {n}"
        for m in ours
        for n in full.find_modules_directly_imported_by(m)
        if n in ours and (lm := _layer(m)) is not None and (ln := _layer(n)) is not None and ln > lm
    )
    assert upward == []


def test_no_module_of_the_checks_over_500_lines():
    """The simulation and the checks grow by a module per concern, not by longer modules."""
    long = {
        str(path.relative_to(REPO)): lines
        for path in sorted((REPO / "sitegen" / "check").rglob("*.py"))
        if (lines := len(path.read_text().splitlines())) > 500
    }
    assert long == {}


def test_the_bring_up_composes_its_parts_rather_than_mixing_them_in():
    """Put-back: `Cluster` was a stack of six mixins over one set of mutable attributes. A part of the
    simulation is now a plain class given the state it reads; only `Cluster` extends the object index,
    and no class of the bring-up has two bases."""
    import ast

    extends_index, many_bases = [], []
    for path in sorted((REPO / "sitegen" / "check" / "bringup").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = [ast.unparse(b) for b in node.bases if ast.unparse(b) not in ("Protocol", "Exception")]
            if "ClusterObjects" in bases:
                extends_index.append(node.name)
            if len(bases) > 1:
                many_bases.append(f"{path.name}:{node.name}({', '.join(bases)})")
    assert extends_index == ["Cluster"]
    assert many_bases == []
