"""The task-kind registry (`llm.kinds`): a kind is one module, and the pieces that must agree do."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from conversations.models import Conversation, NodeKind
from engine.handlers import handler_for
from llm.kinds import TaskKind, kind_names, register, task_kind, task_kinds, unregister
from llm.kinds.base import STRING, Policy, Task
from llm.kinds.policies import Ordinary
from llm.parsing import parse_reply
from llm.policy import apply_policy, refusal_reason
from llm.policy_inputs import TurnInputs
from llm.prompt.response_format import DEFAULT_INSTRUCTIONS
from llm.task_fields import TaskError, required_text
from llm.task_schema import kinds_from_prompt, task_list_schema, taught_kinds
from llm.tasks import validate_task
from memory.stored_kinds import stored_kinds


def _wave(raw: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    return {"hand": required_text(raw, "hand", notes=notes)}


def _wave_block(body: str, number: int | None) -> dict[str, Any]:
    return {"hand": body}


#: A kind declared only here, the way a kind's module declares it.
WAVE = TaskKind(
    name="wave",
    validate=_wave,
    policy=Ordinary(),
    runs="gateway",
    fields={"hand": STRING},
    aliases=("greet",),
    read_legacy=_wave_block,
)


@pytest.fixture
def wave() -> Iterator[TaskKind]:
    register(WAVE)
    try:
        yield WAVE
    finally:
        unregister(WAVE.name)


def test_a_kind_registered_in_a_test_module_is_in_the_schema_the_markers_and_validation():
    before = task_list_schema()["items"]["properties"]
    assert "wave" not in before["kind"]["enum"]
    register(WAVE)
    try:
        _registered_wave_is_everywhere(before)
    finally:
        unregister(WAVE.name)


def _registered_wave_is_everywhere(before: dict[str, Any]) -> None:
    properties = task_list_schema()["items"]["properties"]
    assert "wave" in properties["kind"]["enum"]
    assert properties["hand"] == STRING
    # The known fields keep their order (the cached prefix); the new one follows them.
    assert list(properties) == [*before, "hand"]
    assert taught_kinds([("Task-Wave", "<!-- SCHEMA_TASKS: greet -->")]) == ("wave",)

    (task,) = validate_task({"kind": "Greet", "hand": "left", "id": "w1"})
    assert (task.kind, task.params, task.id) == ("wave", {"hand": "left"}, "w1")
    with pytest.raises(TaskError, match='"hand" is missing'):
        validate_task({"kind": "wave"})
    assert parse_reply("# «wave»\nright").tasks == [Task("wave", {"hand": "right"})]


def test_a_registered_kind_is_judged_by_its_own_policy(wave):
    def no_inputs_needed() -> TurnInputs:
        raise AssertionError("an ordinary kind must not read the turn's inputs")

    tasks = [Task("wave", {"hand": "left"})]
    assert apply_policy(tasks, inputs=no_inputs_needed) == (tasks, [])


def test_a_kind_without_a_rule_is_refused():
    register(TaskKind(name="unruled", validate=_wave, policy=Policy(), runs="gateway"))
    try:
        inputs = TurnInputs(conversation=Conversation(kind=Conversation.Kind.DM))
        reason = refusal_reason(Task("unruled", {"hand": "left"}), inputs=inputs)
    finally:
        unregister("unruled")
    assert reason == "unruled has no policy rule, so it is refused"
    assert "unruled" not in kind_names()


def test_registering_a_kind_twice_fails_loudly(wave):
    with pytest.raises(RuntimeError, match="registered twice"):
        register(wave)


def test_a_kind_unregistered_is_unknown_again(wave):
    unregister("wave")
    with pytest.raises(TaskError, match='kind "wave" is unknown'):
        validate_task({"kind": "wave", "hand": "left"})


def test_gateway_kinds_are_the_node_kinds_and_each_has_a_handler():
    gateway = {kind.name for kind in task_kinds() if kind.runs == "gateway"}
    assert gateway == set(NodeKind.values) - {NodeKind.RECEIVED}
    assert [name for name in sorted(gateway) if handler_for(name) is None] == []


def test_every_stored_kind_is_a_stored_task_kind():
    for spec in stored_kinds():
        kind = task_kind(spec.kind)
        assert kind is not None and kind.runs == "stored", spec.kind
        assert kind.policy.in_schedule_turn, spec.kind


def test_older_names_resolve_to_their_kind():
    assert task_kind("photo") is task_kind("send_media")
    assert task_kind("nonexistent") is None


def test_the_built_in_response_format_teaches_only_kinds_it_describes():
    taught = kinds_from_prompt(DEFAULT_INSTRUCTIONS)
    assert taught <= set(kind_names())
    assert [name for name in sorted(taught) if f'{{"kind": "{name}"' not in DEFAULT_INSTRUCTIONS] == []


def test_the_kinds_are_made_once_and_again_when_a_kind_comes_or_goes():
    """A planning turn asks the registry about 14 times: the same answer, made again only on a change."""
    first = task_kinds()
    assert task_kinds() is first
    register(WAVE)
    try:
        assert task_kinds() is not first and task_kind("wave") is WAVE and "wave" in kind_names()
    finally:
        unregister(WAVE.name)
    assert task_kinds() == first and task_kind("wave") is None
