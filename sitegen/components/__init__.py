"""Components: one module per Argo CD Application, in folders named for their AppProjects.

`base` says what a component declares, `context` what it sees, `values` the typed Helm values blocks
charts share, and `catalog` lists every component (the registry everything else is derived from).
"""
