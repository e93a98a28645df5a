"""The command line reads a whole job: a torchrun --log-dir tree, an archive of it, Flight Recorder dumps."""

import io
import shutil
import tarfile
from pathlib import Path

import pytest
from django.core.management.base import CommandError

from tests.kb.diagnose_cli import diagnose_json

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
TIMEOUT = (
    "[rank{r}]:[E ProcessGroupNCCL.cpp:563] [Rank {r}] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600103 "
    "milliseconds before timing out.\n"
)


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    """torchrun --log-dir: <dir>/<run_id>_<suffix>/attempt_0/<local_rank>/stderr.log; rank 0 prints nothing."""
    root = tmp_path / "logs" / "job-71_x8k2p1" / "attempt_0"
    for rank in range(4):
        (root / str(rank)).mkdir(parents=True)
        (root / str(rank) / "stdout.log").write_text("")
        (root / str(rank) / "stderr.log").write_text(TIMEOUT.format(r=rank) if rank else "> building GPT model ...\n")
    return tmp_path / "logs"


def test_a_torchrun_log_dir_is_read_as_one_job(log_dir):
    result = diagnose_json(str(log_dir))
    assert result["facts"]["timed_out_ranks"] == [1, 2, 3] and result["ranks"]["silent"] == [0]


def test_an_archive_of_the_log_dir_gives_the_same_answer(log_dir, tmp_path):
    archive = tmp_path / "job.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(log_dir, arcname="logs")
    assert diagnose_json(str(archive))["ranks"] == diagnose_json(str(log_dir))["ranks"]


def test_a_hostile_archive_is_refused_with_a_message(tmp_path):
    archive = tmp_path / "evil.tar"
    with tarfile.open(archive, "w") as tar:
        info = tarfile.TarInfo("../../etc/cron.d/x")
        data = b"* * * * * root id\n"
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(CommandError, match="evil.tar"):
        diagnose_json(str(archive))


def test_flight_recorder_dumps_name_the_rank_that_issued_a_different_collective(tmp_path):
    dumps = tmp_path / "dumps"
    shutil.copytree(FIXTURES / "flight_recorder" / "mismatched_op", dumps)
    result = diagnose_json(str(dumps))
    assert result["matches"][0]["slug"] == "collective-mismatch-desync"
    assert "rank(s) 3" in result["flight_recorder"]["summary"]
