"""Size limits of the code: no Python file over 500 lines, no function over 80 (from its first decorator
to its last line). What `cdk8s import` generates (imports/) is not ours to size."""

from __future__ import annotations

import ast
from pathlib import Path

from .conftest import REPO

MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 80


# Ours: the generator, its constructs and the tests (imports/ and the installed tools are not).
FOLDERS = ("sitegen", "constructs", "tests")


def _sources() -> list[str]:
    """By walking the folders, not git: a site owner's copy of the repository may have no .git."""
    files = [REPO / "main.py", *(p for folder in FOLDERS for p in (REPO / folder).rglob("*.py"))]
    return sorted(str(p.relative_to(REPO)) for p in files if p.is_file() and "__pycache__" not in p.parts)


def _long_functions(path: str, root: Path = REPO) -> list[str]:
    tree = ast.parse((root / path).read_text(), filename=path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            length = (node.end_lineno or node.lineno) - first + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{path}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_file_is_over_the_limit() -> None:
    over = [
        f"{p} ({n} lines)"
        for p in _sources()
        if (n := len((REPO / p).read_text().splitlines())) > MAX_FILE_LINES
    ]
    assert not over, f"over {MAX_FILE_LINES} lines, split by concern: {over}"


def test_no_function_is_over_the_limit() -> None:
    over = [f for p in _sources() for f in _long_functions(p)]
    assert not over, f"over {MAX_FUNCTION_LINES} lines, extract what each part builds: {over}"


def test_the_limit_counts_from_the_decorator(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES - 2))
    (tmp_path / "probe.py").write_text(f"import functools\n\n\n@functools.cache\ndef probe():\n{body}\n")
    assert _long_functions("probe.py", tmp_path) == []  # 80 lines with its decorator
    (tmp_path / "probe.py").write_text(f"@functools.cache\n@functools.wraps(len)\ndef probe():\n{body}\n")
    assert _long_functions("probe.py", tmp_path) == ["probe.py:3 probe (81 lines)"]
