"""The states of the Step Functions workflow, one module each, in the order the state machine runs them:
``validate`` (ValidateInput, with the approval policy's gate), ``prepare`` (Prepare), ``translate`` (Translate),
``summarize`` (Summarize), ``source`` (a migration's looks at the source), ``check_empty`` (CheckEmpty),
``commit`` (Commit, and the rollback mode's). Each Lambda handler (``offset_restore_handlers``) parses its
input and makes one call into its state's module; what a state does is read here, top to bottom."""

from __future__ import annotations
