"""The first install of a variant, from bare hosts to every Application Healthy, replayed offline.

The operator's part is the generated RUNBOOK itself: its shell blocks are read and their commands
replayed (kubeadm init and joins with the host files they name, node labels, `kubectl apply` of folders
of dist/, waits, the vault's auth, policies and keys, the fabric preparation, DirectPV's drives). A step
that begins "Once `<app>` is Healthy" runs when that Application is. Argo CD's part follows `argo.py`.
Nothing is assumed that the RUNBOOK and dist/ do not say; what the simulation cannot know (a Secret a
chart's own controller makes) is left out rather than guessed.

`Simulation` composes the runbook replay (runbook_replay.py) and Argo CD's convergence
(convergence.py) over the inputs and state they share (state.py).
"""

from __future__ import annotations

from typing import Any

from sitegen.check.bringup.convergence import Convergence
from sitegen.check.bringup.events import Blocker, Result, Stop
from sitegen.check.bringup.runbook import RunbookStep, runbook_steps
from sitegen.check.bringup.runbook_replay import RunbookReplay
from sitegen.model import paths


class Simulation(RunbookReplay, Convergence):
    # ---- the runbook ---------------------------------------------------------------------------
    def run(self) -> Result:
        runbook = self.texts.get(paths.bootstrap_dir(self.variant) / paths.RUNBOOK)
        try:
            if runbook is None:
                raise Stop(Blocker("-", "runbook", "RUNBOOK.md", "dist/ has no runbook"))
            deferred: list[RunbookStep] = []
            for step in runbook_steps(runbook):
                if step.after_app:
                    deferred.append(step)
                    continue
                self._run_step(step)
            self._converge(deferred)
        except Stop as stop:
            self.result.blocker = stop.blocker
        return self.result

    def replay_day2(self, budgets: dict[str, dict[str, Any]]) -> None:
        """The day-2 scenarios on the installed site (day2.py); a blocker ends them."""
        from sitegen.check.bringup import day2

        try:
            day2.replay(self, budgets)
        except Stop as stop:
            self.result.blocker = stop.blocker
