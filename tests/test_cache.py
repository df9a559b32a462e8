"""The cache stays within its budgets, least recently used entries first (it grew by every config the
tests and a site's edits ever synthesized: 850 MB in two days here); an entry gone or torn under a
reader is computed again."""

from __future__ import annotations

import os
from pathlib import Path

from sitegen import cache
from sitegen.compose import hydrate
from sitegen.compose.variant import render_jobs

from .conftest import invoke_sitegen


def _entry(folder: Path, name: str, size: int, age: int) -> None:
    (folder / name).write_bytes(b"x" * size)
    os.utime(folder / name, (1_000_000 + age, 1_000_000 + age))


def test_an_area_over_its_budget_loses_its_least_recently_used_entries(tmp_path, monkeypatch):
    monkeypatch.setenv("SITEGEN_CACHE", str(tmp_path))
    renders, parsed = tmp_path / "renders", tmp_path / "parsed"
    renders.mkdir()
    parsed.mkdir()
    for i in range(10):
        _entry(renders, f"{i}.marshal", 100, age=i)
    _entry(renders, "0.4242.tmp", 500, age=-1)  # another process is writing it
    _entry(parsed, "a.marshal", 100, age=0)
    cache.prune({"renders": 800, "parsed": 1000})
    assert sorted(p.name for p in renders.iterdir()) == [
        "0.4242.tmp",
        *(f"{i}.marshal" for i in range(4, 10)),
    ]
    assert [p.name for p in parsed.iterdir()] == ["a.marshal"]  # under its budget: untouched


def test_a_hit_keeps_an_entry_longest(tmp_path, monkeypatch):
    monkeypatch.setenv("SITEGEN_CACHE", str(tmp_path))
    cache.keep("parsed", "old", [1])
    cache.keep("parsed", "new", [2])
    os.utime(tmp_path / "parsed/old.marshal", (1_000_000, 1_000_000))
    os.utime(tmp_path / "parsed/new.marshal", (2_000_000, 2_000_000))
    assert cache.read_stored("parsed", "old") == [1]
    size = (tmp_path / "parsed/old.marshal").stat().st_size
    cache.prune({"parsed": 2 * size - 1})
    assert cache.read_stored("parsed", "old") == [1]
    assert cache.read_stored("parsed", "new") is None


def test_a_torn_render_is_rendered_again(site, tmp_path, monkeypatch):
    monkeypatch.setenv("SITEGEN_CACHE", str(tmp_path))
    job = min(render_jobs(site, ["one-cluster"]), key=lambda j: Path(j.archive).stat().st_size)
    torn = hydrate._cached(job)
    torn.parent.mkdir(parents=True)
    torn.write_bytes(b"\xfb\x00")
    with hydrate.hydrating([job]) as wait:
        rendered = wait()[job.folder]
    assert rendered.objects and hydrate._load(torn) == rendered


def test_synth_keeps_the_cache_within_its_budgets(site, tmp_path, monkeypatch):
    """The records of what each synth wrote (one per output folder and inputs) are the area that
    grew fastest; synth prunes after it writes."""
    from .conftest import CONFIG

    shared = cache.cache_dir()
    monkeypatch.setenv("SITEGEN_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    for area in ("renders", "parsed", "chart-keys"):  # this process's renders, not cold ones
        (tmp_path / "cache" / area).symlink_to(shared / area, target_is_directory=True)
    (tmp_path / "cache/synth").mkdir()
    for i in range(3):
        _entry(tmp_path / "cache/synth", f"v2-{i}.json", 1000, age=i)
    monkeypatch.setitem(cache.BUDGETS, "synth", 2500)
    result = invoke_sitegen(
        "synth", "--config", CONFIG, "--variant", "one-cluster", "--out", tmp_path / "out"
    )
    assert result.exit_code == 0, result.output
    assert sum(p.stat().st_size for p in (tmp_path / "cache/synth").iterdir()) <= 2500 * 3 // 4
