"""The one place the Lambda functions get their powertools Logger, Tracer and Metrics.

The service and namespace are those the stack also sets on every function (``POWERTOOLS_*``,
``workflow.environment``): the Logger and Metrics built here at import and powertools' own readers
of those variables agree.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer

from offset_restore.kafka.log_safety import keep_secrets_out_of_logs
from offset_restore.workflow.environment import NAMESPACE, SERVICE

__all__ = ["NAMESPACE", "SERVICE", "logger", "metrics", "tracer"]

keep_secrets_out_of_logs()  # every handler imports this module before it makes an AWS call
logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)
