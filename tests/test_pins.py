"""Snapshot normalisation (tests/pins.py) names a pin only where its value stands as a token."""

from __future__ import annotations

from .pins import unpinned

PINS = [("v0.3.2", "<charts.x>"), ("0.3.2", "<charts.x>")]


def test_a_pinned_version_is_not_replaced_inside_an_address():
    """Put-back: `0.3.2` was replaced inside 10.20.3.251, hiding an address change in the snapshot."""
    assert unpinned({"ip": "10.20.3.251"}, PINS) == {"ip": "10.20.3.251"}
    assert unpinned(["chart-0.3.2", "repo/app:v0.3.2", "0.3.2"], PINS) == [
        "chart-<charts.x>",
        "repo/app:<charts.x>",
        "<charts.x>",
    ]
