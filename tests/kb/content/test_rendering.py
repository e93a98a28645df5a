"""A case body is rendered once, at load: the HTML the page prints and the sections the index reads come from one
Markdown tree (kb/content/rendering.py), so nothing parses the HTML again."""

from kb.content.rendering import body_render

BODY = """\
## Fix {#fix}

Start with the first step.

### 1. Set `NCCL_DEBUG=INFO` on every rank {#fix-1}

```bash
export NCCL_DEBUG=INFO
```

### 2. Compare a < b & c {#fix-2}

Read the *first* error.
"""


def test_each_section_holds_its_own_text_up_to_the_next_heading():
    sections = body_render(BODY).sections
    assert [(s.id, s.level, s.text) for s in sections] == [
        ("fix", 2, "Start with the first step."),
        ("fix-1", 3, "export NCCL_DEBUG=INFO"),
        ("fix-2", 3, "Read the first error."),
    ]


def test_a_section_title_reads_as_the_page_shows_it_without_the_permalink():
    titles = [s.title for s in body_render(BODY).sections]
    assert titles == ["Fix", "1. Set NCCL_DEBUG=INFO on every rank", "2. Compare a < b & c"]


def test_every_permalink_carries_the_name_of_its_section():
    html = body_render(BODY).html
    assert (
        '<a class="headerlink" data-section="2. Compare a &lt; b &amp; c" href="#fix-2" rel="noopener noreferrer">'
        '<span aria-hidden="true">#</span><span class="visually-hidden">Link to this section: 2. Compare a &lt; b &amp; c'
        "</span></a></h3>"
    ) in html
    assert "title=" not in html


def test_a_step_with_versions_shows_them_before_its_permalink():
    html = body_render(BODY, [{"anchor": "fix-2", "versions": {"pytorch": "<2.14"}}]).html
    assert '<h3 id="fix-2">2. Compare a &lt; b &amp; c <span class="step-versions">PyTorch &lt; 2.14 only</span><a ' in html
    assert html.count("step-versions") == 1


def test_permalink_names_and_step_versions_stay_out_of_the_search_text():
    body = body_render(BODY, [{"anchor": "fix-2", "versions": {"pytorch": "<2.14"}}])
    for text in [body.index_text, *(s.text for s in body.sections), *(s.title for s in body.sections)]:
        assert "Link to this section" not in text and "2.14" not in text
    assert "NCCL_DEBUG=INFO" in body.index_text and "Read the" in body.index_text
