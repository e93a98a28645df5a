"""Split a content file into YAML front matter and body, keeping line numbers for error messages."""

from dataclasses import dataclass, field
from typing import Any

from kb.content.yamllines import YamlLineError, line_of, yaml_parse_with_lines

Path_ = tuple  # a path into the YAML data: ("signatures", 2, "pattern")


@dataclass
class FrontMatter:
    data: Any
    lines: dict[Path_, int] = field(default_factory=dict)  # YAML path -> 1-based file line
    body: str = ""
    body_line: int = 1  # file line where the body starts

    def line_of(self, path: Path_) -> int:
        return line_of(self.lines, path)


FrontMatterError = YamlLineError  # a problem in the front matter, with its file line


def front_matter_split(text: str) -> FrontMatter:
    """Parse `---\\n<yaml>\\n---\\n<body>`; raise FrontMatterError with a file line on any problem."""
    text = text.replace("\r\n", "\n")
    if not text.startswith("---\n"):
        raise FrontMatterError(1, "file must start with a '---' line opening the YAML front matter")
    end = text.find("\n---\n", 3)
    if end == -1:
        if text.endswith("\n---"):
            end = len(text) - 4
        else:
            raise FrontMatterError(1, "front matter is not closed by a '---' line")
    yaml_text = text[4 : end + 1]
    body = text[end + 5 :]
    body_line = yaml_text.count("\n") + 3
    data, lines = yaml_parse_with_lines(yaml_text, first_line=2)  # YAML's first line is file line 2
    return FrontMatter(data=data, lines=lines, body=body, body_line=body_line)
