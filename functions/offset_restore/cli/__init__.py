"""The offset-restore command, one function per command, and the operator's commands for a deployed system."""
