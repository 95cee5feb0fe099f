"""What the Lambda handlers call: the run's input and steps, one run per restore id, the commit index,
work items, the report, settings from the environment, observability."""
