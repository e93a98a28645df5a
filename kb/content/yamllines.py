"""The one YAML reader of the content: parse safely and remember the file line of every key and item, so
every problem names file:line. Case front matter (kb/content/frontmatter.py), the harmless list, and the
troubleshooter's tree and script-part files all read through here and report with the same types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

YamlPath = tuple  # a path into the data: ("signatures", 2, "pattern")
Problem = tuple[YamlPath, str]  # what a validator finds: where in the data, and what is wrong
# libyaml's parser (bundled in PyYAML's wheels) is ~20x the pure-Python one; the content is parsed at every load.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlLineError(ValueError):
    """A file that cannot be read as YAML at all (syntax, encoding, duplicate or non-string keys), at its line."""

    def __init__(self, line: int, message: str) -> None:
        self.line = line
        super().__init__(message)


@dataclass
class YamlDocument:
    """Parsed data with the file line of every path into it."""

    data: Any
    lines: dict[YamlPath, int] = field(default_factory=dict)
    path: str = ""  # as shown to the author

    def line_of(self, where: YamlPath) -> int:
        return line_of(self.lines, where)


def yaml_file_read(path: Path, shown: str) -> YamlDocument:
    """Parse a YAML file strictly (UTF-8, no duplicate keys, string keys); raise YamlLineError with a line."""
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise YamlLineError(raw[: err.start].count(b"\n") + 1, "file is not valid UTF-8") from None
    data, lines = yaml_parse_with_lines(text)
    return YamlDocument(data=data, lines=lines, path=shown)


def line_of(lines: dict[YamlPath, int], path: YamlPath) -> int:
    """The line of the deepest part of `path` that exists: a missing key reports its parent's line."""
    while path and path not in lines:
        path = path[:-1]
    return lines.get(path, 1)


def yaml_parse_with_lines(text: str, *, first_line: int = 1) -> tuple[Any, dict[YamlPath, int]]:
    """safe_load plus a line for every path, from one parse; `first_line` is the file line of the text's first line.
    Duplicate keys and non-string keys are errors (PyYAML would silently keep the last value)."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
        problem = getattr(err, "problem", None) or str(err)
        raise YamlLineError(mark.line + first_line if mark else first_line, f"YAML error: {problem}") from None
    finally:
        loader.dispose()
    lines: dict[YamlPath, int] = {}
    if node is not None:
        _lines_record(node, (), lines, first_line)
    return data, lines


def _lines_record(node: yaml.Node, path: YamlPath, lines: dict[YamlPath, int], first_line: int) -> None:
    lines[path] = node.start_mark.line + first_line
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + first_line
            if not isinstance(key_node, yaml.ScalarNode):
                raise YamlLineError(line, "keys must be plain strings")
            key = key_node.value
            if key in seen:
                raise YamlLineError(line, f"duplicate key '{key}'")
            seen.add(key)
            _lines_record(value_node, path + (key,), lines, first_line)
            # A key's own line is more useful than its value's (a block value starts one line later).
            lines[path + (key,)] = line
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _lines_record(item, path + (index,), lines, first_line)
