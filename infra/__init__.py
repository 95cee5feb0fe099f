"""CDK constructs and stacks of offset-restore."""
