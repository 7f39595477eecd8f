"""Visible text of an HTML page, in time linear in its length.

The standard library's HTMLParser rescans unfinished markup, so some inputs cost time quadratic in
their size (`"<a" * 100_000`, 200 KB, takes over a minute on Python 3.11.7; see CVE-2025-6069): a
fetched page could hold a worker long after the fetch's deadline. This scanner looks at each
character a bounded number of times:

- text runs to the next "<"; a "<" that another "<" follows before any ">" is text;
- a comment runs to "-->" (or to the end); doctypes and processing instructions are dropped;
- script and style skip to their closing tag; noscript, svg and template are dropped with their
  content; block tags start a new line;
- a link keeps its target after its text, when it is http(s) or site-relative (search results need
  them). Character references are decoded.
"""

from __future__ import annotations

import html
import re

_RAW_TEXT = frozenset({"script", "style"})
_SKIP = frozenset({"script", "style", "noscript", "svg", "template"})
_BLOCK = frozenset(
    {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article", "title"}
)
#: A comment's start, or a tag: "<", no "<" or ">", then ">". Each search is one linear scan: an
#: attempt at a "<" ends at the next "<" or ">", so no character is looked at twice.
_TOKEN = re.compile(r"<!--|<[^<>]*>")
_NAME = re.compile(r"(/?)([a-zA-Z][a-zA-Z0-9:-]*)")
_HREF = re.compile(r"(?:^|\s)href\s*=\s*", re.IGNORECASE)
_CLOSERS = {tag: re.compile(rf"</{tag}\b", re.IGNORECASE) for tag in _RAW_TEXT}


def _href(attributes: str) -> str:
    found = _HREF.search(attributes)
    if found is None:
        return ""
    rest = attributes[found.end() :]
    if rest[:1] in ('"', "'"):
        end = rest.find(rest[0], 1)
        value = rest[1:end] if end != -1 else rest[1:]
    else:
        value = rest.split(None, 1)[0] if rest.strip() else ""
    return html.unescape(value).strip()


class _Text:
    def __init__(self) -> None:
        self.out: list[str] = []
        self.skipping = 0
        self.href: str | None = None

    def data(self, text: str) -> None:
        if text and not self.skipping:
            self.out.append(html.unescape(text))

    def start(self, tag: str, attributes: str) -> None:
        if tag in _SKIP:
            self.skipping += 1
        elif tag in _BLOCK:
            self.out.append("\n")
        if tag == "a":
            href = _href(attributes)
            self.href = href if href.startswith(("http://", "https://", "/")) else None

    def end(self, tag: str) -> None:
        if tag in _SKIP and self.skipping:
            self.skipping -= 1
        elif tag == "a" and self.href:
            self.out.append(f" ({self.href})")
            self.href = None


def html_to_text(page: str) -> str:
    text = _Text()
    pos, size = 0, len(page)
    while pos < size:
        token = _TOKEN.search(page, pos)
        if token is None:
            text.data(page[pos:])
            break
        text.data(page[pos : token.start()])
        if token.group() == "<!--":
            end = page.find("-->", token.end())
            pos = size if end == -1 else end + 3
            continue
        inner, pos = page[token.start() + 1 : token.end() - 1], token.end()
        name = _NAME.match(inner)
        if name is None:
            if not inner.startswith(("!", "?")):  # doctypes and processing instructions are dropped
                text.data(page[token.start() : pos])
            continue
        tag = name.group(2).lower()
        if name.group(1):
            text.end(tag)
            continue
        text.start(tag, inner[name.end() :])
        if inner.rstrip().endswith("/"):
            text.end(tag)
        elif tag in _RAW_TEXT:
            closer = _CLOSERS[tag].search(page, pos)
            pos = size if closer is None else closer.start()
    lines = (" ".join(line.split()) for line in "".join(text.out).splitlines())
    return "\n".join(line for line in lines if line)
