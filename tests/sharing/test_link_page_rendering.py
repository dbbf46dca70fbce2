"""The share link page's markdown, math and code (``backend.sharing.link_page`` and its
renderers), pure and below HTTP: rendered like the app, by the app's safety rules, and no
message can make the page run script, carry an event attribute or load anything on its own.
"""

from __future__ import annotations

from html.parser import HTMLParser

from hypothesis import given, settings
from hypothesis import strategies as st

from backend.sharing import SharedSnapshot, SnapshotMessage
from backend.sharing.link_page import (
    BRACKET_WEIGHT,
    MAX_MARKDOWN_COST,
    PAGE_MARKDOWN_BUDGET,
    render_cost,
    render_snapshot,
)
from backend.sharing.page_markdown import render_markdown, safe_link
from backend.sharing.page_math import MATHML_ELEMENTS

HOST = "chats.example"
# What the page may contain: the renderer's own elements, MathML, nothing that runs or embeds.
ALLOWED_TAGS = MATHML_ELEMENTS | {
    "p", "a", "span", "div", "em", "strong", "s", "code", "pre", "blockquote", "ul", "ol",
    "li", "hr", "br", "img", "table", "thead", "tbody", "tr", "th", "td", "h1", "h2", "h3",
    "h4", "h5", "h6", "article", "title", "style", "head", "body", "html", "meta",
}  # fmt: skip
HOSTILE_FRAGMENTS = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "<b onclick=alert(1)>bold</b>",
    "<iframe src=https://evil.example></iframe>",
    "[click](javascript:alert(1))",
    "[c](JaVaScRiPt:alert(1))",
    "[c](jav&#x61;script:alert(1))",
    "[c](vbscript:msgbox(1))",
    "[c](data:text/html,<script>alert(1)</script>)",
    "<javascript:alert(1)>",
    "![pixel](https://evil.example/p.png)",
    f"![own](https://{HOST}/export/all.zip)",
    "![rel](/export/all.zip)",
    "![svg](data:image/svg+xml;base64,PHN2Zz4=)",
    "$\\href{javascript:alert(1)}{x}$",
    "$\\text{<script>alert(1)</script>}$",
    "$\\style{background:url(https://evil.example)}{x}$",
    "$$\\color{red}{y}$$",
    "```html\n<iframe></iframe>\n```",
    "```python\nprint('<b>')\n```",
    "| a | <b> |\n|---|---|\n| 1 | 2 |",
    "> quote *em* **strong** ~~del~~ `code`",
    "\ud800 lone \udfff",
    "[ok](https://ok.example/a?b=1)",
    "![inline](data:image/png;base64,iVBORw0KGgo=)",
    "*",
    "[",
    "\n\n",
    "$",
]


class _Tags(HTMLParser):
    """Every element and attribute of a page, as a browser's tokenizer reads them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))


def elements(html_text: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(html_text)
    return parser.elements


def md(text: str) -> str:
    return render_markdown(text, own_host=HOST)


def assert_inert(page: str) -> None:
    """Nothing in ``page`` runs, reacts to an event, or loads on its own."""
    for tag, attrs in elements(page):
        assert tag in ALLOWED_TAGS, tag
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            assert name not in ("style", "srcset", "background", "formaction") or (
                tag in ("th", "td") and value in ("text-align:left", "text-align:right",
                                                  "text-align:center")
            ), (tag, name, value)  # fmt: skip
        if tag == "img":
            assert str(attrs["src"]).startswith("data:image/"), attrs
        if "href" in attrs:
            href = str(attrs["href"])
            assert safe_link(href) == href and not href.lower().startswith("data:"), href


class TestMarkdownLikeTheApp:
    def test_it_renders_emphasis_lists_tables_quotes_and_strikethrough(self):
        html_text = md(
            "*a* **b** ~~c~~ `d`\n\n- one\n- two\n\n> q\n\n| x | y |\n|--:|---|\n| 1 | 2 |"
        )
        for markup in ("<em>a</em>", "<strong>b</strong>", "<s>c</s>", "<code>d</code>"):
            assert markup in html_text
        assert "<li>two</li>" in html_text and "<blockquote>" in html_text
        assert '<td style="text-align:right">1</td>' in html_text

    def test_math_becomes_mathml(self):
        html_text = md("inline $x^2$, inline-double $$y$$ and\n\n$$\n\\frac{a}{b}\n$$")
        assert "<msup><mi>x</mi><mn>2</mn></msup>" in html_text
        assert '<math xmlns="http://www.w3.org/1998/Math/MathML" display="block">' in html_text
        assert "<mfrac>" in html_text and "<p>" in html_text.split("mfrac")[0]

    def test_code_is_coloured_by_its_language_and_escaped(self):
        html_text = md("```python\nprint('<b>')\n```\n\n```nosuchlanguage\n<b>\n```")
        assert '<span class="tok-nb">print</span>' in html_text
        assert "'&lt;b&gt;'" in html_text and "<b>" not in html_text
        assert '<code class="language-nosuchlanguage">&lt;b&gt;\n</code>' in html_text

    def test_deep_nesting_keeps_its_text(self):
        assert "the bottom" in md("> " * 35 + "the bottom")


class TestTheAppsSafetyRules:
    def test_raw_html_and_event_attributes_stay_text(self):
        html_text = md(
            '<script>alert(1)</script> <img src=x onerror="alert(1)"> <b onclick=x>b</b>'
        )
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html_text
        assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html_text
        assert [tag for tag, _ in elements(html_text)] == ["p"]

    def test_unsafe_link_protocols_lose_the_link_and_keep_the_text(self):
        for text in ("[click](javascript:alert(1))", "[click](JaVaScRiPt:x)",
                     "[click](jav&#x61;script:x)", "[click](vbscript:x)",
                     "[click](data:text/html,x)"):  # fmt: skip
            html_text = md(text)
            assert "<a" not in html_text and "<span>click</span>" in html_text, text

    def test_safe_links_are_kept_with_no_referrer_and_no_opener(self):
        html_text = md("[a](https://ok.example/x) [b](mailto:o@ok.example) [c](/chat/1)")
        links = [attrs for tag, attrs in elements(html_text) if tag == "a"]
        assert [link["href"] for link in links] == [
            "https://ok.example/x", "mailto:o@ok.example", "/chat/1"
        ]  # fmt: skip
        assert {link["rel"] for link in links} == {"nofollow noopener noreferrer"}

    def test_images_load_only_from_data_and_a_remote_one_is_a_link_naming_its_host(self):
        html_text = md(
            "![pixel](https://evil.example:8443/p.png) "
            f"![own](https://{HOST}/export/all.zip) ![own port](http://{HOST}:3000/x.png) "
            "![rel](/export/all.zip) ![js](javascript:alert(1)) ![svg](data:image/svg+xml,<svg/>) "
            "![dot](data:image/png;base64,iVBORw0KGgo=)"
        )
        imgs = [attrs["src"] for tag, attrs in elements(html_text) if tag == "img"]
        assert imgs == ["data:image/png;base64,iVBORw0KGgo="]
        assert "[image “pixel” from evil.example:8443: click to open]" in html_text
        for alt in ("own", "own port", "rel", "js", "svg"):
            assert f"[image not shown “{alt}”]" in html_text

    def test_math_cannot_carry_links_styles_or_markup(self):
        html_text = md(
            "$\\href{javascript:alert(1)}{x}$ $\\text{<script>}$ $\\style{color:red}{y}$"
        )
        assert "javascript" not in html_text and "style=" not in html_text
        assert "<mtext>&lt;script&gt;</mtext>" in html_text

    def test_a_formula_the_converter_cannot_read_shows_as_its_source(self):
        html_text = md("$" + "{" * 5_000 + "$")
        assert '<code class="math-source">{{{' in html_text

    @settings(max_examples=150, deadline=None)
    @given(st.lists(st.sampled_from(HOSTILE_FRAGMENTS) | st.text(max_size=20), max_size=12))
    def test_any_mix_of_hostile_input_renders_inert(self, pieces):
        page = render_snapshot(
            SharedSnapshot(
                title="".join(pieces[:2]),
                created_at=0,
                messages=(
                    SnapshotMessage(author="".join(pieces[-1:]), role="user", text=" ".join(pieces),
                                    created_at=0),
                    SnapshotMessage(author="a", role="assistant", text="\n".join(pieces),
                                    created_at=0),
                ),
            ),
            own_host=HOST,
        )  # fmt: skip
        page.encode("utf-8")  # lone surrogates cannot fail the response
        assert_inert(page)


class TestBoundedWork:
    def snapshot(self, *texts: str) -> SharedSnapshot:
        messages = tuple(
            SnapshotMessage(author="pat", role="user", text=text, created_at=0) for text in texts
        )
        return SharedSnapshot(title="t", created_at=0, messages=messages)

    def test_a_message_over_the_markdown_bound_is_shown_as_its_source(self):
        long_text = "*a* " * (MAX_MARKDOWN_COST // 4 + 1)
        page = render_snapshot(self.snapshot("*short*", long_text), own_host=HOST)
        assert "<em>short</em>" in page
        assert '<div class="text source">*a* *a*' in page

    def test_each_open_bracket_weighs_as_the_link_label_scan_it_starts(self):
        brackets = "[" * (MAX_MARKDOWN_COST // (BRACKET_WEIGHT + 1) + 1)
        assert render_cost(brackets) > MAX_MARKDOWN_COST
        page = render_snapshot(self.snapshot(brackets, "[ok](https://ok.example)"), own_host=HOST)
        assert '<div class="text source">[[[' in page
        assert '<a href="https://ok.example"' in page

    def test_past_the_pages_budget_messages_are_shown_as_their_source(self):
        each = "*b* " * (MAX_MARKDOWN_COST // 4)
        count = PAGE_MARKDOWN_BUDGET // len(each) + 2
        page = render_snapshot(self.snapshot(*[each] * count), own_host=HOST)
        rendered = page.count('<div class="text"><p><em>b</em>')
        assert rendered == PAGE_MARKDOWN_BUDGET // len(each)
        assert page.count('<div class="text source">') == count - rendered

    def test_lone_surrogates_anywhere_become_replacement_characters(self):
        page = render_snapshot(
            SharedSnapshot(
                title="t\ud800",
                created_at=0,
                messages=(
                    SnapshotMessage(author="p\udfff", role="user", text="x\ud83d\ude00\ud800",
                                    created_at=0),
                ),
            ),
            own_host=HOST,
        )  # fmt: skip
        assert "<title>t\ufffd</title>" in page and "p\ufffd" in page and "x😀\ufffd" in page
        page.encode("utf-8")
