"""What the reads of one plan learned of each partition's batches and limits, kept in one place so every
later read starts from it (``Learned.rounds``) and every estimate of a read's cost asks it
(``Learned.point_bytes``, priced by ``rounds.point_cost`` as the rounds' own runs are)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from offset_restore.kafka.model import ONE_BATCH, TP
from offset_restore.reading.rounds import POINT_READ_BYTES, Fetch, FetchRounds, fitted_limit, point_cost, rank

__all__ = ["Learned"]


@dataclass
class Learned:
    limits: dict[TP, int] = field(default_factory=dict)
    """Each partition's byte limit that a point read needed (its batches larger than 16 KB: 1 MB producer
    batches, compressed): every later read asks that much from its first round, instead of learning it
    again through empty answers (a partial batch each)."""
    batch_bytes: dict[TP, int] = field(default_factory=dict)
    """The largest batch a ``ONE_BATCH`` read of each partition brought (``FetchRounds.batch_bytes``)."""
    largest_batch: dict[TP, int] = field(default_factory=dict)
    """The largest whole batch earlier reads saw of each partition: later point reads are fitted to it
    from their first round (``FetchRounds._fitted``: lz4 batches of 6 KB)."""
    uncut: set[TP] = field(default_factory=set)
    """The partitions whose broker sent answers uncut (``FetchRounds.uncut``): a later read stops short of
    records it holds from its first round."""

    def rounds(self, fetch: Fetch, ends: Mapping[TP, int], partition_max_bytes: int | None = None) -> FetchRounds:
        """Fetch rounds through ``fetch``, reading up to ``ends``, each partition at least at the limit it
        was learned to need."""
        first = partition_max_bytes or POINT_READ_BYTES
        return FetchRounds(
            fetch,
            ends=ends,
            partition_bytes=first,
            limits={tp: max(first, limit, key=rank) for tp, limit in self.limits.items()},
            batch_bytes=dict(self.batch_bytes),
            largest_batch=dict(self.largest_batch),
            uncut=set(self.uncut),
        )

    def learn(
        self,
        limits: Mapping[TP, int],
        batch_bytes: Mapping[TP, int],
        largest: Mapping[TP, int] | None = None,
        uncut: Iterable[TP] = (),
    ) -> None:
        """Keep the limits point reads grew to (``FetchRounds.limits`` of rounds without a larger first
        limit, or of a search), the batch sizes their ``ONE_BATCH`` reads measured, the largest whole
        batch each partition's answers held, and the partitions answered uncut.

        A partition whose limit had to grow is read ``ONE_BATCH`` from then on unless it grew past that
        (``rank``): its batches are over 16 KB, and a grown 64 KB limit that served once may have served
        only because its partition came first in the request (the one Apache Kafka sends an oversized
        batch whole). On 1 MB gzip batches, keeping 64 KB instead read 20% fewer bytes in twice the
        requests and took a quarter longer."""
        for tp, limit in limits.items():
            self.limits[tp] = max(self.limits.get(tp, ONE_BATCH), limit, key=rank)
        for tp, size in batch_bytes.items():
            self.batch_bytes[tp] = max(self.batch_bytes.get(tp, 0), size)
        for tp, size in (largest or {}).items():
            self.largest_batch[tp] = max(self.largest_batch.get(tp, 0), size)
        self.uncut.update(uncut)

    def point_bytes(self, tp: TP) -> int:
        """What one point read of ``tp`` costs, as far as the reads have measured (``point_cost``, the
        price the rounds' own runs use)."""
        limit = self.limits.get(tp, POINT_READ_BYTES)
        largest = self.largest_batch.get(tp, 0)
        return point_cost(limit, fitted_limit(limit, largest, tp in self.uncut), largest, self.batch_bytes.get(tp, 0))
