"""Chart supply: archives come from the mirror (or upstream), match charts.lock, and fail in one line."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from sitegen.compose.chart_supply import ChartFault, read_lock, supply

from .conftest import REPO, SITEGEN, tree_bytes

MIRROR = REPO.parent / "shared" / "charts"


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty chart cache, a copy of the lock this test may renew, the mirror and no upstream."""
    if not MIRROR.is_dir():
        pytest.skip("needs the chart mirror beside the checkout")
    cache = tmp_path / "cache"
    lock = tmp_path / "charts.lock"
    shutil.copyfile(REPO / "charts.lock", lock)
    monkeypatch.setenv("SITEGEN_CACHE", str(cache))
    monkeypatch.setenv("SITEGEN_CHARTS_LOCK", str(lock))
    monkeypatch.setenv("SITEGEN_CHART_MIRROR", str(MIRROR))
    for name, value in _offline_env(cache).items():
        if "PROXY" in name:
            monkeypatch.setenv(name, value)
    return cache


def _offline_env(cache: Path) -> dict[str, str]:
    """No mirror and an upstream that cannot answer, whatever network the machine has."""
    env = {k: v for k, v in os.environ.items() if k != "SITEGEN_CHART_MIRROR"}
    unreachable = "http://127.0.0.1:9"
    env.update(SITEGEN_CACHE=str(cache), HTTPS_PROXY=unreachable, HTTP_PROXY=unreachable, NO_PROXY="")
    return env


def test_every_pinned_chart_is_locked_from_the_mirror(site):
    lock = read_lock()
    pinned = {k for k in site.versions.charts}
    assert set(lock) <= pinned
    for key, entry in lock.items():
        pin = site.versions.charts[key]
        assert (entry.chart, entry.version) == (pin.chart, pin.version)
        assert len(entry.sha256) == 64


def test_the_lock_detects_a_modified_archive(site, private_cache):
    pin = {"metrics-server": site.versions.charts["metrics-server"]}
    (archive,) = supply(pin).values()
    with archive.path.open("ab") as handle:
        handle.write(b"\0")  # one byte more: a re-packed or tampered archive
    with pytest.raises(ChartFault, match=r"charts.lock: metrics-server: archive of metrics-server .* sha256"):
        supply(pin)
    supply(pin, renew=True)  # renewing on purpose accepts it
    assert read_lock()["metrics-server"].sha256 == supply(pin)["metrics-server"].sha256


def test_a_pin_the_lock_does_not_hold_stops_synth(site, private_cache):
    pin = site.versions.charts["metrics-server"]
    bumped = {"metrics-server": pin.model_copy(update={"version": "3.13.0"})}
    with pytest.raises(ChartFault, match=r"metrics-server 3.13.0 \(metrics-server\) not found"):
        supply(bumped)  # the mirror holds only the pinned version; upstream cannot be reached here
    (Path(os.environ["SITEGEN_CHARTS_LOCK"])).write_text("charts: {}\n")
    with pytest.raises(ChartFault, match="is not locked"):
        supply({"metrics-server": pin})


def test_synth_without_mirror_or_network_is_one_chart_error(tmp_path):
    out = tmp_path / "dist"
    out.mkdir()
    (out / "keep").write_text("untouched")
    result = subprocess.run(
        [str(SITEGEN), "synth", "--out", str(out)],
        cwd=REPO,
        env=_offline_env(tmp_path / "empty-cache"),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: chart ") and " not found: looked in " in line, line
    assert "Traceback" not in result.stderr
    assert tree_bytes(out) == {"keep": b"untouched"}


def _repack(archive: Path, change: bytes | None = None) -> None:
    """The same chart packed again (other timestamps, reverse order), optionally one file changed."""
    with tarfile.open(archive) as tar:
        members = [(m, tar.extractfile(m).read()) for m in tar.getmembers() if m.isfile()]
    with tarfile.open(archive, "w:gz") as tar:
        for i, (member, data) in enumerate(reversed(members)):
            if change is not None and i == 0:
                data += change
            member.mtime, member.size = 1_000_000_000, len(data)
            tar.addfile(member, io.BytesIO(data))


def test_an_archive_from_another_source_must_hold_the_same_files(site, private_cache):
    """The lock was taken from a mirror that rebuilt some releases: the same chart pulled upstream is
    another archive (digest differs) with the same files, which is accepted; other files are not."""
    pin = {"metrics-server": site.versions.charts["metrics-server"]}
    (archive,) = supply(pin).values()
    lock = Path(os.environ["SITEGEN_CHARTS_LOCK"])
    lock.write_text(lock.read_text().replace("source: mirror", "source: https://upstream.example/charts"))
    _repack(archive.path)
    assert supply(pin)["metrics-server"].sha256 != read_lock()["metrics-server"].sha256
    _repack(archive.path, change=b"# one more line\n")
    with pytest.raises(
        ChartFault, match=r"charts.lock: metrics-server: files of metrics-server .* have sha256"
    ):
        supply(pin)
