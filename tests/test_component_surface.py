"""A component's module is its own: the site-wide modules (compose, check, report, the CLI) reach a
component through its class only (attributes, methods, the hooks of components/base.py), never a
module-level name of its module. What several components and the site-wide modules share lives in the
components package's contract modules (sitegen/components/*.py) or in constructs/."""

from __future__ import annotations

import ast
import importlib
import inspect

from sitegen.components.base import Component

from .conftest import REPO

SITE_WIDE = ("sitegen/compose", "sitegen/check", "sitegen/report", "sitegen/cli.py")


def _is_component_module(module: str) -> bool:
    """sitegen.components.<project>.<module>: one of a project's component modules."""
    return module.startswith("sitegen.components.") and module.count(".") >= 3


def _reached_internals(path: str, source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source, filename=path)):
        if isinstance(node, ast.Import):
            found += [f"{path}: import {a.name}" for a in node.names if _is_component_module(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if _is_component_module(node.module):
                module = importlib.import_module(node.module)
                for alias in node.names:
                    value = getattr(module, alias.name, None)
                    if not (inspect.isclass(value) and issubclass(value, Component)):
                        found.append(f"{path}: {alias.name} of {node.module}")
            elif node.module.count(".") == 2 and node.module.startswith("sitegen.components."):
                # `from sitegen.components.storage import aistor`: the module itself
                found += [
                    f"{path}: module {node.module}.{a.name}"
                    for a in node.names
                    if inspect.ismodule(_imported(f"{node.module}.{a.name}"))
                ]
    return found


def _imported(name: str) -> object:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError:
        return None


def _site_wide_sources() -> list[str]:
    """By walking the folders, not git: a site owner's copy of the repository may have no .git."""
    files = [p for s in SITE_WIDE for p in ([REPO / s] if s.endswith(".py") else (REPO / s).rglob("*.py"))]
    return sorted(str(p.relative_to(REPO)) for p in files if "__pycache__" not in p.parts)


def test_site_wide_modules_reach_components_through_their_class() -> None:
    reached = [r for p in _site_wide_sources() for r in _reached_internals(p, (REPO / p).read_text())]
    assert not reached, "use (or add) the component class's attribute or method instead:\n" + "\n".join(
        reached
    )


def test_an_internal_name_is_found() -> None:
    source = (
        "from sitegen.components.storage.aistor import AIStor, front_door_hosts\n"
        "from sitegen.components.storage import velero\n"
        "import sitegen.components.gpu.gpu_health\n"
        "from sitegen.components.s3 import S3Access\n"
    )
    assert _reached_internals("x.py", source) == [
        "x.py: front_door_hosts of sitegen.components.storage.aistor",
        "x.py: module sitegen.components.storage.velero",
        "x.py: import sitegen.components.gpu.gpu_health",
    ]
