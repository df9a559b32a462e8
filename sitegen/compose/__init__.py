"""Composition: the components of each cluster, the Argo CD delivery, host files, the runbook, and
the dist/ tree they are written to (its layout defined once, in `paths`)."""
