"""The first install of a variant, from bare hosts to every Application Healthy, replayed offline.

The operator's part is the generated RUNBOOK itself: its shell blocks are read and their commands
replayed (kubeadm init and joins with the host files they name, node labels, `kubectl apply` of folders
of dist/, waits, the vault's auth, policies and keys, the fabric preparation, DirectPV's drives). A step
that begins "Once `<app>` is Healthy" runs when that Application is. Argo CD's part follows `argo.py`.
Nothing is assumed that the RUNBOOK and dist/ do not say; what the simulation cannot know (a Secret a
chart's own controller makes) is left out rather than guessed.

`Simulation` holds the state (state.py), Argo CD's convergence over it (convergence.py) and the runbook
replay (runbook_replay.py), which is given the convergence to start Argo CD.
"""

from __future__ import annotations

from sitegen.check.bringup.convergence import Convergence
from sitegen.check.bringup.events import Blocker, Result, Stop
from sitegen.check.bringup.runbook_replay import RunbookReplay
from sitegen.check.bringup.state import SimulationState, Texts, Tree
from sitegen.model import VariantLayout, paths
from sitegen.tree.runbook import RunbookStep, runbook_steps


class Simulation:
    """The state of one variant's bring-up, Argo CD's convergence over it and the runbook's replay."""

    def __init__(self, layout: VariantLayout, tree: Tree, texts: Texts, *, argocd_namespace: str) -> None:
        self.state = SimulationState(layout, tree, texts, argocd_namespace=argocd_namespace)
        self.convergence = Convergence(self.state)
        self.replay = RunbookReplay(self.state, self.convergence)

    def run(self) -> Result:
        state = self.state
        runbook = state.texts.get(paths.bootstrap_dir(state.variant) / paths.RUNBOOK)
        try:
            if runbook is None:
                raise Stop(Blocker("-", "runbook", "RUNBOOK.md", "dist/ has no runbook"))
            deferred: list[RunbookStep] = []
            for step in runbook_steps(runbook):
                if step.after_app:
                    deferred.append(step)
                    continue
                self.replay.run_step(step)
            self.convergence.converge(deferred, self.replay.run_step)
        except Stop as stop:
            state.result.blocker = stop.blocker
        return state.result
