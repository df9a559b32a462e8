"""Checks of what dist/ holds: schemas (core, CRDs, host config files), the placement engine and the
named policy rules, and the offline ApplicationSet expander."""
