"""What a simulation reports: the timeline's events, and the blocker that ends it."""

from __future__ import annotations

from dataclasses import dataclass, field

from sitegen.check.bringup.argo import Failure


@dataclass(frozen=True)
class Event:
    cluster: str
    step: str
    what: str


@dataclass(frozen=True)
class Blocker:
    cluster: str
    step: str
    component: str
    reason: str

    def __str__(self) -> str:
        return f"{self.cluster}: {self.step}: {self.component}: {self.reason}"


@dataclass
class Result:
    variant: str
    timeline: list[Event] = field(default_factory=list)
    blocker: Blocker | None = None
    retried: list[Failure] = field(default_factory=list)  # failed attempts an app's own retry fixed
    assumed: list[str] = field(default_factory=list)  # what it took as there without a model (reviewed)

    @property
    def ok(self) -> bool:
        return self.blocker is None


class Stop(Exception):
    def __init__(self, blocker: Blocker):
        super().__init__(str(blocker))
        self.blocker = blocker
