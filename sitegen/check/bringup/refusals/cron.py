"""CronJob schedules and time zones as the API server parses them on create (Kubernetes v1.35
pkg/apis/batch/validation): robfig/cron v3's `ParseStandard` (5 fields, or a descriptor; its error
messages), and `validateTimeZone` (names of the tz database; Python's zoneinfo stands for the tzdata the
API server's Go runtime loads). A helper of validation.py, with no checks of its own.

Not modelled: Go's exact messages for a malformed `@every` duration (all read "invalid duration").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from zoneinfo import available_timezones

_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
    )
}
_DAYS = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
_FIELDS = ((0, 59, {}), (0, 23, {}), (1, 31, {}), (1, 12, _MONTHS), (0, 6, _DAYS))
_DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_DURATION = re.compile(r"[-+]?(0|([0-9]*(\.[0-9]*)?(ns|us|µs|μs|ms|s|m|h))+)")


class _CronError(ValueError):
    pass


def _cron_int(text: str, names: Mapping[str, int]) -> int:
    if text.lower() in names:
        return names[text.lower()]
    if not re.fullmatch(r"[-+]?[0-9]+", text):
        raise _CronError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax')
    if int(text) < 0:
        raise _CronError(f"negative number ({int(text)}) not allowed: {text}")
    return int(text)


def _cron_range(expr: str, low: int, high: int, names: Mapping[str, int]) -> None:
    """getRange: `*`, `?`, `a`, `a-b`, each with an optional `/step` (`a/step` runs to the maximum)."""
    range_and_step = expr.split("/")
    bounds = range_and_step[0].split("-")
    if bounds[0] in ("*", "?"):
        start, end = low, high
    else:
        start = _cron_int(bounds[0], names)
        if len(bounds) > 2:
            raise _CronError(f"too many hyphens: {expr}")
        end = _cron_int(bounds[1], names) if len(bounds) == 2 else start
    step = 1
    if len(range_and_step) == 2:
        step = _cron_int(range_and_step[1], {})
        end = high if len(bounds) == 1 else end
    elif len(range_and_step) > 2:
        raise _CronError(f"too many slashes: {expr}")
    if start < low:
        raise _CronError(f"beginning of range ({start}) below minimum ({low}): {expr}")
    if end > high:
        raise _CronError(f"end of range ({end}) above maximum ({high}): {expr}")
    if start > end:
        raise _CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise _CronError(f"step of range should be a positive number: {expr}")


def cron_error(schedule: str) -> str | None:
    """Why cron.ParseStandard refuses `schedule` (None: it parses)."""
    spec = schedule
    if spec.startswith(("TZ=", "CRON_TZ=")):
        zone = spec[spec.index("=") + 1 : spec.find(" ") if " " in spec else len(spec)]
        if zone not in _time_zones():
            return f"provided bad location {zone}: unknown time zone {zone}"
        spec = spec[spec.find(" ") :].strip() if " " in spec else ""
    if not spec:
        return "empty spec string"
    if spec.startswith("@"):
        if spec in _DESCRIPTORS or (spec.startswith("@every ") and _DURATION.fullmatch(spec[7:])):
            return None
        if spec.startswith("@every "):
            return f'failed to parse duration {spec}: time: invalid duration "{spec[7:]}"'
        return f"unrecognized descriptor: {spec}"
    fields = spec.split()
    if len(fields) != 5:
        return f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]"
    try:
        for text, (low, high, names) in zip(fields, _FIELDS, strict=True):
            for expr in (e for e in text.split(",") if e):
                _cron_range(expr, low, high, names)
    except _CronError as error:
        return str(error)
    return None


@cache
def _time_zones() -> frozenset[str]:
    return frozenset(available_timezones()) | {"UTC"}


def time_zone_error(zone: str) -> str | None:
    """validateTimeZone: a name of the tz database, never Local."""
    if not zone:
        return "timeZone must be nil or non-empty string"
    if any(
        p in (".", "..") or p.startswith("-") or not re.fullmatch(r"[A-Za-z.\-_0-9+]{1,14}", p)
        for p in zone.split("/")
    ):
        return f"unknown time zone {zone}"
    if zone.lower() == "local":
        return "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
    return None if zone in _time_zones() else f"unknown time zone {zone}"
