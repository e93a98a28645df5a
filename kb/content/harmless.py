"""Read and validate the known-harmless list, content/harmless/<slug>.yaml (pure: no database)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kb.content.errors import ContentError, display_path
from kb.content.schema import harmless_check
from kb.content.yamllines import YamlLineError, line_of, yaml_parse_with_lines


@dataclass
class HarmlessDoc:
    slug: str
    meta: dict[str, Any]
    path: str


def harmless_files_read(content_dir: Path) -> tuple[list[HarmlessDoc], list[ContentError]]:
    docs: list[HarmlessDoc] = []
    errors: list[ContentError] = []
    for path in sorted((content_dir / "harmless").glob("*.yaml")):
        shown = display_path(path, content_dir)
        try:
            data, lines = yaml_parse_with_lines(path.read_bytes().decode("utf-8"))
        except UnicodeDecodeError:
            errors.append(ContentError(shown, 1, "file is not valid UTF-8"))
            continue
        except YamlLineError as err:
            errors.append(ContentError(shown, err.line, str(err)))
            continue
        problems = [ContentError(shown, line_of(lines, p), message) for p, message in harmless_check(data)]
        if not problems and data["id"] != path.stem:
            problems.append(
                ContentError(shown, line_of(lines, ("id",)), f"id '{data['id']}' must equal the file name '{path.stem}'")
            )
        errors += problems
        if not problems:
            docs.append(HarmlessDoc(slug=data["id"], meta=data, path=shown))
    return docs, errors
