"""The bring-up simulation grounded in the real systems (issue 24): each defect a real first install or
day 2 would hit, put back into a copy of the hydrated tree, is named with component, object and reason;
harmless changes still pass."""

from __future__ import annotations

from .bringup_cases import ONE, TWO, blocked, edited, run, runbook_without

# --- Vault login --------------------------------------------------------------------------------------


def test_readers_that_may_not_have_their_login_reviewed(site, inputs):
    """The mounts review a login with the login's own token: without system:auth-delegator every store
    of the cluster stays NotReady and the root stops at the stores' wave."""
    tree = edited(
        inputs, ONE, "one-cluster/apps/ai/secret-store/clusterrolebinding.vault-readers-token-review",
        lambda doc: False,
    )  # fmt: skip
    blocked(
        run(site, inputs, ONE, tree=tree), "ai-secret-store", "SecretStore", "may not create tokenreviews"
    )


def test_an_auth_mount_never_configured(site, inputs):
    texts = runbook_without(inputs, TWO, r"^vault write auth/kubernetes-aistor/config .*$")
    blocked(run(site, inputs, TWO, texts=texts), "aistor", "auth mount kubernetes-aistor is not configured")
