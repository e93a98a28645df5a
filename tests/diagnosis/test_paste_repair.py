"""Damaged pastes are repaired before matching, and evidence still points at the user's own line numbers."""

import textwrap
from pathlib import Path

import pytest

from diagnosis.text import LineLocator, paste_repair

WATCHDOG = (
    "[rank1]:[E0612 10:14:03.482911 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600086 "
    "milliseconds before timing out."
)


def wrap(line: str, width: int) -> list[str]:
    return [line[i : i + width] for i in range(0, len(line), width)]


def test_a_watchdog_line_hard_wrapped_at_the_terminal_width_is_joined_again():
    other = "[rank2]:[E0612 10:14:03.482911 ProcessGroupNCCL.cpp:632] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600091 milliseconds before timing out."
    text = "\n".join(["Loading checkpoint shards: 100%", *wrap(WATCHDOG, 80), *wrap(other, 80), "done"])
    repaired = paste_repair(text)
    assert WATCHDOG in repaired.text.split("\n") and other in repaired.text.split("\n")


def test_repaired_lines_keep_the_line_numbers_of_the_paste():
    text = "\n".join(["first line", *wrap(WATCHDOG, 100), "x" * 100, "y" * 30, "last line"])
    repaired = paste_repair(text)
    locator = LineLocator(repaired.text, repaired.joins)
    assert locator.line_number(repaired.text.index("last line")) == text.split("\n").index("last line") + 1


def test_a_record_split_after_a_comma_is_joined_with_the_space_the_wrap_ate():
    text = WATCHDOG.replace("NumelIn=1, ", "NumelIn=1,\n")
    assert paste_repair(text).text == WATCHDOG


# PyTorch 2.6's two watchdog lines, as printed, and as someone laid them out to read them in an issue
PRINTED_2_6 = (
    "[Rank 4] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=27732, OpType=_REDUCE_SCATTER_BASE, "
    "NumelIn=215585536, NumelOut=26948192, Timeout(ms)=1800000) ran for 1800003 milliseconds before timing out.\n"
    "[Rank 4] failure detected by watchdog at work sequence id: 27732 PG status: last enqueued work: 27753, "
    "last completed work: 27731"
)
LAID_OUT_2_6 = """[Rank 4] Watchdog caught collective operation timeout:
WorkNCCL(SeqNum=27732, OpType=_REDUCE_SCATTER_BASE,
         NumelIn=215585536, NumelOut=26948192, Timeout(ms)=1800000)
         ran for 1800003 milliseconds before timing out.
[Rank 4] failure detected by watchdog at work sequence id: 27732
         PG status: last enqueued work: 27753, last completed work: 27731"""


def test_a_watchdog_message_laid_out_over_indented_lines_is_put_back_on_its_lines():
    assert paste_repair(LAID_OUT_2_6).text == PRINTED_2_6


def test_the_parts_of_a_laid_out_watchdog_message_keep_the_line_numbers_of_the_paste():
    repaired = paste_repair(LAID_OUT_2_6)
    locator = LineLocator(repaired.text, repaired.joins)
    assert locator.line_number(repaired.text.index("[Rank 4] failure")) == 5


def test_indented_lines_under_other_messages_are_left_alone():
    text = 'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n    ran for 3 milliseconds'
    assert paste_repair(text).text == text


def test_lines_of_one_format_that_share_the_widest_length_are_not_joined():
    lines = [WATCHDOG.replace("Rank 1", f"Rank {n}").replace("[rank1]", f"[rank{n}]") for n in range(1, 4)]
    assert paste_repair("\n".join(lines)).text.split("\n") == lines


@pytest.mark.parametrize("label", ["{n}: ", "  {n}: ", "worker-{n}: ", "gpu-node-0{n}.cluster: "])
def test_lines_a_launcher_labels_are_not_joined_when_they_share_the_widest_length(label):
    """srun --label (`0: `, `1: `, right-aligned past 9) and deepspeed's or pdsh's host names: each rank's watchdog line
    is a line of its own."""
    lines = [label.format(n=n) + WATCHDOG.replace("Rank 1", f"Rank {n}").replace("[rank1]", f"[rank{n}]") for n in range(1, 4)]
    assert paste_repair("\n".join(lines)).text.split("\n") == lines


def test_an_html_escaped_paste_is_unescaped():
    text = "&gt; compiling and loading fused kernels ...\nRuntimeError: &quot;NCCL error&quot;"
    assert paste_repair(text).text == '> compiling and loading fused kernels ...\nRuntimeError: "NCCL error"'


def test_a_log_that_merely_mentions_an_ampersand_is_left_alone():
    text = "python train.py && echo done\nA&B testing"
    assert paste_repair(text).text == text


def test_dump_sections_of_the_widest_length_are_not_joined_to_their_answers():
    """Regression: the debug server's `=== Rank <r>: <url> ===` headers of a health check dump all share the widest
    length, and were re-joined to the JSON answer under each one as if a terminal had wrapped them."""
    text = "\n".join(
        f'=== Rank {r}: http://gpu-node-07:5{r}041/handler/c10d_health_check? ===\n{{"healthy":true,"unhealthy_backends":[]}}'
        for r in range(4)
    )
    assert paste_repair(text).text == text


DESYNC_LOG = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "desync_rank0_broadcast_3ranks_torch25.log"
# PyTorch 2.5's timeout and progress lines of one rank (ProcessGroupNCCL.cpp:616 and :1785), as printed
PRINTED_2_5 = [
    "[rank0]:[E0702 09:24:07.972281866 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=119, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600081 milliseconds "
    "before timing out.",
    "[rank0]:[E0702 09:24:07.201164104 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank 0] Exception "
    "(either an error or timeout) detected by watchdog at work: 119, last enqueued NCCL work: 119, last completed NCCL "
    "work: 118.",
]


@pytest.mark.parametrize("width", [64, 80, 100])
def test_watchdog_lines_a_chat_wrapped_at_words_are_put_back_on_their_lines(width):
    """A chat (or a terminal that wraps at words) puts a line break where PyTorch printed a space: the break goes back
    to that space, so the rank reader sees each rank's whole line."""
    wrapped = [part for line in PRINTED_2_5 for part in textwrap.wrap(line, width)]
    assert paste_repair("\n".join(wrapped)).text.split("\n") == PRINTED_2_5


@pytest.mark.parametrize("width", [72, 80, 100, 120])
def test_a_paste_wrapped_at_words_is_not_glued_where_a_line_fills_the_width(width):
    """Lines of a word-wrapped paste that happen to be of the widest length lost a space, not a character: joined as a
    terminal's wrap would be, they glue words together ("mightrun", "PGGUID")."""
    lines = DESYNC_LOG.read_text().split("\n")
    wrapped = [part for line in lines for part in (textwrap.wrap(line, width) or [""])]
    assert sum(len(part) == max(map(len, wrapped)) for part in wrapped) >= 2
    assert set(paste_repair("\n".join(wrapped)).text.split()) <= set(" ".join(lines).split())


# PyTorch 2.14's pair (ProcessGroupNCCL.cpp:685 and :2241; the second with two spaces after its prefix), as printed
PRINTED_2_14 = [
    "[rank0]:[E1121 04:12:40.686963977 ProcessGroupNCCL.cpp:685] [PG ID 0 PG GUID 0(default_pg) Rank 0] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=1214, OpType=ALLREDUCE, NumelIn=33554432, NumelOut=33554432, "
    "Timeout(ms)=600000) ran for 600077 milliseconds before timing out.",
    "[rank0]:[E1121 04:12:40.686963977 ProcessGroupNCCL.cpp:2241] [PG ID 0 PG GUID 0(default_pg) Rank 0]  failure detected "
    "by watchdog at work sequence id: 1214 PG status: last enqueued work: 1214, last completed work: 1213",
]


@pytest.mark.parametrize("width", [72, 80, 100])
def test_newer_watchdog_lines_a_chat_wrapped_at_words_are_read_as_printed(width):
    """Where a wrap falls on the second line's double space it eats both: that break comes back as one space."""
    wrapped = [part for line in PRINTED_2_14 for part in textwrap.wrap(line, width)]
    repaired = paste_repair("\n".join(wrapped)).text.split("\n")
    assert [line.split() for line in repaired] == [line.split() for line in PRINTED_2_14]


def test_a_record_cut_at_the_right_edge_is_not_joined_to_the_line_after_it():
    """A terminal view that does not wrap cuts long lines: an open WorkNCCL( record followed by a line of its own was
    cut, not wrapped."""
    lines = [PRINTED_2_5[0][:170], PRINTED_2_5[1][:170]]
    assert paste_repair("\n".join(lines)).text.split("\n") == lines
