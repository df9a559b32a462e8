"""dist/ read back: its YAML as Kubernetes reads it (kube_yaml.py) and its documents, each knowing the
variant, area, cluster and app its path places it in (documents.py; the layout is sitegen.model.paths).
One reader for synth's checks, validate, the bring-up, diff and the reports; and the grammar of
RUNBOOK.md (runbook.py), which the procedures and the components' steps write and the bring-up reads."""
