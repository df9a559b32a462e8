"""The vault as the runbook fills it (secrets.py reads it: External Secrets' logins and keys)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Vault:
    """What the runbook's vault steps set up: per cluster auth mount, roles, policies, and keys with
    the properties written to each (KV v2: `vault kv put` writes a new version with exactly its
    properties, `vault kv patch` adds to the current one)."""

    keys: set[str] = field(default_factory=set)
    mounts: dict[str, dict[str, str]] = field(default_factory=dict)  # auth mount -> its config
    roles: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)  # (mount, role) -> params
    policies: dict[str, set[str]] = field(default_factory=dict)  # policy -> readable keys
    # key -> its properties; None: the runbook leaves them to the operator (one per client)
    properties: dict[str, frozenset[str] | None] = field(default_factory=dict)

    def listed(self, key: str, listed: str) -> None:
        """A key a step lists for the operator to write ("- `<key>`: <prop>, <prop>. <what they hold>"):
        its properties up to the first sentence's end; a parenthesis says they are the operator's."""
        self.keys.add(key)
        names = listed.split(". ", 1)[0].rstrip(".")
        self.properties[key] = (
            None if names.startswith("(") else frozenset(p.strip() for p in names.split(","))
        )

    def write(self, verb: str, args: list[str]) -> None:
        """`vault kv put|patch <mount>/<key> <prop>=<value>...`."""
        key = args[0].partition("/")[2]
        written = frozenset(a.split("=", 1)[0] for a in args[1:] if "=" in a)
        if verb == "patch":
            if key not in self.keys:
                return  # KV v2 patches an existing secret only (the command fails)
            before = self.properties.get(key, frozenset())
            written = None if before is None else before | written
        self.keys.add(key)
        self.properties[key] = written

    def missing_property(self, key: str, prop: str) -> bool:
        held = self.properties.get(key)
        return held is not None and prop not in held
