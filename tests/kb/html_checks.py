"""Strict HTML parsing for page tests: any parse error fails the test."""

import html5lib


def assert_valid_html(content: bytes | str) -> None:
    parser = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False)
    parser.parse(content)


def element_ids(content: bytes | str) -> set[str]:
    tree = html5lib.parse(content, namespaceHTMLElements=False)
    return {el.get("id") for el in tree.iter() if el.get("id")}


def main_links(content: bytes | str) -> set[tuple[str, str]]:
    """(href, text) of every link inside <main>: the site header links to the case list from every page, so a
    page's own links are looked for here, where the header cannot answer for them."""
    tree = html5lib.parse(content, namespaceHTMLElements=False)
    main = tree.find(".//main")
    assert main is not None, "the page has no <main>"
    return {(a.get("href", ""), "".join(a.itertext()).strip()) for a in main.iter("a")}
