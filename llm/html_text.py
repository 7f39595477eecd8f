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
_ANGLE = re.compile(r"[<>]")
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
        lt = page.find("<", pos)
        if lt == -1:
            text.data(page[pos:])
            break
        text.data(page[pos:lt])
        if page.startswith("<!--", lt):
            end = page.find("-->", lt + 4)
            pos = size if end == -1 else end + 3
            continue
        angle = _ANGLE.search(page, lt + 1)
        if angle is None or angle.group() == "<":
            stop = size if angle is None else angle.start()
            text.data(page[lt:stop])  # a "<" that starts no tag is text
            pos = stop
            continue
        inner, pos = page[lt + 1 : angle.start()], angle.end()
        name = _NAME.match(inner)
        if name is None:
            if not inner.startswith(("!", "?")):  # doctypes and processing instructions are dropped
                text.data(page[lt:pos])
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
