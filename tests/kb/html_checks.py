"""Strict HTML parsing for page tests: any parse error fails the test."""
import html5lib


def assert_valid_html(content: bytes | str) -> None:
    parser = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False)
    parser.parse(content)


def element_ids(content: bytes | str) -> set[str]:
    tree = html5lib.parse(content, namespaceHTMLElements=False)
    return {el.get("id") for el in tree.iter() if el.get("id")}
