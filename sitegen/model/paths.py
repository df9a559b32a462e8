"""The dist/ layout, defined once: every writer and reader of the tree takes its paths from here.

dist/<variant>/apps/<cluster>/<app>/      every object of one Argo CD Application, a file each
dist/<variant>/values/<cluster>/<app>.yaml the Helm values an upstream chart is rendered with
dist/<variant>/kubeadm/<cluster>/          host files: kubeadm configs, static pods, API server policies
dist/<variant>/bootstrap/                  what the root Application syncs, and the runbook (and, in
                                           s3-policies/, the S3 consumers' key policies it attaches)
dist/<variant>/bootstrap/clusters/<spoke>/ what a spoke's root Application syncs (its ApplicationSets)
dist/<variant>/containerd/certs.d/         containerd registry mirrors for every host
dist/<variant>/ansible/                    the inventory of every host and the playbook of the per-host steps
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

REPO_DIST = PurePosixPath("dist")  # where dist/ sits in the GitOps repository Argo CD reads

APPS = "apps"
VALUES = "values"
KUBEADM = "kubeadm"
BOOTSTRAP = "bootstrap"
CONTAINERD = "containerd"
CERTS_D = "certs.d"
RUNBOOK = "RUNBOOK.md"
CLUSTER_AREAS = (APPS, KUBEADM, VALUES)  # areas whose next folder is a cluster


@dataclass(frozen=True)
class DistPath:
    """A file of dist/ read back (relative to dist/): the one place its folders are taken apart."""

    path: PurePosixPath

    @classmethod
    def of(cls, path: str | PurePosixPath) -> DistPath:
        return cls(PurePosixPath(path))

    @property
    def variant(self) -> str:
        return self.path.parts[0]

    @property
    def area(self) -> str:
        """apps, values, kubeadm, bootstrap, ...; "" for a file of the variant's own folder."""
        return self.path.parts[1] if len(self.path.parts) > 2 else ""

    @property
    def cluster(self) -> str | None:
        """The cluster of a file or folder of a cluster area (apps, values, kubeadm); no file lies in
        an area's own folder."""
        parts = self.path.parts
        return parts[2] if len(parts) > 2 and parts[1] in CLUSTER_AREAS else None

    @property
    def app(self) -> str | None:
        """The app (Argo CD Application) whose folder holds the file."""
        return self.path.parts[3] if self.area == APPS and len(self.path.parts) > 4 else None

    @property
    def in_cluster(self) -> PurePosixPath | None:
        """The path below its cluster's folder."""
        return PurePosixPath(*self.path.parts[3:]) if self.cluster is not None else None

    @property
    def in_variant(self) -> PurePosixPath:
        return PurePosixPath(*self.path.parts[1:])


def app_dir(variant: str, cluster: str, app: str) -> PurePosixPath:
    return PurePosixPath(variant, APPS, cluster, app)


def object_file(kind: str, name: str, namespace: str = "") -> str:
    """An object's file in its app folder, `<namespace>.<kind>.<name>.yaml` (a cluster-scoped one has
    no namespace): one file per object, whether cdk8s or Helm made it."""
    return ".".join([*([namespace] if namespace else []), kind.lower(), name]) + ".yaml"


APP_DESCRIPTOR = "app.json"


def app_descriptor(variant: str, cluster: str, app: str) -> PurePosixPath:
    """What its cluster's ApplicationSets read (a git files generator): one element per generated app."""
    return app_dir(variant, cluster, app) / APP_DESCRIPTOR


def cluster_apps_dir(variant: str, cluster: str) -> PurePosixPath:
    return PurePosixPath(variant, APPS, cluster)


def values_file(variant: str, cluster: str, app: str) -> PurePosixPath:
    return PurePosixPath(variant, VALUES, cluster, f"{app}.yaml")


def cluster_values_dir(variant: str, cluster: str) -> PurePosixPath:
    return PurePosixPath(variant, VALUES, cluster)


def kubeadm_dir(variant: str, cluster: str) -> PurePosixPath:
    return PurePosixPath(variant, KUBEADM, cluster)


def topology_script(variant: str, cluster: str, pool: str) -> PurePosixPath:
    """The check of a GPU pool's hosts: each GPU on one PCIe switch with its rail's NIC."""
    return kubeadm_dir(variant, cluster) / f"fabric-topology-{pool}.sh"


def bootstrap_dir(variant: str) -> PurePosixPath:
    return PurePosixPath(variant, BOOTSTRAP)


def cluster_root_dir(variant: str, cluster: str, *, hub: bool) -> PurePosixPath:
    """What a cluster's root Application syncs: the bootstrap folder itself for the hub (its root also
    holds the projects, the foundation and the spokes' roots), a folder of its own for a spoke."""
    return bootstrap_dir(variant) if hub else bootstrap_dir(variant) / "clusters" / cluster


def s3_policy_file(variant: str, user: str) -> PurePosixPath:
    """An S3 consumer's key policy, which the runbook attaches when it creates the key."""
    return PurePosixPath(variant, BOOTSTRAP, "s3-policies", f"{user}.json")


def lifecycle_file(variant: str, bucket: str) -> PurePosixPath:
    """A second-target bucket's lifecycle configuration, which the runbook applies to it."""
    return PurePosixPath(variant, BOOTSTRAP, "second-target", f"{bucket}-lifecycle.json")


def mirrors_dir(variant: str) -> PurePosixPath:
    """containerd's `config_path` layout: `certs.d/<registry>/hosts.toml`."""
    return PurePosixPath(variant, CONTAINERD, CERTS_D)


def mirror_file(variant: str, registry: str) -> PurePosixPath:
    return mirrors_dir(variant) / registry / "hosts.toml"


ANSIBLE = "ansible"


def ansible_dir(variant: str) -> PurePosixPath:
    """The inventory and playbook of the per-host steps (compose/ansible.py)."""
    return PurePosixPath(variant, ANSIBLE)


def in_repo(path: PurePosixPath) -> PurePosixPath:
    """A dist/ path as Argo CD and the runbook name it: relative to the repository root."""
    return REPO_DIST / path


def from_repo(repo_path: str) -> PurePosixPath | None:
    """A repository path back to a dist/ path, or None when it lies outside dist/."""
    path = PurePosixPath(repo_path)
    return path.relative_to(REPO_DIST) if path.is_relative_to(REPO_DIST) and path != REPO_DIST else None
