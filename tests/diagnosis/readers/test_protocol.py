"""A reader is one module: once listed in READERS, it is read window by window, merged across windows and processes,
its line numbers moved when stretches are joined, and added up across a job's files, with no other code changed."""

from __future__ import annotations

import re

import pytest

import diagnosis.readers
from diagnosis import engine, reading
from diagnosis.readers import READERS, reader_literals
from diagnosis.readers.base import FileReading, JobParts, Window
from diagnosis.rules import Rules

KILLED = re.compile(r"(?:^|\s)Killed(?:\s|$)")


class KilledReader:
    """The shell's `Killed` (a process ended by SIGKILL, often the OOM killer): the line numbers it was printed on."""

    name = "killed"
    literals = frozenset({("Killed", False)})

    def read(self, window: Window, part: FileReading) -> None:
        found = []
        for start, end in window.scanner.lines_with("Killed"):
            if window.start <= start < window.limit and KILLED.search(window.scanner.text[start:end]):
                found.append(window.lines.line_number(start))
        part.parts[self.name] = found

    def merge(self, into: FileReading, later: FileReading) -> None:
        into.parts[self.name] = into.parts.get(self.name, []) + later.parts.get(self.name, [])

    def shift(self, part: FileReading, by: int) -> None:
        part.parts[self.name] = [line + by for line in part.parts.get(self.name, [])]

    def job_add(self, job: JobParts, reading: FileReading) -> None:
        job.parts.setdefault(self.name, []).extend((reading.label, line) for line in reading.parts.get(self.name, []))


@pytest.fixture
def with_killed(monkeypatch):
    readers = (*READERS, KilledReader())
    monkeypatch.setattr(diagnosis.readers, "READERS", readers)  # its words join the literal pass
    monkeypatch.setattr(reading, "READERS", readers)
    monkeypatch.setattr(engine, "READERS", readers)
    return Rules(signatures=[])


LOG = "".join(
    f"[rank{r}]: step {n} loss 1.{n:03d}\n" if n % 97 else "/bin/bash: line 1:  4242 Killed  python train.py\n"
    for n in range(1, 2000)
    for r in (n % 4,)
).encode()


def test_every_reader_s_words_join_the_one_literal_pass():
    assert all(reader.literals <= Rules(signatures=[]).literals for reader in READERS)
    assert reader_literals() == frozenset().union(*(reader.literals for reader in READERS))


def test_the_words_of_a_reader_added_to_the_list_join_the_literal_pass(with_killed):
    assert ("Killed", False) in with_killed.literals


def test_a_new_reader_reads_a_whole_file(with_killed):
    whole = reading.source_read(LOG, with_killed, label=None, repair=False)
    assert whole.parts["killed"] == [n for n in range(1, 2000) if n % 97 == 0]


def test_a_new_reader_gives_the_same_part_read_in_small_windows(with_killed):
    whole = reading.source_read(LOG, with_killed, label=None, repair=False)
    windowed = reading.source_read(LOG, with_killed, label=None, repair=False, window_bytes=4096, lookahead_bytes=512)
    assert windowed.parts["killed"] == whole.parts["killed"]


def test_a_new_reader_s_lines_move_when_stretches_are_joined(with_killed):
    half = LOG.index(b"\n", len(LOG) // 2) + 1
    first = reading.source_read(LOG[:half], with_killed, label=None, repair=False)
    second = reading.source_read(LOG[half:], with_killed, label=None, repair=False)
    whole = reading.source_read(LOG, with_killed, label=None, repair=False)
    assert reading.readings_join([first, second]).parts["killed"] == whole.parts["killed"]


def test_a_new_reader_is_added_up_across_a_job_s_files(with_killed, monkeypatch):
    seen = {}
    real = engine.job_diagnose

    def spy(readings, rules, **kwargs):
        job = JobParts()
        for one in readings:
            for reader in engine.READERS:
                reader.job_add(job, one)
        seen.update(job.parts)
        return real(readings, rules, **kwargs)

    monkeypatch.setattr(engine, "job_diagnose", spy)
    engine.log_diagnose([("a.log", LOG), ("b.log", b"ok\nKilled\n")], with_killed)
    assert seen["killed"][-1] == ("b.log", 2) and ("a.log", 97) in seen["killed"]
