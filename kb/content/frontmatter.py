"""Split a content file into YAML front matter and body, keeping line numbers for error messages."""

from dataclasses import dataclass

from kb.content.yamllines import YamlDocument, YamlLineError, yaml_parse_with_lines


@dataclass
class FrontMatter(YamlDocument):
    """The front matter's data and lines (file lines), and the Markdown body after it."""

    body: str = ""
    body_line: int = 1  # file line where the body starts


def front_matter_split(text: str) -> FrontMatter:
    """Parse `---\\n<yaml>\\n---\\n<body>`; raise YamlLineError with a file line on any problem."""
    text = text.replace("\r\n", "\n")
    if not text.startswith("---\n"):
        raise YamlLineError(1, "file must start with a '---' line opening the YAML front matter")
    end = text.find("\n---\n", 3)
    if end == -1:
        if text.endswith("\n---"):
            end = len(text) - 4
        else:
            raise YamlLineError(1, "front matter is not closed by a '---' line")
    yaml_text = text[4 : end + 1]
    body = text[end + 5 :]
    body_line = yaml_text.count("\n") + 3
    data, lines = yaml_parse_with_lines(yaml_text, first_line=2)  # YAML's first line is file line 2
    return FrontMatter(data=data, lines=lines, body=body, body_line=body_line)
