"""`shutdown`: `{"kind": "shutdown"}` stops the agent; only operators may cause it. No params."""

from __future__ import annotations

from llm.kinds.base import TaskKind, no_params
from llm.kinds.policies import OperatorOnly
from llm.kinds.registry import register

SHUTDOWN = register(TaskKind(name="shutdown", validate=no_params, policy=OperatorOnly(), runs="gateway"))
