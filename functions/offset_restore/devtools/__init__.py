"""Not part of the Lambda asset: the demo, the workflow on one machine (moto), the local and Apache
Kafka test brokers, memory measurement."""
