"""`file:NAME` URLs in retrieve tasks: the agent's own documents instead of a web page.

A retrieve task may name `file:Friends.md`; its content comes from the agent's documents
(`agents.selectors.agent_document`), never from the network. Other features add names of their own
with `register_file_source` (e.g. `file:schedule.json` for the agent's schedule): an exact name
registered here wins over a document of the same name.
"""

from __future__ import annotations

from collections.abc import Callable

from agents.selectors import agent_document

#: (agent id, name) -> the text, or None when there is nothing by that name.
FileSource = Callable[[int, str], str | None]

FILE_PREFIX = "file:"
_NAMED: dict[str, FileSource] = {}


def register_file_source(name: str, source: FileSource) -> None:
    """Serve `file:<name>` from `source` (e.g. "schedule.json" from the schedule feature)."""
    _NAMED[name] = source


def is_file_url(url: str) -> bool:
    return url.startswith(FILE_PREFIX)


def file_url_name(url: str) -> str:
    """The NAME of a `file:NAME` URL."""
    return url[len(FILE_PREFIX) :].strip().lstrip("/")


def read_file_url(*, agent_id: int, url: str) -> str:
    """The text a `file:NAME` URL stands for, or a line telling the model there is no such file."""
    name = file_url_name(url)
    source = _NAMED.get(name)
    text = source(agent_id, name) if source is not None else agent_document(agent_id=agent_id, name=name)
    if text is None:
        return f"There is no file named {name!r}: only the documents you were given can be read with file:."
    return text
