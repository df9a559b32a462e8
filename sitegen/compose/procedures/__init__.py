"""The RUNBOOK's procedures, one module each, in the words of the section it writes; `runbook` puts
them in order and `book` numbers their steps."""
