"""Fields of objects in Git that a running controller writes itself, declared by the component whose
controller does (`Component.writes`): synth keeps them out of Git's ownership, the bring-up simulation
writes them as the controller would and refuses a field Git still owns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True)
class WrittenField:
    """A field of objects in Git that this component's running controller writes itself: a CA bundle it
    injects, the `suspend` of a Job it admits. Git must not own it, or Argo CD reports the object
    OutOfSync for good and self-heal writes Git's value back over the controller's: synth leaves the
    field out where Git's value is empty, and has Argo CD ignore it where Git's value matters at
    creation (ignoreDifferences, with RespectIgnoreDifferences=true so that a sync keeps the live
    value). The bring-up simulation writes the field as the controller would and refuses any other."""

    group: str
    kind: str
    path: str  # JSON pointer; `*` stands for every item of a list
    why: str  # what writes it, and the source
    names: tuple[str, ...] = ()  # only these objects (empty: any that the selectors below match)
    label: str = ""  # only objects carrying this label
    annotations: tuple[str, ...] = ()  # only objects carrying one of these annotations
    # when it writes: once its controllers run (an injected CA), or when it admits the object (Kueue)
    trigger: Literal["running", "admission"] = "running"

    def matches(self, body: Mapping[str, Any]) -> bool:
        meta = body.get("metadata") or {}
        return (
            str(body.get("apiVersion", "")).rpartition("/")[0] == self.group
            and body.get("kind") == self.kind
            and (not self.names or meta.get("name") in self.names)
            and (not self.label or self.label in (meta.get("labels") or {}))
            and (not self.annotations or bool(set(self.annotations) & set(meta.get("annotations") or {})))
        )

    def pointers(self, body: Mapping[str, Any]) -> list[str]:
        """The concrete pointers of the field that `body` holds (list items expanded)."""
        found = [("", body)]
        for part in self.path.strip("/").split("/"):
            step: list[tuple[str, Any]] = []
            for where, node in found:
                if part == "*" and isinstance(node, list):
                    step += [(f"{where}/{i}", item) for i, item in enumerate(node)]
                elif isinstance(node, Mapping) and part in node:
                    step.append((f"{where}/{part}", node[part]))
            found = step
        return [where for where, _ in found]

    def targets(self, body: Mapping[str, Any]) -> list[str]:
        """Where the controller writes the field in `body`: every item of a `*` list, the last key
        whether Git has it or not."""
        *parents, last = self.path.strip("/").split("/")
        found = [("", body)]
        for part in parents:
            step: list[tuple[str, Any]] = []
            for where, node in found:
                if part == "*" and isinstance(node, list):
                    step += [(f"{where}/{i}", item) for i, item in enumerate(node)]
                elif isinstance(node, Mapping) and isinstance(node.get(part), Mapping | list):
                    step.append((f"{where}/{part}", node[part]))
            found = step
        return [f"{where}/{last}" for where, node in found if isinstance(node, Mapping)]


@dataclass(frozen=True)
class JobSecret:
    """A Secret this component's own chart Job writes when it runs (a password, certificates): nothing
    in Git makes it, and it exists once a Job whose name starts with `job` has run to completion in the
    Secret's namespace (charts add a hash to the name)."""

    secret: str
    job: str
    why: str
