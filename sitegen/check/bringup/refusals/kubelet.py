"""(to be written: what this module models, from which source, and what it does not)"""

from __future__ import annotations

from sitegen.check.bringup.refusals.types import CreateCheck, PodCheck

ON_CREATE: tuple[CreateCheck, ...] = ()
ON_POD: tuple[PodCheck, ...] = ()
