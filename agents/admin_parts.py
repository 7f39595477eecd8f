"""What the apps above `agents` add to the agent's admin page, registered by those apps.

`agents` imports no app above it (docs/DESIGN.md, "Apps and their order"), yet the agent page shows
the agent's memories, offers the media catalog's sticker sets and suggests the models offered to
personas, and its Telegram account page offers the media library's pictures as profile photos. The apps that own those register them here: `memory/admin.py` its inline, `media_catalog`
and `llm` their choices from their `AppConfig.ready()`. A part nobody registered is left out: the
page has no such inline, and a choice list offers only what the agent already has.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # For the type checker only: the gateway and workers register choices without loading the admin.
    from django.contrib.admin.options import InlineModelAdmin

#: Sticker set short name -> label, for the agent form's sticker set choices.
STICKER_SETS = "sticker_sets"
#: LLM names in the order the agent form suggests them.
LLM_NAMES = "llm_names"
#: For one agent (the source takes it): its media library's pictures that may become its profile
#: photo, as (unique id, label) pairs, for the Telegram account page.
LIBRARY_PICTURES = "library_pictures"

_inlines: list[tuple[type[InlineModelAdmin], Callable[[Any], None]]] = []
_choice_sources: dict[str, Callable[[], Any]] = {}


def agent_inline_add(inline: type[InlineModelAdmin], *, save: Callable[[Any], None]) -> None:
    """Show `inline` on the agent page after its own inlines; `save(instance)` stores each row of it
    the operator added or changed (the owning app's service, so its validation applies)."""
    if all(known is not inline for known, _ in _inlines):
        _inlines.append((inline, save))


def agent_inlines() -> list[type[InlineModelAdmin]]:
    return [inline for inline, _ in _inlines]


def agent_inline_saver(instance: Any) -> Callable[[Any], None] | None:
    """The registered save service for a row of an added inline, None for any other row."""
    for inline, save in _inlines:
        if isinstance(instance, inline.model):
            return save
    return None


def choices_provide(name: str, source: Callable[..., Any]) -> None:
    """Register the function that lists the choices called `name` (STICKER_SETS, LLM_NAMES,
    LIBRARY_PICTURES)."""
    _choice_sources[name] = source


def choices(name: str, default: Any, *args: Any) -> Any:
    """The choices called `name` now (`args` go to the source), or `default` when no app provides them."""
    source = _choice_sources.get(name)
    return default if source is None else source(*args)
