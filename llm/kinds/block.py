"""`block`: `{"kind": "block"}` blocks the partner of this direct message. No params."""

from __future__ import annotations

from llm.kinds.base import TaskKind, no_params
from llm.kinds.policies import DirectMessageOnly
from llm.kinds.registry import register

BLOCK = register(
    TaskKind(
        name="block", validate=no_params, policy=DirectMessageOnly(), runs="gateway", conversational=True
    )
)
