"""Read one YAML content file and remember the line of every key, so each problem names its file:line."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kb.content.yamllines import YamlLineError, YamlPath, line_of, yaml_parse_with_lines


@dataclass
class YamlFile:
    path: str  # as shown to the author
    data: Any
    lines: dict[YamlPath, int] = field(default_factory=dict)

    def line_of(self, path: YamlPath) -> int:
        return line_of(self.lines, path)


YamlFileError = YamlLineError  # the troubleshooter's name for the shared error type


def yaml_file_read(path: Path, shown: str) -> YamlFile:
    """Parse a YAML file strictly (UTF-8, no duplicate keys, string keys); raise YamlFileError with a line."""
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise YamlFileError(raw[: err.start].count(b"\n") + 1, "file is not valid UTF-8") from None
    data, lines = yaml_parse_with_lines(text)
    return YamlFile(path=shown, data=data, lines=lines)
