"""Stage 3, the commit: wait until a group is empty, save what it had, commit, verify; roll back; the
single-writer lock."""
