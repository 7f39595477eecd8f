"""`schedule`: one activity of the agent's daily schedule, a stored kind (`memory.stored_kinds.SCHEDULE`)
whose policy is `llm.policy_initiative`'s: not in a turn that read text from outside the chat (a web
page, another chat's intention; the agent's own `file:schedule.json` is not), only for agents whose
persona has a "Daily Schedule", and an entry may not overlap another."""

from __future__ import annotations

from llm.kinds.policies import Initiative
from llm.kinds.registry import register
from llm.kinds.stored import stored_task_kind
from memory.stored_kinds import SCHEDULE as STORED_SCHEDULE

SCHEDULE = register(stored_task_kind(STORED_SCHEDULE, Initiative(in_schedule_turn=True)))
