"""Page text for retrieval: what is kept, and markup that used to stall the standard parser."""

from __future__ import annotations

import pytest

from llm.html_text import html_to_text


def test_visible_text_keeps_links_and_drops_scripts_styles_and_hidden_parts():
    page = (
        "<!DOCTYPE html><html><head><title>Rye &amp; spelt</title>"
        "<script>if (a < b) { s = '</div>' }</script><STYLE>p{}</STYLE></head><body>"
        "<div>Dense <b>bread</b>&nbsp;!</div><a href='/loaves?a=1&amp;b=2'>Loaves</a> "
        '<a href="javascript:alert(1)">bad</a><br/>after<svg><text>drawn</text></svg>'
        "<p>kept<!-- hidden --> here</p><noscript>no js</noscript>5 < 6 and 7 > 3"
        "<ul><li>one<li>two</ul><A HREF=https://example.com/a>caps</A><template><p>t</p></template>end"
        "</body></html>"
    )

    # The same lines as html.parser gave: block tags open a line, closing tags do not.
    assert html_to_text(page).splitlines() == [
        "Rye & spelt",
        "Dense bread !Loaves (/loaves?a=1&b=2) bad",
        "after",
        "kept here5 < 6 and 7 > 3",
        "one",
        "twocaps (https://example.com/a)",
        "end",
    ]


@pytest.mark.parametrize(
    ("page", "text"),
    [
        ("<p>open <b", "open <b"),
        ("x <!-- never closed", "x"),
        ("<script>never closed", ""),
        ("a <3 b", "a <3 b"),
        ("<svg/>after a self-closing svg", "after a self-closing svg"),
    ],
)
def test_unfinished_markup_is_read_sensibly(page, text):
    assert html_to_text(page) == text


@pytest.mark.parametrize(
    "unit",
    ["<a", "</", "<?", "<!", "<![CDATA["],
)
def test_markup_that_is_quadratic_for_htmlparser_is_read_as_text(unit):
    # 400 KB of these took minutes with html.parser on Python 3.11.7; this scanner is linear.
    page = unit * (400_000 // len(unit))

    text = html_to_text(page)

    assert text in ("", page)
