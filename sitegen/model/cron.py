"""The longest gap between two runs of a five-field cron schedule (what a staleness alert waits for),
found by walking one week minute by minute: `*`, `*/n`, `a-b`, `a-b/n` and lists, in UTC. A schedule
whose day of month or month is not `*` has gaps longer than a week: refused, not guessed."""

from __future__ import annotations

from itertools import pairwise

WEEK_MINUTES = 7 * 24 * 60
_RANGES = ((0, 59), (0, 23))


def _values(field: str, low: int, high: int) -> set[int]:
    found: set[int] = set()
    for part in field.split(","):
        spec, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if spec == "*":
            start, end = low, high
        elif "-" in spec:
            start, end = (int(x) for x in spec.split("-", 1))
        else:
            start = end = int(spec)
            if step_text:
                end = high
        found |= set(range(start, end + 1, step))
    return found


def longest_gap_seconds(cron: str) -> int:
    minute, hour, day, month, weekday = cron.split()
    if day != "*" or month != "*":
        raise ValueError(f"{cron!r}: day of month and month must be * (a gap could exceed a week)")
    minutes = _values(minute, *_RANGES[0])
    hours = _values(hour, *_RANGES[1])
    days = {d % 7 for d in _values(weekday, 0, 7)} if weekday != "*" else set(range(7))  # 7 is Sunday too
    runs = [
        t for t in range(WEEK_MINUTES)
        if t % 60 in minutes and (t // 60) % 24 in hours and (t // 1440) in days
    ]  # fmt: skip
    if not runs:
        raise ValueError(f"{cron!r} never runs")
    gaps = [b - a for a, b in pairwise(runs)] + [runs[0] + WEEK_MINUTES - runs[-1]]
    return max(gaps) * 60
