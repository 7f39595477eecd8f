"""What a task kind is: one declaration holding everything the LLM side knows about the kind.

A `TaskKind` names the kind (the name the reply and the SCHEMA_TASKS markers use, and its aliases), the
reply-schema fields it reads, how a raw task of the kind is validated, the policy that judges it, and
where it runs. Each kind is one module of this package that registers its declaration
(`llm.kinds.registry.register`); validation (`llm.tasks`), the reply schema (`llm.task_schema`) and
the policy (`llm.policy`) only iterate the registry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from llm.policy_inputs import TurnInputs

#: Reply-schema fragments, in the OpenAPI subset Gemini's response_schema accepts.
STRING: dict[str, Any] = {"type": "STRING"}
INTEGER: dict[str, Any] = {"type": "INTEGER", "nullable": True}
NUMBER: dict[str, Any] = {"type": "NUMBER"}
STRINGS: dict[str, Any] = {"type": "ARRAY", "items": STRING}

#: Where a kind's tasks go once validated and allowed: a node the gateway runs (`engine.handlers`
#: has its handler, `NodeKind` its value), consumed while planning (think, retrieve), or stored in the
#: agent's records (`memory.stored_kinds`).
Runs = Literal["gateway", "planning", "stored"]

#: What a kind's validation gives: the params of one task, or a list of them (empty: the task is
#: dropped, with a note if it says why; several: a send split into messages).
Params = dict[str, Any]
Validator = Callable[[dict[str, Any], list[str]], "Params | list[Params]"]
#: How a kind's block in the original's Markdown replies (`llm.legacy_markdown`: `# «kind» <number>`,
#: then a body) reads: the body and the heading's number -> the raw task's fields, which `validate`
#: then checks like JSON ones; None drops the block silently, a TaskError with an error line.
LegacyReader = Callable[[str, "int | None"], "dict[str, Any] | None"]


@dataclass
class Task:
    """A validated task. params per kind: see the kind's module in `llm.kinds`.

    `id` is the reply's own id for the task (None when it gave none); `depends_on` the ids it waits for.
    """

    kind: str
    params: dict[str, Any] = field(default_factory=dict)
    id: str | None = None
    depends_on: tuple[str, ...] | None = None  # None: not given (run after the task before it)


@dataclass(frozen=True)
class Policy:
    """How `llm.policy` judges a kind's tasks. This base refuses: a kind is allowed only by a rule."""

    #: Whether the daily schedule planning turn (trigger `schedule`) may ask for the kind: that turn
    #: only plans, it never acts in a chat.
    in_schedule_turn: bool = False
    #: Whether a consolidation turn (trigger `consolidate`) may ask for the kind: that turn only writes
    #: the agent's notes, memories, plans and intentions about a quiet chat.
    in_consolidation_turn: bool = False

    def needs_inputs(self, task: Task) -> bool:
        """Whether judging `task` reads the turn's inputs or the database (an ordinary turn reads none)."""
        return True

    def refusal(self, task: Task, *, inputs: TurnInputs, earlier: int) -> str:
        """Why `task` may not run in this turn, or "" when it may (`earlier`: tasks of its kind this
        reply already had allowed)."""
        return f"{task.kind} has no policy rule, so it is refused"


@dataclass(frozen=True)
class TaskKind:
    name: str
    validate: Validator  # raw task, notes -> params; raises TaskError naming the field and the fix
    policy: Policy
    runs: Runs
    #: The reply-schema properties the kind reads (`llm.task_schema`), besides kind, id and depends_on.
    fields: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    #: Properties the schema has only when the turn's prompts teach the kind, so that the schema of a
    #: persona without the kind stays as it was before the kind existed (its cached prefix too).
    taught_fields: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    #: Older names the reply and the SCHEMA_TASKS markers may use for the kind.
    aliases: tuple[str, ...] = ()
    #: Whether the `Instructions` prompt teaches the kind even without naming it in its marker.
    conversational: bool = False
    #: How its legacy Markdown block reads; None: the block is the bare kind (`{"kind": ...}`).
    read_legacy: LegacyReader | None = None


def unfence(body: str, *languages: str) -> str:
    """`body` without an opening ```` ```<language> ```` fence (the first of `languages` it has; ""
    is a bare fence) and its closing one."""
    for language in languages:
        opening = f"```{language}\n"
        if body.startswith(opening):
            body = body.removeprefix(opening)
            if body.endswith("```"):
                body = body.removesuffix("```")
            return body
    return body


def no_params(raw: dict[str, Any], notes: list[str]) -> Params:
    """The validation of a kind that takes no fields (block, shutdown, ...): whatever else it carries
    is ignored."""
    return {}
