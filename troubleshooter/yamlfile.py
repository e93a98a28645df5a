"""Read one YAML content file and remember the line of every key, so each problem names its file:line."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

YamlPath = tuple  # a path into the data: ("nodes", "when", "choices", 2, "next")


@dataclass
class YamlFile:
    path: str  # as shown to the author
    data: Any
    lines: dict[YamlPath, int] = field(default_factory=dict)

    def line_of(self, path: YamlPath) -> int:
        """The line of the deepest part of `path` that exists: a missing key reports its parent's line."""
        while path and path not in self.lines:
            path = path[:-1]
        return self.lines.get(path, 1)


class YamlFileError(ValueError):
    def __init__(self, line: int, message: str) -> None:
        self.line = line
        super().__init__(message)


def yaml_file_read(path: Path, shown: str) -> YamlFile:
    """Parse a YAML file strictly (UTF-8, no duplicate keys, string keys); raise YamlFileError with a line."""
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise YamlFileError(raw[: err.start].count(b"\n") + 1, "file is not valid UTF-8") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
        problem = getattr(err, "problem", None) or str(err)
        raise YamlFileError(mark.line + 1 if mark else 1, f"YAML error: {problem}") from None
    lines: dict[YamlPath, int] = {}
    if node is not None:
        _lines_record(node, (), lines)
    return YamlFile(path=shown, data=data, lines=lines)


def _lines_record(node: yaml.Node, path: YamlPath, lines: dict[YamlPath, int]) -> None:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value
            if not isinstance(key_node, yaml.ScalarNode):
                raise YamlFileError(key_node.start_mark.line + 1, "keys must be plain strings")
            if key in seen:
                raise YamlFileError(key_node.start_mark.line + 1, f"duplicate key '{key}'")
            seen.add(key)
            _lines_record(value_node, path + (key,), lines)
            # A key's own line is more useful than its value's (a block value starts one line later).
            lines[path + (key,)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _lines_record(item, path + (index,), lines)
