"""Every Kafka call: the cluster adapter (requests built and decoded here, I/O through kafka-python),
the records' types, connection settings, wire schemas kafka-python lacks, secrets kept out of its
logs."""
