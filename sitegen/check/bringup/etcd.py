"""A cluster's stacked etcd membership, changed as kubeadm and etcdctl change it (etcd v3.6).

- `kubeadm join --control-plane` adds its member as a learner and promotes it once it caught up
  (kubeadm's EtcdLearnerMode, on by default since v1.29); `kubeadm reset` on a member removes it.
- A membership change needs a majority of the voting members started ("Reconfiguration requests can
  only be processed when a majority of cluster members are functioning", etcd's runtime reconfiguration
  guide), and etcd's strict reconfiguration check (on by default) refuses one after which fewer voters
  are started than the new quorum.
- A peer URL names one member: adding one at the URL of a member etcd has fails ("Peer URLs already
  exists"), which is why a lost member that returns at its address must be removed first.
- At most one learner at a time (`--max-learners`, default 1).

Not modelled: the time a learner takes to catch up, a member's data directory, TLS.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Member:
    peer_url: str
    started: bool = True
    learner: bool = False


def peer_url(address: str) -> str:
    return f"https://{address}:2380"


@dataclass
class Etcd:
    members: dict[str, Member] = field(default_factory=dict)

    def voters(self) -> dict[str, Member]:
        return {n: m for n, m in self.members.items() if not m.learner}

    def healthy(self) -> bool:
        """Every member a started voter."""
        return all(m.started and not m.learner for m in self.members.values())

    @staticmethod
    def quorum(voters: int) -> int:
        return voters // 2 + 1

    def _unhealthy(self) -> str | None:
        voters = self.voters()
        started = sum(m.started for m in voters.values())
        if started < self.quorum(len(voters)):
            return (
                f"etcdserver: unhealthy cluster ({started} of {len(voters)} members started, "
                f"{self.quorum(len(voters))} needed)"
            )
        return None

    def add_learner(self, name: str, url: str) -> str | None:
        """kubeadm's MemberAddAsLearner; the refusal, or None."""
        same = [n for n, m in self.members.items() if m.peer_url == url]
        if same:
            return (
                f"etcdserver: Peer URLs already exists (member {same[0]} is still in etcd at {url}: "
                "remove it first)"
            )
        if any(m.learner for m in self.members.values()):
            return "etcdserver: too many learner members in cluster (--max-learners 1)"
        why = self._unhealthy()
        if why:
            return why
        self.members[name] = Member(url, started=True, learner=True)
        return None

    def promote(self, name: str) -> str | None:
        why = self._unhealthy()
        if why:
            return why
        self.members[name].learner = False
        return None

    def join(self, name: str, url: str) -> str | None:
        """What `kubeadm join --control-plane` does to etcd: add as a learner, then promote."""
        return self.add_learner(name, url) or self.promote(name)

    def remove(self, name: str) -> str | None:
        if name not in self.members:
            return f"etcdserver: member not found ({name})"
        removed = self.members[name]
        voters = self.voters()
        left = len(voters) - (0 if removed.learner else 1)
        started = sum(m.started for n, m in voters.items() if n != name)
        if left and started < self.quorum(left):
            return (
                f"etcdserver: re-configuration failed due to not enough started members ({started} of the "
                f"{left} left, {self.quorum(left)} needed)"
            )
        why = self._unhealthy()
        if why:
            return why
        del self.members[name]
        return None
