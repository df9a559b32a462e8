"""The controllers that write fields of objects in Git once they run (`Component.writes`): a webhook's
CA bundle that cert-manager's cainjector, the AIStor operator or kube-prometheus-stack's patch Job
injects. Each writes, on every object its declaration matches, once the app that ships it has its
controllers up (Kueue writes its Jobs' `suspend` when it admits them: kueue.py).

What the writes mean for Argo CD (a field Git still owns: OutOfSync for good, self-heal fighting the
controller) is judged by the convergence, not here.
"""

from __future__ import annotations

from constructs.argocd import application_name
from sitegen.check.bringup.cluster import Cluster
from sitegen.components.catalog import COMPONENTS


class FieldWriters:
    """The declared writers of the registry that act once their app runs."""

    def __init__(self) -> None:
        self.writers = [(kind.name, w) for kind in COMPONENTS for w in kind.writes if w.trigger == "running"]

    def run(self, cluster: Cluster) -> None:
        for component, field in self.writers:
            app = application_name(cluster.name, component)
            if not cluster.app_running(app):
                continue
            for key, applied in cluster.of_kind(field.kind):
                if field.matches(applied.body):
                    for pointer in field.targets(applied.body):
                        cluster.write_field(key, pointer, f"<written by {component}>", component)
