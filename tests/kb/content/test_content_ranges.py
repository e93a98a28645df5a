"""Release ranges in the content agree with the names catalogue (issue 32): names.yaml, the release badges of
harmless entries, signatures and examples, and what the generated fix scripts export for each torch branch.
Rules and the definition of agreement: kb/content/ranges.py. Pure: no database."""

from __future__ import annotations

from pathlib import Path

from packaging.specifiers import SpecifierSet

from kb.content.names_catalogue import Catalogue, CatalogueEntry, load
from kb.content.ranges import disagreement, exported_by_release, range_problems, spec_of
from kb.content.yamllines import YamlDocument

ROOT = Path(__file__).resolve().parents[3]
CONTENT = ROOT / "content"
SKELETON = ROOT / "troubleshooter" / "script_skeleton"


def test_content_ranges_agree_with_the_names_catalogue():
    problems = range_problems(CONTENT, SKELETON, load())
    assert not problems, f"{len(problems)} release ranges disagree with content/catalogue/names:\n" + "\n".join(
        map(str, problems)
    )


# The rules, on small catalogues.

RELEASES = ("2.2.2", "2.5.1", "2.8.0", "2.14.1", "2.15.0")


def _catalogue(*entries: CatalogueEntry) -> dict[str, Catalogue]:
    return {"pytorch": Catalogue("torch", "pytorch", ("env", "flag"), RELEASES, {(e.kind, e.name): e for e in entries})}


def _names_doc(*entries: dict) -> YamlDocument:
    lines = {("names", i, key): 10 * i + 1 for i, e in enumerate(entries) for key in e}
    return YamlDocument(data={"names": list(entries)}, lines=lines, path="content/names.yaml")


def test_agreement_counts_every_harvested_release_both_ways():
    entry = CatalogueEntry("X", "env", "2.5.1", "2.14.1", "f.hpp")
    catalogue = _catalogue(entry)["pytorch"]
    assert disagreement(catalogue, entry, spec_of(">=2.5,<2.15"), ">=2.5,<2.15") == ""
    assert disagreement(catalogue, entry, spec_of(">=2.3,<2.15 (note)"), ">=2.3,<2.15") == ""  # no 2.3/2.4 harvested here
    assert "includes 2.15.0" in disagreement(catalogue, entry, spec_of(">=2.5"), ">=2.5")
    assert "excludes 2.5.1" in disagreement(catalogue, entry, spec_of(">=2.8,<2.15"), ">=2.8,<2.15")
    assert spec_of("any (deprecated alias)") == SpecifierSet("") and spec_of("releases with X") is None


def test_a_wrong_range_fails_with_file_line_and_what_the_catalogue_says():
    from kb.content.ranges import names_file_problems

    entry = CatalogueEntry("TORCH_NCCL_AVOID_RECORD_STREAMS", "env", "2.2.2", "2.14.1", "ProcessGroupNCCL.hpp")
    doc = _names_doc({"name": entry.name, "kind": "env", "software": "pytorch", "versions": ">=2.3", "source": "s"})
    [problem] = names_file_problems(doc, _catalogue(entry))
    assert str(problem) == (
        "content/names.yaml:1: TORCH_NCCL_AVOID_RECORD_STREAMS versions '>=2.3' but the catalogue says read in "
        "2.2.2–2.14.1 (ProcessGroupNCCL.hpp): '>=2.3' excludes 2.2.2, which reads it; '>=2.3' includes 2.15.0, which does not read it"
    )


def test_deprecation_must_match_both_ways():
    from kb.content.ranges import names_file_problems

    old = CatalogueEntry(
        "TORCH_NCCL_DUMP_ON_TIMEOUT", "env", "2.2.2", "2.15.0", "f.hpp", (), "TORCH_FR_DUMP_ON_TIMEOUT", "2.15.0"
    )
    plain = {"name": old.name, "kind": "env", "software": "pytorch", "versions": ">=2.2", "source": "s"}
    [problem] = names_file_problems(_names_doc(plain), _catalogue(old))
    assert "not marked deprecated" in problem.message and "TORCH_FR_DUMP_ON_TIMEOUT from 2.15.0" in problem.message
    marked = dict(plain, deprecated=True, replaced_by="TORCH_FR_DUMP_ON_TIMEOUT")
    assert names_file_problems(_names_doc(marked), _catalogue(old)) == []
    current = CatalogueEntry("TORCH_FR_BUFFER_SIZE", "env", "2.8.0", "2.15.0", "f.cpp")
    wrong = {"name": current.name, "kind": "env", "software": "pytorch", "versions": ">=2.8", "source": "s", "deprecated": True}
    assert "is marked deprecated" in names_file_problems(_names_doc(wrong), _catalogue(current))[0].message


def test_a_name_no_release_reads_fails():
    from kb.content.ranges import names_file_problems

    doc = _names_doc({"name": "TORCH_MADE_UP", "kind": "env", "software": ["pytorch", "cuda"], "versions": "any", "source": "s"})
    [problem] = names_file_problems(doc, _catalogue())
    assert "TORCH_MADE_UP (env) is not read by any harvested torch release (2.2.2–2.15.0)" in str(problem)


def test_script_branches_follow_release_at_least():
    from troubleshooter.scripts import _Export, _settings

    shell = _settings([_Export("TORCH_NCCL_TRACE_BUFFER_SIZE", "1", "", "PyTorch", False, ("2.8", "TORCH_FR_BUFFER_SIZE"))])
    assert [name for _, name in exported_by_release(shell, "2.7.1")] == ["TORCH_NCCL_TRACE_BUFFER_SIZE"]
    assert [name for _, name in exported_by_release(shell, "2.8.0")] == ["TORCH_FR_BUFFER_SIZE"]
    plain = _settings([_Export("TORCH_NCCL_DUMP_ON_TIMEOUT", "1", "", "PyTorch", False)])
    assert [name for _, name in exported_by_release(plain, "2.15.0")] == ["TORCH_NCCL_DUMP_ON_TIMEOUT"]


def test_script_exports_are_judged_per_release(tmp_path):
    """The 2.8 and 2.15 renames are handled by the composer (no problem); a name a release deprecates, exported for
    that release without a rename, and a name exported where it is not read yet are problems."""
    from kb.content.ranges import NameOwners, script_problems

    scripts = tmp_path / "content" / "scripts"
    scripts.mkdir(parents=True)
    (scripts / "p.yaml").write_text(
        "parts:\n  fr:\n    title: t\n    env:\n"
        "      - {only: {torch: [ge-2.5]}, name: TORCH_NCCL_TRACE_BUFFER_SIZE, value: '1', why: w}\n"
        "      - {only: {torch: [ge-2.5]}, name: TORCH_NCCL_DUMP_ON_TIMEOUT, value: '1', why: w}\n"
        "      - {only: {torch: [ge-2.5]}, name: TORCH_NCCL_ENABLE_TIMING, value: '1', why: w}\n",
        encoding="utf-8",
    )
    catalogue = _catalogue(
        CatalogueEntry("TORCH_NCCL_TRACE_BUFFER_SIZE", "env", "2.2.2", "2.15.0", "f", (), "TORCH_FR_BUFFER_SIZE", "2.8.0", "f"),
        CatalogueEntry("TORCH_FR_BUFFER_SIZE", "env", "2.8.0", "2.15.0", "f"),
        CatalogueEntry(
            "TORCH_NCCL_DUMP_ON_TIMEOUT", "env", "2.2.2", "2.15.0", "f", (), "TORCH_FR_DUMP_ON_TIMEOUT", "2.15.0", "f"
        ),
        CatalogueEntry("TORCH_FR_DUMP_ON_TIMEOUT", "env", "2.15.0", "2.15.0", "f"),
        # made up for this test: a deprecation the composer has no rename for
        CatalogueEntry("TORCH_NCCL_ENABLE_TIMING", "env", "2.2.2", "2.15.0", "f", (), "TORCH_TIMING", "2.15.0", "f"),
    )
    names = ("TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_NCCL_DUMP_ON_TIMEOUT", "TORCH_FR_BUFFER_SIZE", "TORCH_FR_DUMP_ON_TIMEOUT")
    owners = NameOwners({n: ("pytorch",) for n in (*names, "TORCH_NCCL_ENABLE_TIMING")})
    problems = script_problems(tmp_path / "content", tmp_path / "none", catalogue, owners)
    assert [str(p) for p in problems] == [
        "content/scripts/p.yaml:7: TORCH_NCCL_ENABLE_TIMING exported for PyTorch 2.15.0 (torch answer ge-2.5), but the catalogue "
        "says it is a deprecated alias of TORCH_TIMING from 2.15.0 (f): export TORCH_TIMING there"
    ]
    late = _catalogue(
        CatalogueEntry("TORCH_NCCL_TRACE_BUFFER_SIZE", "env", "2.2.2", "2.15.0", "f", (), "TORCH_FR_BUFFER_SIZE", "2.8.0", "f"),
        CatalogueEntry("TORCH_FR_BUFFER_SIZE", "env", "2.14.1", "2.15.0", "f"),
        CatalogueEntry(
            "TORCH_NCCL_DUMP_ON_TIMEOUT", "env", "2.2.2", "2.15.0", "f", (), "TORCH_FR_DUMP_ON_TIMEOUT", "2.15.0", "f"
        ),
        CatalogueEntry("TORCH_FR_DUMP_ON_TIMEOUT", "env", "2.15.0", "2.15.0", "f"),
        CatalogueEntry("TORCH_NCCL_ENABLE_TIMING", "env", "2.2.2", "2.15.0", "f"),
    )
    problems = script_problems(tmp_path / "content", tmp_path / "none", late, owners)
    assert [p.message.split(",")[0] for p in problems] == [
        "TORCH_FR_BUFFER_SIZE exported for PyTorch 2.8.0 (torch answer ge-2.5)"
    ]


def test_a_step_badge_needs_its_names_read_by_some_release_it_contains():
    from kb.content.frontmatter import front_matter_split
    from kb.content.ranges import NameOwners, _step_problems

    text = (
        "---\nsteps:\n  - anchor: fix-1\n    versions: {pytorch: '<2.8'}\n---\n## Fix {#fix}\n"
        "### 1. Record {#fix-1}\nexport TORCH_NCCL_TRACE_BUFFER_SIZE=2000 (TORCH_FR_BUFFER_SIZE from 2.8)\n"
        "### 2. Other {#fix-2}\nTORCH_FR_BUFFER_SIZE=1\n"
    )
    fm = front_matter_split(text)
    fm.path = "content/cases/x.md"
    catalogue = _catalogue(
        CatalogueEntry("TORCH_NCCL_TRACE_BUFFER_SIZE", "env", "2.2.2", "2.15.0", "f"),
        CatalogueEntry("TORCH_FR_BUFFER_SIZE", "env", "2.8.0", "2.15.0", "f"),
    )
    owners = NameOwners({"TORCH_NCCL_TRACE_BUFFER_SIZE": ("pytorch",), "TORCH_FR_BUFFER_SIZE": ("pytorch",)})
    assert [str(p) for p in _step_problems(fm, catalogue, owners)] == [
        "content/cases/x.md:8: TORCH_FR_BUFFER_SIZE in step fix-1 badged {pytorch: '<2.8'}, but the catalogue says read in 2.8.0–2.15.0 (f)"
    ]


def test_harmless_badges_and_example_releases_need_the_names_read(tmp_path):
    from kb.content.ranges import NameOwners, badge_problems

    content = tmp_path / "content"
    (content / "harmless").mkdir(parents=True)
    (content / "cases").mkdir()
    (content / "harmless" / "h.yaml").write_text(
        "id: h\ntitle: TORCH_NCCL_AVOID_RECORD_STREAMS notices\npattern: 'x'\nversions: {pytorch: '>=2.5'}\n"
        "examples:\n  - text: 'Warning: TORCH_NCCL_AVOID_RECORD_STREAMS=1 has no effect'\n    release: PyTorch 2.15.0 (ProcessGroupNCCL.cpp)\n",
        encoding="utf-8",
    )
    catalogue = _catalogue(CatalogueEntry("TORCH_NCCL_AVOID_RECORD_STREAMS", "env", "2.2.2", "2.14.1", "f"))
    owners = NameOwners({"TORCH_NCCL_AVOID_RECORD_STREAMS": ("pytorch",)})
    assert sorted(str(p) for p in badge_problems(content, catalogue, owners)) == [
        "content/harmless/h.yaml:4: TORCH_NCCL_AVOID_RECORD_STREAMS versions {pytorch: '>=2.5'} but the catalogue says read in "
        "2.2.2–2.14.1 (f): '>=2.5' includes 2.15.0, which does not read it",
        "content/harmless/h.yaml:6: TORCH_NCCL_AVOID_RECORD_STREAMS in an example labelled pytorch 2.15.0, but the catalogue says "
        "read in 2.2.2–2.14.1 (f)",
    ]


# An example's file:line agrees with the release its badge names (kb/content/example_lines.py; second audit).


def test_example_lines_agree_with_the_message_harvest():
    from kb.content.example_lines import example_line_problems

    problems = example_line_problems(CONTENT)
    assert not problems, f"{len(problems)} examples show a line their release does not print at:\n" + "\n".join(
        map(str, problems)
    )


def test_an_example_line_from_another_release_fails(tmp_path):
    from kb.content.example_lines import example_line_problems, harvest

    harvest_dir = tmp_path / "harvest"
    harvest_dir.mkdir()
    (harvest_dir / "nccl.tsv").write_text(
        "release\tfile\tline\tseverity\tstyle\tsource\tformat\n"
        "2.7.8\tsrc/include/socket.h\t403\tWARN\tprintf\tv2.7.8-1\tConnect to %s failed : %s\n"
        "2.7.8\tsrc/transport/p2p.cc\t237\tWARN\tprintf\tv2.7.8-1\tfailed to open CUDA IPC handle : %d %s\n"
        "2.8.4\tsrc/include/socket.h\t406\tWARN\tprintf\tv2.8.4-1\tConnect to %s failed : %s\n",
        encoding="utf-8",
    )
    content = tmp_path / "content"
    (content / "cases").mkdir(parents=True)
    (content / "harmless").mkdir()
    (content / "harmless" / "h.yaml").write_text(
        "id: h\nexamples:\n"
        "  - text: 'n:1:2 [0] include/socket.h:403 NCCL WARN Connect to 10.0.0.1<1> failed : Connection timed out'\n"
        "    release: NCCL 2.8.4 (src/include/socket.h)\n"
        "  - text: 'n:1:2 [0] include/socket.h:403 NCCL WARN Connect to 10.0.0.1<1> failed : Connection timed out'\n"
        "    release: NCCL 2.7.8\n"
        "  - text: 'n:1:2 [0] transport/p2p.cc:238 NCCL WARN failed to open CUDA IPC handle : 217 peer access'\n"
        "    release: NCCL 2.7.8 (a call over two lines, reported at its second)\n"
        "  - text: 'n:1:2 [0] include/socket.h:999 NCCL WARN Connect to 10.0.0.1<1> failed : Connection refused'\n"
        "    release: NCCL 2.9.9 (not harvested, so not judged)\n",
        encoding="utf-8",
    )
    harvest.cache_clear()
    assert [str(p) for p in example_line_problems(content, harvest_dir)] == [
        "content/harmless/h.yaml:3: example labelled NCCL 2.8.4 shows include/socket.h:403, but 2.8.4 prints it at "
        "src/include/socket.h:406"
    ]
    harvest.cache_clear()
