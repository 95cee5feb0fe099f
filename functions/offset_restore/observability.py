"""The one place the Lambda functions get their powertools Logger, Tracer and Metrics."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer

__all__ = ["NAMESPACE", "SERVICE", "logger", "metrics", "tracer"]

SERVICE = "offset-restore"
NAMESPACE = "OffsetRestore"

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)
