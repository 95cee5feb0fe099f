"""The deployed workflow on one machine: the real state machine definition executed by moto's Step
Functions interpreter, every Lambda task running the real handler in this process, against local
brokers and moto's S3, DynamoDB and SNS. For the demo, the e2e tests and the cost benchmark; moto is
a development dependency, so nothing in Lambda imports this module."""

from __future__ import annotations

import gc
import importlib
import io
import json
import logging
import os
import threading
import time
import traceback
import zipfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore.client import BaseClient
from moto import mock_aws
from moto.awslambda.models import LambdaFunction
from moto.core.responses import ActionResult
from moto.dynamodb.exceptions import ItemSizeTooLarge
from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
from moto.dynamodb.models.table import Table
from moto.dynamodb.responses import DynamoHandler
from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
from offset_restore_handlers.wiring import TASK_HANDLERS, arn_placeholder

from offset_restore.devtools import process_memory
from offset_restore.devtools.moto_query import partition_query
from offset_restore.kafka.cluster import KafkaCluster
from offset_restore.stores.keys import restore_object

ASL = Path(__file__).resolve().parents[3] / "infra" / "statemachine" / "offset_restore.asl.json"
TABLE = BUCKET = "offset-restore"
FUNCTIONS = TASK_HANDLERS
"""The handler of each function the state machine names (the same list the stack deploys)."""
REGION: Any = "eu-west-1"

logging.getLogger("moto.stepfunctions.parser").setLevel(logging.CRITICAL)


@dataclass
class Invocation:
    """One task invocation, for the benchmarks' cost model and memory figures (filled in as the
    invocation runs)."""

    function: str
    seconds: float
    cpu_seconds: float
    """The handler's thread's CPU time (moto's work for it included): its duration when Map
    iterations overlap, since then the wall time mostly measures waiting for the others."""
    peak_growth_mb: float | None
    """Resident memory gained above the process's level when the invocation began (Linux only)."""
    alone: bool
    """No other invocation overlapped it (a Map runs several at once; then the growth is shared)."""
    aws_seconds: float = 0.0
    """Wall time with at least one AWS request in flight (moto's work here; requests the handler
    sends a few at once, ``stores/in_flight.py``, counted once while they overlap)."""
    aws_cpu_seconds: float = 0.0
    """The handler's thread's CPU time inside AWS requests: moto's share of ``cpu_seconds``."""
    thread: int = field(default_factory=threading.get_ident)
    """The handler's thread (requests from the worker threads it starts count, their CPU time not)."""
    in_flight: int = 0
    busy_since: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)
    aws_calls: Counter[str] = field(default_factory=Counter)
    """AWS requests by ``service.Operation``, DynamoDB items and S3 bytes (``_count_aws_call``)."""
    kafka_requests: int = 0
    """Kafka requests the handler's clusters sent."""
    kafka_calls: Counter[str] = field(default_factory=Counter)
    """The same requests by API (``Fetch``, ``OffsetCommit``...): where a phase's requests go."""
    gc_seconds: float = 0.0
    """Wall time of the full garbage collections (generation 2) the handler's thread ran with no AWS
    request of its invocation in flight: a full collection walks every object of this process, moto's
    tables of every item the run wrote among them, where a Lambda's heap holds only the handler's own
    (``own_seconds`` leaves them out; the young generations' collections stay in)."""
    gc_cpu_seconds: float = 0.0
    """The same collections' thread CPU time (what ``own_seconds`` leaves out of an overlapping invocation)."""
    error: str | None = None
    """The exception the handler raised (its class and message), for a failed invocation."""
    trace: str | None = None
    """Its whole traceback: a failure under many concurrent invocations is rarely seen twice."""

    @property
    def own_seconds(self) -> float:
        """The handler's own time, moto's and the full collections left out: thread CPU time for Map
        iterations that overlapped; for an invocation that ran alone, wall time, or its thread's CPU
        time where that is more (a handler that goes on working while its requests are in flight on
        other threads, as Prepare does writing work items, has that work inside ``aws_seconds``)."""
        by_cpu = self.cpu_seconds - self.aws_cpu_seconds - self.gc_cpu_seconds
        if self.alone:
            return max(0.0, self.seconds - self.aws_seconds - self.gc_seconds, by_cpu)
        return max(0.0, by_cpu)


INVOCATIONS: list[Invocation] = []
AWS_CALLS: Counter[str] = Counter()
"""AWS requests made by handlers, every invocation's ``aws_calls`` added when it ends."""

_in_handler: ContextVar[Invocation | None] = ContextVar("offset_restore_invocation", default=None)
"""The invocation a request belongs to: a context variable, so that the worker threads a handler
sends requests on (``stores/in_flight.py`` copies the context into them) count for it."""
_window = {"open": 0, "started": 0, "base": 0.0}
_window_lock = threading.Lock()


@contextmanager
def accounted_to(record: Invocation) -> Iterator[Invocation]:
    """The AWS requests and Kafka requests made in this block (and on the worker threads it sends
    requests on) counted and timed into ``record``, as an invocation's are."""
    token = _in_handler.set(record)
    try:
        yield record
    finally:
        _in_handler.reset(token)


def _invoke_in_process(self: LambdaFunction, event: Any = None) -> tuple[str, bool, str]:
    """moto's one container-bound step, replaced: import the function's handler and call it."""
    module_name, function_name = str(self.handler).rsplit(".", 1)
    handler = getattr(importlib.import_module(module_name), function_name)
    payload = json.loads(event) if isinstance(event, str | bytes) else (event or {})
    with _window_lock:
        if _window["open"] == 0 and process_memory.reset_peak():
            _window["base"] = process_memory.resident_mb() or 0.0
        _window["open"] += 1
        _window["started"] += 1
        started_before = _window["started"]
        alone = _window["open"] == 1
    started, cpu_started = time.perf_counter(), time.thread_time()
    record = Invocation(str(self.function_name), 0.0, 0.0, None, alone)
    try:
        with accounted_to(record):
            result = handler(payload, _Context(function_name=str(self.function_name)))
        return json.dumps(result), False, ""
    except Exception as error:  # the task fails with the exception's class name as the error
        record.error = f"{type(error).__name__}: {str(error)[:300]}"
        record.trace = "".join(traceback.format_exception(error))
        body = {
            "errorType": type(error).__name__,
            "errorMessage": str(error),
            "trace": traceback.format_exception(error)[-3:],
        }
        return json.dumps(body), True, ""
    finally:
        seconds, cpu_seconds = time.perf_counter() - started, time.thread_time() - cpu_started
        with _window_lock:
            peak = process_memory.peak_mb()
            alone = alone and _window["started"] == started_before and _window["open"] == 1
            _window["open"] -= 1
            growth = None if peak is None else max(0.0, peak - _window["base"])
        record.seconds, record.cpu_seconds, record.peak_growth_mb, record.alone = seconds, cpu_seconds, growth, alone
        INVOCATIONS.append(record)
        AWS_CALLS.update(record.aws_calls)


def _count_aws_call(
    counts: Counter[str], client: Any, operation: str, params: dict[str, Any], answer: dict[str, Any]
) -> None:
    """One request into ``counts``: by ``service.Operation``, with DynamoDB items written and read
    (``dynamodb.ItemsWritten``/``ItemsRead``) and S3 bytes moved (``s3.Bytes``)."""
    service = client.meta.service_model.service_name
    counts[f"{service}.{operation}"] += 1
    if service == "s3":
        body = params.get("Body")
        counts["s3.Bytes"] += (len(body) if isinstance(body, bytes | str) else 0) + int(
            answer.get("ContentLength", 0) or 0
        )
    if service != "dynamodb":
        return
    if operation == "BatchWriteItem":
        counts["dynamodb.ItemsWritten"] += sum(len(v) for v in params.get("RequestItems", {}).values())
    elif operation in ("PutItem", "UpdateItem", "DeleteItem"):
        counts["dynamodb.ItemsWritten"] += 1
    elif operation == "BatchGetItem":
        counts["dynamodb.ItemsRead"] += sum(len(v) for v in answer.get("Responses", {}).values())
    elif operation in ("Query", "Scan"):
        counts["dynamodb.ItemsRead"] += int(answer.get("Count", 0))
    elif operation == "GetItem":
        counts["dynamodb.ItemsRead"] += "Item" in answer


def _counting_api_call(original: Any) -> Any:
    """Count each AWS request a handler makes, and time it: the benchmarks separate the handlers'
    own time from moto's, and estimate the deployed run from the counts (``bench/deployed_estimate.py``)."""

    def call(client: Any, operation: str, params: dict[str, Any]) -> Any:
        record = _in_handler.get()
        if record is None:
            return original(client, operation, params)
        with record.lock:
            if record.in_flight == 0:
                record.busy_since = time.perf_counter()
            record.in_flight += 1
        cpu_started = time.thread_time()
        _thread.in_aws = True
        try:
            answer = original(client, operation, params)
        finally:
            _thread.in_aws = False
            with record.lock:
                record.in_flight -= 1
                if record.in_flight == 0:
                    record.aws_seconds += time.perf_counter() - record.busy_since
                if threading.get_ident() == record.thread:
                    record.aws_cpu_seconds += time.thread_time() - cpu_started
        with record.lock:
            _count_aws_call(record.aws_calls, client, operation, params, answer)
        return answer

    return call


_thread = threading.local()
"""Per thread: ``in_aws`` while an AWS request (moto's work) runs, ``gc_started`` during a full collection."""


def _timing_full_collections(phase: str, info: dict[str, int]) -> None:
    """A ``gc.callbacks`` entry: a full collection run by a handler's thread outside AWS requests is
    added to its invocation's ``gc_seconds`` (moto's own are inside its requests' time already)."""
    record = _in_handler.get()
    if record is None or info.get("generation") != 2 or getattr(_thread, "in_aws", False):
        return
    if phase == "start":
        # While a request the handler sent from another thread is in flight, the wall time is in
        # ``aws_seconds`` already (the collection holds the interpreter: in_flight cannot change).
        _thread.gc_started = (time.perf_counter(), time.thread_time(), record.in_flight == 0)
        return
    started = getattr(_thread, "gc_started", None)
    _thread.gc_started = None
    if started is not None and threading.get_ident() == record.thread:
        with record.lock:
            record.gc_seconds += time.perf_counter() - started[0] if started[2] else 0.0
            record.gc_cpu_seconds += time.thread_time() - started[1]


@contextmanager
def _full_collections_timed() -> Iterator[None]:
    gc.callbacks.append(_timing_full_collections)
    try:
        yield
    finally:
        gc.callbacks.remove(_timing_full_collections)


def _counting_kafka_close(original: Any) -> Any:
    """Add a handler's Kafka requests to its invocation when it closes its cluster connection."""

    def close(cluster: KafkaCluster) -> None:
        record = _in_handler.get()
        if record is not None:
            counted = cluster.requests_by_api(clear=True)
            record.kafka_requests += sum(counted.values())
            record.kafka_calls.update(counted)
        original(cluster)

    return close


def _plain_dynamodb_results(original: Any) -> Any:
    """moto 5.2 serializes every DynamoDB answer through a generic shape walker that costs ~1.5 ms per
    item: a Query of 120,000 mappings took minutes, so local runs measured moto, not the handlers.
    DynamoDB's wire format is the JSON of moto's own result, so encode that directly; anything that
    is not plain JSON (errors, dates) still goes through moto's serializer. The equality of both is
    checked by ``tests/integration/test_local_aws.py``."""

    def encode(value: object) -> object:
        if isinstance(value, DynamoType):
            return value.to_json()
        raise TypeError(type(value).__name__)

    def execute_result(self: ActionResult, context: Any) -> Any:
        if context.service_model.service_name == "dynamodb" and isinstance(self.result, dict):
            try:
                body = json.dumps(self.result, default=encode)
            except TypeError:
                return original(self, context)
            return 200, {"Content-Type": "application/x-amz-json-1.0"}, body
        return original(self, context)

    return execute_result


def _item_size_checked_once(self: Item, hash_key: Any, range_key: Any, attrs: dict[str, Any]) -> None:
    """moto's ``Item`` re-measures the whole item at every attribute it sets (quadratic: ~0.5 ms per
    mapping written). Same 405,000-byte limit and error, measured once."""
    self.hash_key, self.range_key = hash_key, range_key
    self.attrs = LimitedSizeDict()
    for key, value in attrs.items():
        dict.__setitem__(self.attrs, key, DynamoType(value))
    if self.size() > 405_000:
        raise ItemSizeTooLarge


@dataclass
class _Context:
    """What powertools reads of a Lambda context."""

    function_name: str
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:eu-west-1:123456789012:function:offset-restore-local"
    aws_request_id: str = "local"

    def get_remaining_time_in_millis(self) -> int:
        return 900_000


def create_table(client: Any, name: str = TABLE) -> str:
    """The project's one DynamoDB table (docs/design.md §5.4): partition key ``pk``, sort key ``sk``."""
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


class _FastRetries:
    """Retry back-off of moto's interpreter, a thousand times faster (Wait states keep real time): the
    AcquireLock's retries of a refused run (30 s doubling, six times: 31.5 minutes on AWS) take 1.9 s."""

    @staticmethod
    def sleep(seconds: float) -> None:
        time.sleep(seconds / 1000)


@dataclass
class Workflow:
    arn: str
    sfn: Any
    s3: Any
    sns_queue: list[str]

    def report(self, restore_id: str) -> dict[str, Any]:
        body = self.s3.get_object(Bucket="offset-restore", Key=restore_object(restore_id, "report.json"))["Body"]
        return dict(json.loads(body.read()))

    def start(self, run_input: dict[str, Any], name: str) -> str:
        return str(
            self.sfn.start_execution(stateMachineArn=self.arn, name=name, input=json.dumps(run_input))["executionArn"]
        )

    def run(self, run_input: dict[str, Any], name: str, timeout_s: float = 120) -> dict[str, Any]:
        return self.wait(self.start(run_input, name), timeout_s)

    def wait(self, execution_arn: str, timeout_s: float = 120) -> dict[str, Any]:
        execution = {"executionArn": execution_arn}
        deadline = time.monotonic() + timeout_s
        while True:
            described = self.sfn.describe_execution(executionArn=execution["executionArn"])
            if described["status"] != "RUNNING" or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        history = [
            event
            for page in self.sfn.get_paginator("get_execution_history").paginate(executionArn=execution["executionArn"])
            for event in page["events"]
        ]
        described["history"] = history
        described["states"] = [
            e["stateEnteredEventDetails"]["name"] for e in history if "stateEnteredEventDetails" in e
        ]
        return described


@contextmanager
def local_workflow(source_servers: str, target_servers: str, unfenced: bool = False) -> Iterator[Workflow]:
    """The deployed workflow, locally: moto with the state machine interpreter on, the bucket, table,
    topic and functions created, the ASL file loaded with their ARNs. Restores what it changes.
    ``unfenced``: the target writes without its fence (a broker that does not apply transactions)."""
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "OffsetRestore",
        "SOURCE_CLUSTER_NAME": "src",
        "TARGET_CLUSTER_NAME": "dr",
        "SOURCE_BOOTSTRAP_SERVERS": source_servers,
        "SOURCE_SECURITY_PROTOCOL": "PLAINTEXT",
        "TARGET_BOOTSTRAP_SERVERS": target_servers,
        "TARGET_SECURITY_PROTOCOL": "PLAINTEXT",
        "TARGET_UNFENCED": "true" if unfenced else "false",
        "KAFKA_CONNECT_TIMEOUT_S": "5",
        "TABLE_NAME": "offset-restore",
        "RESTORE_BUCKET": "offset-restore",
        "SNAPSHOT_BUCKET": "offset-restore",
    }
    saved = {key: os.environ.get(key) for key in [*env, "AWS_PROFILE", "AWS_SESSION_TOKEN", "TOPIC_ARN"]}
    patches = [
        (LambdaFunction, "_invoke_lambda", _invoke_in_process),
        (retrier_decl, "time", _FastRetries()),
        (BaseClient, "_make_api_call", _counting_api_call(vars(BaseClient)["_make_api_call"])),
        (KafkaCluster, "close", _counting_kafka_close(vars(KafkaCluster)["close"])),
    ]
    try:
        for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN"):
            os.environ.pop(key, None)
        os.environ.update(env)
        with (
            _patched(patches),
            _full_collections_timed(),
            faster_moto(),
            mock_aws(config={"stepfunctions": {"execute_state_machine": True}}),
        ):
            yield _create(env)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def _patched(patches: list[tuple[Any, str, Any]]) -> Iterator[None]:
    originals = [(obj, name, vars(obj)[name]) for obj, name, _ in patches]
    try:
        for obj, name, value in patches:
            setattr(obj, name, value)
        yield
    finally:
        for obj, name, value in originals:
            setattr(obj, name, value)


def faster_moto() -> Any:
    """moto's DynamoDB without its two per-item costs that local runs at scale would otherwise measure
    (see the two functions) and with each Query served from its partition key's items
    (``moto_query``); answers and limits unchanged; and one request at a time, as the real service
    answers each atomically (``_one_request_at_a_time``). Also for a moto server in this process."""
    return _patched(
        [
            (ActionResult, "execute_result", _plain_dynamodb_results(vars(ActionResult)["execute_result"])),
            (Item, "__init__", _item_size_checked_once),
            (DynamoHandler, "call_action", _one_request_at_a_time(vars(DynamoHandler)["call_action"])),
            (Table, "query", partition_query(vars(Table)["query"])),
        ]
    )


_DYNAMODB_LOCK = threading.RLock()


def _one_request_at_a_time(original: Any) -> Any:
    """moto's tables take no lock: a Query iterates every item of the table while another thread's write
    adds one, and fails (``RuntimeError: dictionary changed size during iteration``), an answer DynamoDB
    never gives. A local workflow runs a Map's items as threads of one process: four Translate
    invocations of 64 at once failed so at 120,000 group-partitions. Requests are answered one after
    another (moto's work holds the interpreter anyway)."""

    def call_action(handler: DynamoHandler) -> Any:
        with _DYNAMODB_LOCK:
            return original(handler)

    return call_action


def _create(env: dict[str, str]) -> Workflow:
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket="offset-restore", CreateBucketConfiguration={"LocationConstraint": REGION})
    create_table(boto3.client("dynamodb", region_name=REGION))
    sns, sqs = boto3.client("sns", region_name=REGION), boto3.client("sqs", region_name=REGION)
    topic = sns.create_topic(Name="offset-restore")["TopicArn"]
    queue_url = sqs.create_queue(QueueName="notifications")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)
    os.environ["TOPIC_ARN"] = topic
    role = boto3.client("iam", region_name=REGION).create_role(
        RoleName="offset-restore", AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []})
    )["Role"]["Arn"]
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("placeholder.py", "# the handlers run in process")
    lam = boto3.client("lambda", region_name=REGION)
    substitutions = {}
    for name, handler in FUNCTIONS.items():
        arn = lam.create_function(
            FunctionName=f"offset-restore-{name}",
            Runtime="python3.12",
            Role=role,
            Handler=handler,
            Code={"ZipFile": zipped.getvalue()},
        )["FunctionArn"]
        substitutions[arn_placeholder(name)] = arn
    definition = ASL.read_text()
    for key, value in substitutions.items():
        definition = definition.replace("${" + key + "}", value)
    sfn = boto3.client("stepfunctions", region_name=REGION)
    arn = sfn.create_state_machine(name="offset-restore", definition=definition, roleArn=role)["stateMachineArn"]

    messages: list[str] = []

    class Queue(list[str]):
        def __iter__(self) -> Iterator[str]:
            answer = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)
            for message in answer.get("Messages", []):
                messages.append(json.loads(message["Body"])["Message"])
            return iter(messages)

    return Workflow(arn=arn, sfn=sfn, s3=s3, sns_queue=Queue())
