"""The NCCL harvester reads formats NCCL computes into a buffer: the constant head sprintf writes first, a field after."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "catalogue"))

from harvest_nccl import harvest_file  # noqa: E402

# Shaped as NCCL 2.3.7's src/transport/net_socket.cu and 2.7.8's src/graph/rings.cc print them.
INTERFACES = """
ncclResult_t ncclSocketDevices(int* ndev, int** scores) {
  char line[1024];
  sprintf(line, "CUDA Dev %d, IP Interfaces : ", cudaDev);
  for (int i=0; i<ncclNetIfs; i++) {
    sprintf(line+strlen(line), "%s(%s) ", ncclNetIfNames+i*MAX_IF_NAME_SIZE, pathDists[distance]);
  }
  INFO(INIT|NET,"%s", line);
  return ncclSuccess;
}
"""
RINGS = """
void dumpLine(int* values, int nranks, const char* prefix) {
  int prefixlen = strlen(prefix);
  char line[STRLENGTH+1];
  strncpy(line, prefix, PREFIXLEN);
  for (int i=0; i<nranks && i<MAXWIDTH; i++) sprintf(line+prefixlen+4*i, " %3d", values[i]);
  INFO(NCCL_INIT,"%s", line);
}

ncclResult_t ncclBuildRings(int nrings, int* rings, int rank, int nranks, int* prev, int* next) {
  for (int r=0; r<nrings; r++) {
    char prefix[30];
    /*sprintf(prefix, "[%d] Channel %d Prev : ", rank, r);
    dumpLine(prev+r*nranks, nranks, prefix);*/
    sprintf(prefix, "Channel %02d/%02d : ", r, nrings);
    if (rank == 0) dumpLine(rings+r*nranks, nranks, prefix);
  }
  return ncclSuccess;
}
"""


def formats(text: str) -> list[str]:
    return [row.format for row in harvest_file("2.7.8", "v2.7.8-1", "src/x.cc", text)]


def test_a_buffer_built_in_a_loop_is_its_constant_head_and_a_trailing_field() -> None:
    assert formats(INTERFACES) == ["CUDA Dev %d, IP Interfaces : %s"]


def test_a_helper_printing_a_parameter_takes_the_head_its_caller_wrote_outside_comments() -> None:
    assert formats(RINGS) == ["Channel %02d/%02d : %s"]


def test_a_buffer_of_unknown_content_stays_a_bare_field() -> None:
    assert formats('void f(const char* s) {\n  INFO(NCCL_INIT, "%s", s);\n}\n') == ["%s"]
