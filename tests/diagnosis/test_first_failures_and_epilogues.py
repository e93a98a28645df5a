"""The first failure is the earliest cause the log shows: a rank's own exception (with its innermost frame, the place
to look; a DataLoader worker's own error, not the re-raise), never a launcher's epilogue (torchrun's closing
`sys.exit(main())` traceback and failure table, torch.distributed.launch's CalledProcessError) and never "a timeout
nothing explains" when no timeout was printed. A paste copied with line numbers reads as without them, and ranks seen
give a lower bound of the world size, not the world size.

The KeyError logs are real output of torchrun --nproc_per_node=2 on CPU with gloo (tests/fixtures/generators/
train_gloo_faults.py, scenarios h4 and h5; PyTorch 2.1.2, 2.13.0 and 2.14.1). The watchdog paste is a real PyTorch 2.5
log (tests/fixtures/logs/heldout/fsdp-llama-recipes-epoch2-torch25.log).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings

from diagnosis import diagnose
from diagnosis.engine import log_diagnose
from diagnosis.readers.events import failure_exception
from diagnosis.readers.stacks import stacks_extract
from diagnosis.result import Catalog
from diagnosis.scan.scanner import TextScanner
from diagnosis.text import LineLocator, paste_repair
from diagnosis.verdict import failure_text

from tests.diagnosis.generated_runs import GENERATED, RELEASES, confident, run
from tools.corpus import content_rules

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
TRIAGE = "nccl-watchdog-timeout-triage"


@pytest.fixture(scope="module")
def rules():
    return content_rules(settings.CONTENT_DIR)


def stacks(text: str):
    return stacks_extract(TextScanner(text, [("Traceback (most recent call last):", False)]), LineLocator(text))


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("scenario", ["keyerror-dataloader-rank1-peer-closed", "keyerror-dataloader-workers-rank1-peer-closed"])
def test_a_rank_s_own_exception_is_the_first_failure_and_its_frame_the_place_to_look(rules, scenario, release):
    diagnosis = run(rules, GENERATED / f"{scenario}-{release}.log")
    failure = diagnosis.failure
    assert failure.kind == "exception"
    assert failure.text == "KeyError: 'img_00037'"  # the loader worker's own error, not the re-raise
    assert failure.frame == "/home/user/work/train/train_gloo_faults.py:__getitem__"
    assert failure.rank == (None if release == "torch212" else 1)  # 2.1 prints no "[rankN]:" prefix
    assert diagnosis.facts["failed_before_timeout"] is True


@pytest.mark.parametrize("release", RELEASES)
def test_no_timeout_printed_never_reads_as_a_timeout_nothing_explains(rules, release):
    path = GENERATED / f"keyerror-dataloader-rank1-peer-closed-{release}.log"
    assert "Timed out" not in path.read_text() and "Watchdog" not in path.read_text()
    catalog = Catalog(titles={TRIAGE: TRIAGE}, case_urls={TRIAGE: f"/kb/{TRIAGE}/"}, harmless_url="/kb/harmless/")
    result = diagnose([(path.name, path.read_bytes())], rules, catalog)
    text = result.to_text()
    assert TRIAGE not in confident(result.diagnosis)
    assert "the log shows a timeout" not in text
    assert "First failure:" in text and "KeyError: 'img_00037'" in text
    assert "innermost frame: /home/user/work/train/train_gloo_faults.py:__getitem__" in text


def test_lines_another_process_wrote_inside_a_traceback_do_not_end_it():
    # PyTorch 2.1.2's unprefixed output: rank 0's print lands between a frame of rank 1 and its source line
    text = (GENERATED / "keyerror-dataloader-rank1-peer-closed-torch212.log").read_text()
    assert "630, in __next__\n[rank0] step 8 loss 268.0\n    data = self._next_data()" in text
    first = stacks(text)[0]
    assert first.exception == "KeyError: 'img_00037'"
    assert first.frames[0] == "/home/user/work/train/train_gloo_faults.py:__getitem__"
    # and two of the agent's lines inside rank 1's KeyboardInterrupt traceback (scenario d1)
    text = (GENERATED / "hang-faulthandler-then-ctrlc-torch212.log").read_text()
    interrupted = [s for s in stacks(text) if s.exception == "KeyboardInterrupt"]
    assert interrupted and interrupted[0].frames[0] == "/home/user/work/train/train_late.py:main"


def test_a_rank_named_above_an_unprefixed_traceback_is_not_its_rank(rules):
    # allreduce-rank1-silent (2.1.2): rank 0 timed out; the line above its traceback is rank 1's own print
    diagnosis = run(rules, GENERATED / "allreduce-rank1-silent-gloo-timeout-torch212.log")
    assert diagnosis.facts["timed_out_ranks"] == [0] and diagnosis.facts["silent_ranks"] == [1]
    assert all(1 not in group["ranks"] for group in diagnosis.stack_groups)


# A real 4-rank watchdog paste (PyTorch 2.5), from its first timeout to torchrun's closing table
REAL = (LOGS / "heldout" / "fsdp-llama-recipes-epoch2-torch25.log").read_text().splitlines()[32:]


@pytest.mark.parametrize("gutter", ["{n} ", "{n:>4} | ", "{n:>6}\t"])
def test_a_paste_with_line_numbers_is_read_without_them(rules, gutter):
    numbered = "".join(gutter.format(n=n) + line + "\n" for n, line in enumerate(REAL, 1))
    repaired = paste_repair(numbered)
    assert repaired.text.split("\n")[: len(REAL)] == REAL
    assert any("line numbers" in note for note in repaired.notes)
    plain = log_diagnose([("log", "\n".join(REAL).encode())], rules)
    diagnosis = log_diagnose([("log", numbered.encode())], rules)
    assert diagnosis.facts.get("timed_out_ranks") == plain.facts.get("timed_out_ranks") == [1, 2, 3]
    assert diagnosis.failure == plain.failure


def test_srun_labels_are_not_line_numbers():
    labelled = "".join(f"{rank}: step {rank}\n" for rank in range(8))
    assert paste_repair(labelled).text == labelled


def test_torchrun_s_closing_traceback_and_table_are_never_the_first_failure(rules):
    numbered = "".join(f"{n} {line}\n" for n, line in enumerate(REAL, 1))
    assert "sys.exit(main())" in numbered and "exitcode  : -6" in numbered
    assert log_diagnose([("log", numbered.encode())], rules).failure is None  # SIGABRT: the watchdog's own abort
    launcher = [s for s in stacks("\n".join(REAL)) if any("launch_agent" in f for f in s.frames)]
    assert launcher and not any(failure_exception(s) for s in launcher)


def test_a_bare_exit_code_in_torchrun_s_table_is_no_first_failure(rules):
    # rank 1 timed out in the barrier and exited 1; the table's "Root Cause" is that exit, not a cause
    diagnosis = run(rules, GENERATED / "rank0-busy-barrier-gloo-timeout-torch2141.log")
    assert diagnosis.failure is None
    assert "exited with an error" not in diagnosis.verdict.summary


def test_ranks_seen_without_a_world_size_give_a_lower_bound_only(rules):
    lines = [line for line in REAL if "Watchdog caught collective operation timeout" in line and line.startswith("[rank")]
    assert sorted({int(line[5]) for line in lines}) == [1, 2, 3]
    diagnosis = log_diagnose([("log", "\n".join(lines).encode())], rules)
    assert diagnosis.verdict.silent == [0]
    assert "rank 0 of at least 4 never reported" in diagnosis.verdict.summary
    assert "world_size" not in diagnosis.facts


@pytest.mark.parametrize("release", RELEASES)
def test_the_others_errors_are_named_as_the_first_failure_s_effect(rules, release):
    diagnosis = run(rules, GENERATED / f"keyerror-dataloader-rank1-peer-closed-{release}.log")
    [effect] = diagnosis.failure.effects
    assert "Connection closed by peer [127.0.0.1]:" in effect
    assert effect.startswith("a process: " if release == "torch212" else "rank 0: ")
    assert "the error that followed (" in failure_text(diagnosis.failure)


def test_a_kill_torchrun_reports_at_the_end_still_explains_the_errors_printed_above_it(rules):
    diagnosis = run(rules, GENERATED / "rank1-sigkill-childfailed-torch2150.log")
    assert diagnosis.failure.kind == "sigkill"
    assert [e.split(":")[0] for e in diagnosis.failure.effects] == ["rank 0"]
