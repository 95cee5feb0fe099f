"""Plan entries in DynamoDB (docs/design.md §5.4): ``pk=RESTORE#<restore_id>``, ``sk=MAP#<group>#<topic>#<partition>``.

Re-running a translation is harmless: a new entry is written, a ``pending`` or ``unmapped`` one may
be replaced (the restore moved on), anything else — a mapping already made, or committed — stays as
it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from offset_restore.errors import StorageError
from offset_restore.formats.plan import PlanEntry
from offset_restore.stores.batches import batch_get, until_processed
from offset_restore.stores.in_flight import concurrently
from offset_restore.stores.keys import MAPPING_PREFIX, mapping_sk, restore_pk
from offset_restore.stores.raw_items import keep_items_raw

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["MappingStore", "entry_key", "entry_of"]

REPLACEABLE = ("pending", "unmapped")
INEXACT = "mapped, not exact"
"""A mapped entry without proof, as ``put`` tells it from the others (a migration replaces it)."""


def entry_key(restore_id: str, entry: PlanEntry) -> dict[str, dict[str, str]]:
    return {
        "pk": {"S": restore_pk(restore_id)},
        "sk": {"S": mapping_sk(entry.group, entry.topic, entry.partition, entry.target_partition)},
    }


def _attribute(value: Any) -> dict[str, Any]:
    if value is None:
        return {"NULL": True}
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, int):
        return {"N": str(value)}
    if isinstance(value, dict):  # an entry's source_positions
        return {"M": {str(k): _attribute(v) for k, v in value.items()}}
    return {"S": str(value)}


def _value(attribute: Mapping[str, Any]) -> Any:
    if "NULL" in attribute:
        return None
    if "BOOL" in attribute:
        return attribute["BOOL"]
    if "N" in attribute:
        return int(attribute["N"])
    if "M" in attribute:
        return {k: _value(v) for k, v in attribute["M"].items()}
    return attribute["S"]


def entry_of(item: Mapping[str, Any]) -> PlanEntry:
    """The plan entry a mapping item holds (its key aside): items written by any version read, the
    fields added since taking their defaults (``outcome`` from the reason, ``PlanEntry``)."""
    return PlanEntry.model_validate({k: _value(v) for k, v in item.items() if k not in ("pk", "sk")})


class MappingStore:
    def __init__(self, table: str, client: DynamoDBClient) -> None:
        self.table = table
        self.client = keep_items_raw(client)  # the steps that read every mapping spend their CPU parsing them

    def put(self, restore_id: str, entries: Iterable[PlanEntry], *, until_exact: bool = False) -> dict[str, int]:
        """Write new entries and replace ``pending`` / ``unmapped`` ones (``until_exact``: mapped ones
        not exact too, as a migration translates again until the target holds every record); returns how
        many entries were ``written`` and how many left ``unchanged``.

        The statuses are read first (BatchGetItem, 100 keys a call) and the writes batched (25 a
        call): a work item of 2,000 entries costs 100 calls, not 2,000 conditional PutItems. The
        read-then-write is safe because only translation writes new mappings, and the workflow runs a
        restore's translation before anything else touches them (apply overwrites with ``save``).
        """
        entries = list(entries)
        keys = [entry_key(restore_id, entry) for entry in entries]
        current = self._statuses(restore_id, [key["sk"]["S"] for key in keys])
        replaceable = ("absent", *REPLACEABLE, *((INEXACT,) if until_exact else ()))
        writes = {  # by key: one batch may not name an item twice
            key["sk"]["S"]: self._item(key, entry)
            for key, entry in zip(keys, entries, strict=True)
            if current.get(key["sk"]["S"], ("absent", None))[0] in replaceable
        }
        counted = {
            key["sk"]["S"]: entry.never_restored
            for key, entry in zip(keys, entries, strict=True)
            if key["sk"]["S"] not in writes and entry.never_restored != current[key["sk"]["S"]][1]
        }
        writes.update(self._recounted(restore_id, counted))
        stale = self._other_shape(restore_id, entries, {key["sk"]["S"] for key in keys})
        self._batch_write(restore_id, [{"PutRequest": {"Item": item}} for item in writes.values()])
        pk = {"S": restore_pk(restore_id)}
        self._batch_write(restore_id, [{"DeleteRequest": {"Key": {"pk": pk, "sk": {"S": sk}}}} for sk in stale])
        return {"written": len(writes), "unchanged": len(entries) - len(writes)}

    def _other_shape(self, restore_id: str, entries: list[PlanEntry], kept: set[str]) -> list[str]:
        """A topic whose shape changed has other keys (one per target partition, or the held ones) than
        an earlier translation of this restore may have given it: the keys of those earlier entries of
        the group and topic, to delete, lest they hold the group for ever or write a partition twice.
        One already committed is never dropped (its previous offset is what rollback puts back): the
        run stops instead, before writing anything."""
        pairs = {(e.group, e.topic) for e in entries if e.target_partition is not None or e.holds_group}
        stale: list[str] = []
        for group, topic in sorted(pairs):
            for item in self._keys_of(restore_id, group, topic):
                if item["sk"] in kept:
                    continue
                if item["status"] == "committed":
                    raise StorageError(
                        f"group {group!r} was committed on {topic} by this restore when the topic had another "
                        "shape; roll the restore back, then plan under a new restore id"
                    )
                stale.append(item["sk"])
        return stale

    def _keys_of(self, restore_id: str, group: str, topic: str) -> Iterator[dict[str, Any]]:
        """The sort key and status of every entry of ``group`` on source topic ``topic``."""
        paginator = self.client.get_paginator("query")
        for page in paginator.paginate(
            TableName=self.table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues={
                ":pk": {"S": restore_pk(restore_id)},
                ":prefix": {"S": f"{MAPPING_PREFIX}{group}#{topic}#"},
            },
            ProjectionExpression="sk, #status, #group, topic",
            ExpressionAttributeNames={"#status": "status", "#group": "group"},
            ConsistentRead=True,
        ):
            for item in page.get("Items", []):
                values = {k: _value(v) for k, v in item.items()}
                if values.get("group") == group and values.get("topic") == topic:  # not a group named "g#t#..."
                    yield values

    def _statuses(self, restore_id: str, sort_keys: list[str]) -> dict[str, tuple[str, int | None]]:
        """The status of each existing entry (a mapped entry not exact as ``INEXACT``) and its
        ``never_restored``, by sort key."""
        items = self._batch_get(restore_id, sort_keys, projection="sk, #status, #exact, never_restored")
        return {
            item["sk"]["S"]: (
                INEXACT
                if item["status"]["S"] == "mapped" and not item.get("exact", {}).get("BOOL", False)
                else item["status"]["S"],
                _value(item.get("never_restored", {"NULL": True})),
            )
            for item in items
        }

    def _recounted(self, restore_id: str, counted: Mapping[str, int | None]) -> dict[str, dict[str, Any]]:
        """Entries an earlier translation answered, kept as they are (mapped, or committed: their offsets and
        what rollback puts back), with the count of records they will never read that this translation found:
        a restore declared complete after they were mapped. Only a count it found is written: none is unsaid."""
        found = {sk: count for sk, count in counted.items() if count is not None}
        items = self._batch_get(restore_id, list(found)) if found else []
        return {item["sk"]["S"]: {**item, "never_restored": _attribute(found[item["sk"]["S"]])} for item in items}

    def entries_by_keys(self, restore_id: str, sort_keys: list[str]) -> list[PlanEntry]:
        """The entries with these sort keys (a commit batch's, from the commit index)."""
        return [entry_of(item) for item in self._batch_get(restore_id, sort_keys)]

    def _batch_get(self, restore_id: str, sort_keys: list[str], projection: str | None = None) -> list[dict[str, Any]]:
        """Items by key, 100 per BatchGetItem (a few at once), strongly consistent; unprocessed keys read
        again."""
        pk = {"S": restore_pk(restore_id)}
        keys = [{"pk": pk, "sk": {"S": sk}} for sk in dict.fromkeys(sort_keys)]
        extra: dict[str, Any] = {}
        if projection:
            names = {name: name[1:] for name in ("#status", "#exact") if name in projection}
            extra.update(ProjectionExpression=projection, ExpressionAttributeNames=names)
        return batch_get(self.client, self.table, keys, f"the mappings of {restore_id}", **extra)

    @staticmethod
    def _item(key: dict[str, dict[str, str]], entry: PlanEntry) -> dict[str, Any]:
        item: dict[str, Any] = {**key}
        for name, value in entry.model_dump(mode="json").items():
            item[name] = _attribute(value)
        return item

    def save(self, restore_id: str, entries: Iterable[PlanEntry]) -> None:
        """Overwrite entries as apply changed them (status, previous offsets, verification), 25 per
        BatchWriteItem, a few at once. Only apply calls this, under the target cluster's lock."""
        items = [self._item(entry_key(restore_id, entry), entry) for entry in entries]
        self._batch_write(restore_id, [{"PutRequest": {"Item": item}} for item in items])

    def _batch_write(self, restore_id: str, writes: list[dict[str, Any]]) -> None:
        """Put and delete requests, 25 per BatchWriteItem, a few at once (``concurrently``): each done
        before this returns, so a saved outcome is saved when the caller goes on."""

        def write(chunk: list[dict[str, Any]]) -> None:
            subject = f"the mappings of {restore_id}"
            until_processed(self.client.batch_write_item, {self.table: chunk}, "UnprocessedItems", self.table, subject)

        concurrently(write, [writes[start : start + 25] for start in range(0, len(writes), 25)])

    def entries(self, restore_id: str, groups: Iterable[str] | None = None) -> list[PlanEntry]:
        return list(self.iter_entries(restore_id, groups))

    def iter_entries(self, restore_id: str, groups: Iterable[str] | None = None) -> Iterator[PlanEntry]:
        """Every mapping of the restore, page by page, in key order: steps that read them all (summarize,
        report) then hold one page, not 240,000 entries."""
        wanted = set(groups) if groups is not None else None
        paginator = self.client.get_paginator("query")
        for page in paginator.paginate(
            TableName=self.table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :map)",
            ExpressionAttributeValues={":pk": {"S": restore_pk(restore_id)}, ":map": {"S": MAPPING_PREFIX}},
            ConsistentRead=True,
        ):
            for item in page.get("Items", []):
                if wanted is None or item["group"]["S"] in wanted:
                    yield entry_of(item)
