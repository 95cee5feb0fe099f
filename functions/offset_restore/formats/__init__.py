"""The documents the stages hand to each other, as pure models with no I/O: the plan and its entries, and
the names a Kafka Streams application's internal topics take. A stage that reads a document (apply
reads the plan) imports it from here, never from the stage that writes it (translate)."""
