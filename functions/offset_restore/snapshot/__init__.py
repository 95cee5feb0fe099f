"""Stage 1, the source: each group's committed offsets and the records around them (a live cluster or a
restored __consumer_offsets), with the filters and the record fingerprint."""
