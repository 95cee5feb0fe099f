"""A migration (the source is up): wait for the groups to stop on the source, take the final snapshot,
wait for the target to hold their records, then plan and apply — every group exact, live ones too."""
