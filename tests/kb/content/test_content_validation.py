"""Every kind of content problem is reported with the file and the line that has it."""

from pathlib import Path

import pytest

from kb.content.cases import case_files_read
from kb.content.load import content_check
from tests.kb.case_files import VALID_FRONT_MATTER, case_text, line_of, write_case


def errors_for(tmp_path: Path, text: str, slug: str = "test-case") -> list[str]:
    write_case(tmp_path / "content", slug, text)
    _, errors = case_files_read(tmp_path / "content")
    return [str(e) for e in errors]


def front(**replace: str) -> str:
    text = VALID_FRONT_MATTER.format(slug="test-case")
    for old, new in replace.items():
        assert old in text, old
        text = text.replace(old, new)
    return text


def test_valid_case_has_no_errors(tmp_path):
    assert errors_for(tmp_path, case_text("test-case")) == []


def test_missing_required_field_names_the_field(tmp_path):
    text = case_text("test-case", front=front(**{'title: "Test case test-case"\n': ""}))
    assert errors_for(tmp_path, text) == ["content/cases/test-case.md:2: missing required field 'title'"]


def test_unknown_field_points_at_its_line(tmp_path):
    text = case_text("test-case", front=front(**{"symptoms:\n": "colour: blue\nsymptoms:\n"}))
    assert errors_for(tmp_path, text) == [
        f"content/cases/test-case.md:{line_of(text, 'colour:')}: unknown field 'colour' "
        "(allowed: slug, title, summary, aliases, tags, applies_to, symptoms, signatures, related, references, last_reviewed, "
        "reviewed_against, guide, do_first, conditions, frames, steps)"
    ]


def test_malformed_slug_is_reported(tmp_path):
    text = case_text("Bad_Slug", front=VALID_FRONT_MATTER.format(slug="Bad_Slug"))
    errors = errors_for(tmp_path, text, slug="Bad_Slug")
    assert (
        f"content/cases/Bad_Slug.md:{line_of(text, 'slug: Bad_Slug')}: 'Bad_Slug' is not a slug (lowercase words joined by '-')"
        in errors
    )


def test_slug_must_equal_file_name(tmp_path):
    text = case_text("other-name")
    errors = errors_for(tmp_path, text, slug="test-case")
    assert errors == [
        f"content/cases/test-case.md:{line_of(text, 'slug:')}: slug 'other-name' must equal the file name 'test-case'"
    ]


def test_duplicate_alias_across_files_is_reported(tmp_path):
    write_case(tmp_path / "content", "first-case")
    second = case_text(
        "second-case",
        front=VALID_FRONT_MATTER.format(slug="second-case").replace("aliases: [second-case-old]", "aliases: [first-case-old]"),
    )
    errors = errors_for(tmp_path, second, slug="second-case")
    assert errors == [
        f"content/cases/second-case.md:{line_of(second, 'aliases:')}: alias 'first-case-old' is already "
        "the slug or alias of content/cases/first-case.md"
    ]


def test_alias_equal_to_another_slug_is_reported(tmp_path):
    write_case(tmp_path / "content", "first-case")
    second = case_text(
        "second-case",
        front=VALID_FRONT_MATTER.format(slug="second-case").replace("aliases: [second-case-old]", "aliases: [first-case]"),
    )
    assert any("alias 'first-case' is already the slug or alias" in e for e in errors_for(tmp_path, second, "second-case"))


def test_related_case_must_exist(tmp_path):
    text = case_text("test-case", front=front(**{"related: []": "related:\n  - no-such-case"}))
    assert errors_for(tmp_path, text) == [
        f"content/cases/test-case.md:{line_of(text, '- no-such-case')}: related case 'no-such-case' does not exist"
    ]


def test_missing_required_section_is_reported(tmp_path):
    body = case_text("test-case").split("---\n", 2)[2].replace("## Prevention {#prevention}", "## How to avoid it")
    text = case_text("test-case", body=body)
    body_line = text.split("\n").index("---", 1) + 2
    assert (
        f"content/cases/test-case.md:{body_line}: missing required section: a level-2 heading with {{#prevention}}"
        in errors_for(tmp_path, text)
    )


def test_fix_steps_must_be_numbered_in_order(tmp_path):
    body = case_text("test-case").split("---\n", 2)[2].replace("{#fix-2}", "{#fix-3}")
    text = case_text("test-case", body=body)
    assert errors_for(tmp_path, text) == [
        f"content/cases/test-case.md:{line_of(text, '{#fix-1}')}: fix steps must be numbered fix-1, fix-2, ... in order; found fix-1, fix-3"
    ]


def test_pattern_that_does_not_compile_is_reported(tmp_path):
    text = case_text("test-case", front=front(**{"OpType=ALLREDUCE'": "OpType=(ALLREDUCE'"}))
    errors = errors_for(tmp_path, text)
    assert errors[0].startswith(f"content/cases/test-case.md:{line_of(text, 'pattern:')}: pattern does not compile: missing )")


def test_pattern_must_match_its_examples(tmp_path):
    text = case_text("test-case", front=front(**{"OpType=ALLREDUCE'": "OpType=BROADCAST'"}))
    example_line = line_of(text, '- "[Rank 1]')
    assert errors_for(tmp_path, text) == [f"content/cases/test-case.md:{example_line}: pattern does not match this example"]


@pytest.mark.parametrize(
    "pattern, message",
    [
        (r"(\\w+\\s?)+x", "nested repetition"),
        (r"(?<=Rank )\\d+", "lookbehind is not allowed"),
        (r"(?i)watchdog", "inline flags"),
    ],
)
def test_risky_patterns_are_refused(tmp_path, pattern, message):
    text = case_text(
        "test-case",
        front=front(**{"'Watchdog caught collective operation timeout: WorkNCCL\\(SeqNum=1, OpType=ALLREDUCE'": f"'{pattern}'"}),
    )
    errors = errors_for(tmp_path, text)
    assert any(message in e and f":{line_of(text, 'pattern:')}:" in e for e in errors), errors


def test_unknown_tag_value_is_reported(tmp_path):
    text = case_text("test-case", front=front(**{"framework: [pytorch]": "framework: [tensorflow]"}))
    errors = errors_for(tmp_path, text)
    assert len(errors) == 1 and errors[0].startswith(
        f"content/cases/test-case.md:{line_of(text, 'framework:')}: tag framework 'tensorflow' is not allowed"
    )


def test_yaml_syntax_error_reports_its_line(tmp_path):
    text = case_text("test-case", front=front(**{"summary: A job": "summary: [A job"}))
    errors = errors_for(tmp_path, text)
    assert len(errors) == 1 and "YAML error" in errors[0]
    assert int(errors[0].split(":")[1]) >= line_of(text, "summary:")


def test_duplicate_yaml_key_is_reported(tmp_path):
    text = case_text("test-case", front=front(**{"symptoms:\n": "title: again\nsymptoms:\n"}))
    assert errors_for(tmp_path, text) == [f"content/cases/test-case.md:{line_of(text, 'title: again')}: duplicate key 'title'"]


def test_references_heading_in_body_is_refused(tmp_path):
    body = case_text("test-case").split("---\n", 2)[2] + "\n## References {#references}\n\n- x\n"
    text = case_text("test-case", body=body)
    assert errors_for(tmp_path, text) == [
        f"content/cases/test-case.md:{line_of(text, '{#references}')}: '#references' is rendered from the front matter; remove this heading"
    ]


def test_a_wrapped_line_that_begins_with_an_issue_number_is_refused_as_a_level_1_heading(tmp_path):
    body = (
        case_text("test-case")
        .split("---\n", 2)[2]
        .replace("\n## Fix {#fix}", "\nSeen in reports (pytorch #73790,\n#76101) after a driver update.\n\n## Fix {#fix}", 1)
    )
    text = case_text("test-case", body=body)
    [error] = errors_for(tmp_path, text)
    assert error.startswith(f"content/cases/test-case.md:{line_of(text, '#76101)')}: a level-1 heading")


def test_a_hash_line_inside_a_code_block_is_no_heading(tmp_path):
    body = (
        case_text("test-case")
        .split("---\n", 2)[2]
        .replace("\n## Fix {#fix}", "\n```bash\n# the rank's stack\npy-spy dump --pid 1\n```\n\n## Fix {#fix}", 1)
    )
    assert errors_for(tmp_path, case_text("test-case", body=body)) == []


def test_every_problem_in_every_file_is_reported_at_once(tmp_path):
    write_case(
        tmp_path / "content",
        "first-case",
        case_text("first-case", front=VALID_FRONT_MATTER.format(slug="first-case").replace("weight: 6", "weight: 60")),
    )
    write_case(
        tmp_path / "content",
        "second-case",
        case_text("second-case", front=VALID_FRONT_MATTER.format(slug="second-case").replace("kind: docs", "kind: blog", 1)),
    )
    _, errors = case_files_read(tmp_path / "content")
    assert [e.path for e in errors] == ["content/cases/first-case.md", "content/cases/second-case.md"]


def test_reviewed_against_takes_releases_not_specifiers(tmp_path):
    text = case_text("test-case", front=front(**{"symptoms:\n": "reviewed_against: {pytorch: '>=2.4'}\nsymptoms:\n"}))
    errors = errors_for(tmp_path, text)
    assert len(errors) == 1
    assert errors[0].startswith(f"content/cases/test-case.md:{line_of(text, 'reviewed_against:')}: ")
    assert errors[0].endswith("'>=2.4' for pytorch is not a version such as '2.14.1'")


def test_reviewed_against_names_only_known_software(tmp_path):
    text = case_text("test-case", front=front(**{"symptoms:\n": "reviewed_against: {pytroch: '2.4.1'}\nsymptoms:\n"}))
    errors = errors_for(tmp_path, text)
    assert len(errors) == 1
    assert "unknown software 'pytroch' (allowed: pytorch, nccl," in errors[0]


def test_signature_versions_take_specifiers(tmp_path):
    text = case_text("test-case", front=front(**{"    weight: 6\n": "    weight: 6\n    versions: {pytorch: 'two'}\n"}))
    errors = errors_for(tmp_path, text)
    assert len(errors) == 1
    assert errors[0].endswith("'two' for pytorch is not a version specifier such as '>=2.2,<2.14'")


def link_errors_for(tmp_path: Path, links: str) -> list[str]:
    """The link errors `validate_content` reports for a case whose body ends with `links` (Markdown)."""
    content = tmp_path / "content"
    write_case(content, "other-case")
    body = case_text("test-case").split("---\n", 2)[2] + f"\n{links}\n"
    write_case(content, "test-case", case_text("test-case", body=body))
    _, _, errors = content_check(content)
    return [str(e) for e in errors]


def test_links_to_pages_of_the_site_are_accepted(tmp_path):
    links = (
        "[a](/kb/other-case/#fix-2) [b](/kb/) [c](/kb/harmless/) [d](/search?q=ALLGATHER) "
        "[e](/troubleshoot/hang/?when=init) [f](/troubleshoot/)"
    )
    assert link_errors_for(tmp_path, links) == []


@pytest.mark.parametrize(
    "link, message",
    [
        ("/kb/no-such-case/", "link to '/kb/no-such-case/': there is no case 'no-such-case'"),
        ("/kb/other-case/#fix-9", "link to '/kb/other-case/#fix-9': that case has no section '#fix-9'"),
        ("/wiki/other-case/", "link to '/wiki/other-case/' does not point at a page of this site"),
        ("/kb/other-case/extra", "link to '/kb/other-case/extra' does not point at a page of this site"),
    ],
)
def test_a_link_to_no_page_is_reported_at_its_line(tmp_path, link, message):
    errors = link_errors_for(tmp_path, f"See [there]({link}).")
    text = (tmp_path / "content" / "cases" / "test-case.md").read_text()
    assert len(errors) == 1 and errors[0].startswith(f"content/cases/test-case.md:{line_of(text, link)}: {message}")


def test_a_link_written_as_code_is_text_not_a_link_to_check(tmp_path):
    """Only the body's links are checked, as the Markdown tree holds them: `href="/wiki/x/"` shown as code is text."""
    assert link_errors_for(tmp_path, 'Write it as `<a href="/wiki/other-case/">` in the wiki.') == []
