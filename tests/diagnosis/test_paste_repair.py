"""Damaged pastes are repaired before matching, and evidence still points at the user's own line numbers."""

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
