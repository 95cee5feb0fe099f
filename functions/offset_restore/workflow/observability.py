"""The one place the Lambda functions get their powertools Logger, Tracer and Metrics."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer

from offset_restore.kafka.log_safety import keep_secrets_out_of_logs

__all__ = ["NAMESPACE", "SERVICE", "logger", "metrics", "tracer"]

SERVICE = "offset-restore"
NAMESPACE = "OffsetRestore"

keep_secrets_out_of_logs()  # every handler imports this module before it makes an AWS call
logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)
