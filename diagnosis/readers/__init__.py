"""The readers of a log, in the order a window is read: each may use what the ones before it found in the same
window (the signatures skip the lines the harmless reader set aside; the events reader looks at the stacks that the
stacks and debug-dump readers found). Reading, merging and the job loop iterate READERS; adding a format is adding a
module here and its name to this tuple (diagnosis/readers/README.md)."""

from __future__ import annotations

from diagnosis.readers import catalogue, coll_trace, debug_dumps, events, facts, harmless, signatures, stacks, timeouts, tools
from diagnosis.readers.base import Reader

READERS: tuple[Reader, ...] = (
    harmless.READER,
    signatures.READER,
    facts.READER,
    tools.READER,
    stacks.READER,
    debug_dumps.READER,
    events.READER,
    timeouts.READER,
    catalogue.READER,
    coll_trace.READER,
)


def reader_literals() -> frozenset[tuple[str, bool]]:
    """Every literal the readers' own patterns need (the rules' signatures add theirs), for the one literal pass."""
    return frozenset().union(*(reader.literals for reader in READERS))
