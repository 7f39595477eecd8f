"""`clear-conversation`: `{"kind": "clear-conversation"}` deletes this direct message's history. No params."""

from __future__ import annotations

from llm.kinds.base import TaskKind, no_params
from llm.kinds.policies import DirectMessageOnly
from llm.kinds.registry import register

CLEAR_CONVERSATION = register(
    TaskKind(name="clear-conversation", validate=no_params, policy=DirectMessageOnly(), runs="gateway")
)
