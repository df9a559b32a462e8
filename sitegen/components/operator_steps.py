"""The RUNBOOK steps a component asks of the operator (`Component.operator_steps`): the component writes
what the step says; the runbook's frame (compose/runbook.py) decides where each stage falls in the
bring-up, and numbers the steps across the whole document."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Stage(Enum):
    """Where in the bring-up a component's step falls, in the order the frame writes the stages."""

    POD_NETWORK = "the last step of each cluster's bring-up: nothing starts a pod before it"
    HARDWARE_CHECKS = "once Argo CD syncs: checks of the hosts that need a component's software"
    ACCEPTANCE = "then: nodes taken into service once they passed their checks"
    STORAGE = "then, in the object store's part: what its storage needs by hand"
    # Day 2's sections, unnumbered: read when needed, not run in order
    DAY_2_REPAIRS = "Day 2, after taking a GPU node out: replacing what fails in a component's hardware"
    DAY_2_BACKUPS = "Day 2, after the GitOps alerts: taking a component's backups and restoring them"
    DAY_2 = "Day 2, after the site-wide sections: what to do when it fails, how to restore it"


DAY_2_STAGES = (Stage.DAY_2_REPAIRS, Stage.DAY_2_BACKUPS, Stage.DAY_2)


@dataclass(frozen=True)
class OperatorStep:
    """A numbered step. With `after`, it runs once that Application is Healthy; with `part`, it opens
    that part of the runbook (whose first name in backticks is the cluster its commands run against)
    unless the step before it did. At a stage of Day 2 (DAY_2_STAGES) a section of its own, unnumbered
    (neither `after` nor `part`), given once however many clusters declare it."""

    stage: Stage
    title: str
    body: str
    after: str | None = None
    part: str | None = None
