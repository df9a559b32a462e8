"""sitegen: the site model, CLI, dist writer and reports behind the cdk8s constructs."""

import os
from pathlib import Path

# jsii runs every cdk8s call in a Node child process and prints an end-of-life banner on the
# machine's Node 20. The npm lock carries a supported Node (node-linux-<arch>); use it unless the
# caller chose one. This must happen before the first `import cdk8s`, hence package import time.
_PROJECT_NODE = Path(__file__).resolve().parent.parent / "node_modules" / ".bin" / "node"
if "JSII_NODE" not in os.environ and _PROJECT_NODE.exists():
    os.environ["JSII_NODE"] = str(_PROJECT_NODE)
