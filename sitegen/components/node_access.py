"""What an account on a node that runs tenant code may do to the rest of the cluster: the phrases
check/node_rbac.py finds in the rendered RBAC and `Component.node_rbac` reviews."""

READS_SECRETS = "reads Secrets in every namespace"
CREATES_PODS = "creates pods outside its namespace"
CHANGES_NODES = "patches Nodes"
GRANTS_RBAC = "grants RBAC (bind, escalate, impersonate or new bindings)"
