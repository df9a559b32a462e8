"""The RUNBOOK's site-wide procedures, one module each, in the words of the section it writes; `runbook`
puts them and the components' own steps (`Component.operator_steps`) in order, and the runbook grammar
(sitegen/tree/runbook.py) numbers their steps."""
