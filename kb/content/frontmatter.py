"""Split a content file into YAML front matter and body, keeping line numbers for error messages."""
from dataclasses import dataclass, field
from typing import Any

import yaml

Path_ = tuple  # a path into the YAML data: ("signatures", 2, "pattern")


@dataclass
class FrontMatter:
    data: Any
    lines: dict[Path_, int] = field(default_factory=dict)  # YAML path -> 1-based file line
    body: str = ""
    body_line: int = 1  # file line where the body starts

    def line_of(self, path: Path_) -> int:
        """The line of the deepest part of `path` that exists (a missing key reports its parent)."""
        while path not in self.lines and path:
            path = path[:-1]
        return self.lines.get(path, 1)


class FrontMatterError(ValueError):
    def __init__(self, line: int, message: str) -> None:
        self.line = line
        super().__init__(message)


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
    yaml_text = text[4:end + 1]
    body = text[end + 5:]
    body_line = yaml_text.count("\n") + 3
    offset = 2  # YAML line 0 is file line 2
    try:
        node = yaml.compose(yaml_text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(yaml_text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
        line = mark.line + offset if mark else 1
        problem = getattr(err, "problem", None) or str(err)
        raise FrontMatterError(line, f"YAML error: {problem}") from None
    lines: dict[Path_, int] = {}
    if node is not None:
        _record_lines(node, (), lines, offset)
    return FrontMatter(data=data, lines=lines, body=body, body_line=body_line)


def _record_lines(node: yaml.Node, path: Path_, lines: dict[Path_, int], offset: int) -> None:
    lines[path] = node.start_mark.line + offset
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value
            if key in seen:
                raise FrontMatterError(key_node.start_mark.line + offset, f"duplicate key '{key}'")
            seen.add(key)
            lines[path + (key,)] = key_node.start_mark.line + offset
            _record_lines(value_node, path + (key,), lines, offset)
            lines[path + (key,)] = key_node.start_mark.line + offset
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _record_lines(item, path + (index,), lines, offset)
