"""Every storage key layout in one place (docs/design.md §5.4 and §5.5): the DynamoDB items of a restore,
of the lock and of a restore tool's progress, and the restore's S3 folder. Snapshots keep theirs in
``snapshot.store``, which owns that format end to end."""

from __future__ import annotations

__all__ = [
    "APPROVAL_SK",
    "COMMIT_IDEMPOTENCY_KEY_PREFIX",
    "COMMIT_IDEMPOTENCY_PK",
    "COMPLETE_SK",
    "LOCK_SK",
    "MAPPING_PREFIX",
    "META_SK",
    "REPORT_PAGE",
    "lock_name_pk",
    "lock_pk",
    "mapping_sk",
    "progress_key",
    "progress_sk",
    "report_document",
    "report_page",
    "restore_folder",
    "restore_object",
    "restore_pk",
]

META_SK = "META"
"""The restore's recorded input (``runs``)."""
APPROVAL_SK = "APPROVAL"
"""The approval gate's question and its answer (``workflow.approval``)."""
MAPPING_PREFIX = "MAP#"
LOCK_SK = "LOCK"
COMMIT_IDEMPOTENCY_PK = "IDEMPOTENCY#commit"
"""powertools Idempotency records of the commit step (a retried batch returns its first answer)."""
COMMIT_IDEMPOTENCY_KEY_PREFIX = "commit"
"""The sort key of such a record is ``commit#<hash of the step's input>``: the prefix is fixed here, not
derived from where the code lives (powertools' default is the function's module and name), so that
moving the code does not leave a retry unable to find its first answer."""
REPORT_PAGE = "report.html"
"""The report people open (the run's summary links to it); report.json and report.md sit beside it."""


def restore_pk(restore_id: str) -> str:
    """The partition key of every item of one restore (its input and its mappings)."""
    return f"RESTORE#{restore_id}"


def mapping_sk(group: str, topic: str, partition: int, target_partition: int | None = None) -> str:
    """One plan entry: ``MAP#<group>#<topic>#<partition>``, and ``>``<target partition> after it for
    an entry of a topic the restore re-partitioned (one entry per target partition)."""
    onto = "" if target_partition is None else f">{target_partition}"
    return f"{MAPPING_PREFIX}{group}#{topic}#{partition}{onto}"


def lock_pk(cluster: str) -> str:
    """The single-writer lock of one target cluster, by the cluster id its brokers report (a lock taken
    by an earlier version sits under the cluster's name: ``apply.locks`` reads and moves it)."""
    return f"LOCK#{cluster}"


def lock_name_pk(name: str) -> str:
    """Which cluster id a cluster name's lock is under (written by each acquire), for the callers that
    know only the name: ``unlock --target-cluster``, a release that must work while the target is down."""
    return f"LOCKNAME#{name}"


def restore_folder(restore_id: str) -> str:
    """The restore's folder in the restore bucket: work items, the commit index, the reports."""
    return f"restores/{restore_id}"


def restore_object(restore_id: str, name: str) -> str:
    """An object of the restore's folder: ``restores/<restore_id>/<name>``."""
    return f"{restore_folder(restore_id)}/{name}"


def report_document(restore_id: str, name: str) -> str:
    """One of the run's report documents (report.json, report.md, report.html), in the restore's folder."""
    return restore_object(restore_id, name)


def report_page(restore_id: str) -> str:
    """The key of the run's report.html, the link its notification and its result give."""
    return report_document(restore_id, REPORT_PAGE)


def progress_key(cluster: str, topic: str, partition: int) -> str:
    """A restore tool's progress on one target partition: its (source -> target) pairs and its end."""
    return f"PROGRESS#{cluster}#{topic}#{partition}"


def progress_sk(source_offset: int) -> str:
    """A pair's sort key: the source offset, zero-padded to 20 digits (they sort as numbers)."""
    return f"{source_offset:020d}"


COMPLETE_SK = "COMPLETE"
"""The item a restore tool writes when it finished the partition (``last_source_offset``); it sorts after
every pair's key."""
