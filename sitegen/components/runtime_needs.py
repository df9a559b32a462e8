"""What a component's controllers need from the cluster once they run, declared with the component
(`Component.runtime_needs`) and judged by the bring-up (check/bringup/refusals/controllers.py):

- `ApiCall`: a call a controller makes to the API server that the chart's RBAC must grant to the
  ServiceAccount of its pods, taken from the controller's source at the pinned version, and when it
  makes it (`at`): at START its informers list and watch (refused, the caches never sync and the
  controller exits or stays unready: its pods are not Ready); at VAULT_LOGIN, each SecretStore's
  Kubernetes auth (refused, that store is not Ready).
- `RuntimeNeeds.vault`: the workloads that read the site's vault themselves (its address is each
  SecretStore's `server`): their namespace's network policies must let them reach it.
- `HostVolumeGroups`: node agents that need LVM volume groups on their hosts, which the runbook makes.

Whether a workload must reach the API server is the component's `talks_to_api`.
"""

from __future__ import annotations

from dataclasses import dataclass

START = "start"
VAULT_LOGIN = "vault login"  # the call names the SecretStore's service account


@dataclass(frozen=True)
class ApiCall:
    """One API call of a controller: `verb` on `resource` (plural, `/subresource` included) of API
    `group`, made by the pods of `workload` (the rendered Deployment, DaemonSet or StatefulSet)."""

    workload: str
    verb: str
    resource: str
    group: str = ""
    # made only in the workload's own namespace (a Role there suffices); else across every namespace
    # or on a cluster-scoped resource (a ClusterRole bound cluster-wide)
    own_namespace: bool = False
    name: str | None = None  # the object's name when the call names one (a rule's resourceNames may)
    source: str = ""  # where the controller makes the call, at the pinned version
    at: str = START  # START or VAULT_LOGIN


@dataclass(frozen=True)
class HostVolumeGroups:
    """Node agents that need LVM volume groups on every node they run on, named in the configuration
    they mount: in the ConfigMap's `config_key` (YAML), the list `classes`, each naming its group under
    `group`. The runbook's host steps make them (`vgcreate`)."""

    workload_prefix: str  # the DaemonSets, by the prefix of their names
    config_key: str
    classes: str
    group: str
    refusal: str  # what the agent logs when a group is missing
    source: str = ""


@dataclass(frozen=True)
class RuntimeNeeds:
    api: tuple[ApiCall, ...] = ()
    vault: tuple[str, ...] = ()  # workloads whose pods read the site's vault
    volume_groups: HostVolumeGroups | None = None
