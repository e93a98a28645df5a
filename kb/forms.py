"""Query and tag validation, shared by the pages and the JSON API (one rule, one message)."""

from __future__ import annotations

import re

from django import forms
from django.core.validators import ProhibitNullCharactersValidator

from kb.content.schema import TAG_VALUES

MAX_QUERY_CHARS = 4000
# A line that looks like log output rather than words typed into a search box: a bracketed prefix
# ("[rank3]:", "[E ProcessGroupNCCL.cpp:563]"), key=value or Key(ms)=value, a source location
# ("file.py:12", 'File "x.py", line'), a clock time, a Python exception name with its message,
# NCCL's INFO/WARN prefix, or a line too long to have been typed.
_LOG_SHAPE_RE = re.compile(
    r"\[[^\]\s]{0,40}[\]:]|\w\)?=\S|\.(?:py|cpp|cc|cu|hpp|h|c)(?::\d|\"?, line)|\b\d{1,2}:\d{2}:\d{2}"
    r"|\b\w{0,40}(?:Error|Exception|Warning):\s|\bNCCL (?:INFO|WARN)\b|Traceback \(most recent|^\S+:\d+:\d+:"
)
KEYWORD_QUERY_MAX_CHARS = 200
# A source location typed alone ("ProcessGroupNCCL.cpp:1234"), as a word among words: someone looking for where a
# file is mentioned, not a log line (which carries it inside brackets, or with a message after a colon).
_SOURCE_LOCATION_RE = re.compile(r"(?<!\S)[\w./-]+\.(?:py|cpp|cc|cu|hpp|h|c):\d+(?::\d+)?(?!\S)")


class SearchForm(forms.Form):
    """`q`: what a person typed or a log line pasted into a search box (at most MAX_QUERY_CHARS). A NUL is
    searched as text (it never reaches the database), so Django's NUL check is left out."""

    q = forms.CharField(
        required=False,
        strip=False,
        max_length=MAX_QUERY_CHARS,
        error_messages={
            "max_length": f"A search link can carry at most {MAX_QUERY_CHARS} characters. Paste longer logs into "
            "the box on the home page.",
        },
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["q"]
        field.validators = [v for v in field.validators if not isinstance(v, ProhibitNullCharactersValidator)]

    @property
    def query(self) -> str:
        return self.cleaned_data.get("q") or "" if hasattr(self, "cleaned_data") else ""

    @property
    def is_keyword_search(self) -> bool:
        """One line that does not look like log output: words to search for, not a log to diagnose."""
        return query_is_keywords(self.query)


def query_is_keywords(query: str) -> bool:
    text = query.strip()
    if not text or "\n" in text or len(text) > KEYWORD_QUERY_MAX_CHARS:
        return False
    return not _LOG_SHAPE_RE.search(_SOURCE_LOCATION_RE.sub(" ", text))


def tag_choices() -> list[tuple[str, str]]:
    return [(f"{facet}:{value}", value) for facet, values in TAG_VALUES.items() for value in values]


class TagFilterForm(forms.Form):
    """`tag=facet:value`, repeated; a case must carry every tag given. Empty values (an unset select) are
    dropped; a value that is not a tag is an error that names it."""

    tag = forms.MultipleChoiceField(required=False, choices=tag_choices)

    def __init__(self, data=None, *args, **kwargs) -> None:
        if data is not None:
            data = data.copy()
            data.setlist("tag", [t for t in data.getlist("tag") if t.strip()])
        super().__init__(data, *args, **kwargs)
        self.fields["tag"].error_messages["invalid_choice"] = (
            "'%(value)s' is not a tag. Tags look like framework:megatron-lm or phase:init."
        )

    def pairs(self) -> list[tuple[str, str]]:
        """The selected tags as (facet, value), in the order given, without repeats."""
        out: list[tuple[str, str]] = []
        for raw in self.cleaned_data.get("tag") or []:
            pair = tuple(raw.split(":", 1))
            if pair not in out:
                out.append(pair)  # type: ignore[arg-type]
        return out

    def first_error(self) -> str:
        errors = self.errors.get("tag") or self.errors.get("__all__") or ["Bad tag filter."]
        return str(errors[0])
