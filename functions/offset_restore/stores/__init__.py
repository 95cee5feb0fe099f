"""Where state lives: S3 or a folder, DynamoDB mappings, snapshots, conditional writes, and every key layout."""
