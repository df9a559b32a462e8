"""Operations that hold (issue 27), checked on the rendered dist/."""

from __future__ import annotations

import yaml

from .conftest import DIST


def test_whole_node_jobs_give_their_gpus_back_when_a_node_is_missing():
    """Kueue's waitForPodsReady (config v1beta2: present means on): a workload whose pods are not all
    Ready within the timeout is evicted and requeued with backoff, its quota freed for others."""
    for variant in ("one-cluster", "two-cluster"):
        path = DIST / variant / "apps/ai/kueue/kueue-system.configmap.kueue-manager-config.yaml"
        (config_map,) = [d for d in yaml.safe_load_all(path.read_text()) if d]
        config = yaml.safe_load(config_map["data"]["controller_manager_config.yaml"])
        assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
        wait = config["waitForPodsReady"]
        assert "enable" not in wait  # v1beta1's switch; v1beta2 rejects unknown fields
        assert wait["timeout"] == "10m" and wait["requeuingStrategy"]["timestamp"] == "Eviction"
        assert (
            wait["requeuingStrategy"]["backoffBaseSeconds"] <= wait["requeuingStrategy"]["backoffMaxSeconds"]
        )
