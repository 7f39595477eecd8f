"""`event`: a scheduled intent for this conversation, a stored kind (`memory.stored_kinds.EVENT`) whose
policy is `llm.policy_initiative`'s: not in a turn that read text from outside the chat (a web page,
another chat's intention), and a readable time that is still in the future (a delete needs only the
id)."""

from __future__ import annotations

from llm.kinds.policies import Initiative
from llm.kinds.registry import register
from llm.kinds.stored import stored_task_kind
from memory.stored_kinds import EVENT as STORED_EVENT

EVENT = register(stored_task_kind(STORED_EVENT, Initiative(in_schedule_turn=True)))
