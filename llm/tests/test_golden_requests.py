"""Golden tests: the exact request bodies the real SDKs send for one fixed conversation.

To accept an intended change, run with CINDY_UPDATE_GOLDEN=1 and review the diff of llm/tests/golden/.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest

from agents.models import RolePrompt
from llm.calls import call_llm
from llm.prompt import TurnContext, build_plan_request
from llm.routing import Route
from llm.tests.conftest import add_message
from media_catalog.models import MediaDescription

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture
def fixed_conversation(agent, dm, clock):
    clock.set(dt.datetime(2026, 3, 1, 9, 30, tzinfo=dt.UTC))
    RolePrompt.objects.create(
        name="Instructions", text="# Response Format\n\nAnswer with a JSON list of tasks."
    )
    RolePrompt.objects.create(name="Chatbot", text="Be chatty with {user}.")
    MediaDescription.objects.create(
        unique_id="S1",
        kind="sticker",
        sticker_set_name="NNNNun",
        sticker_name="😂",
        description="a nun laughing",
    )
    add_message(dm, 10, "Hi Wendy! Got any rye today?")
    add_message(dm, 11, "Fresh out of the oven 🍞", is_agent=True)
    sticker = {
        "kind": "media",
        "media_kind": "sticker",
        "unique_id": "S1",
        "sticker_set_name": "NNNNun",
        "sticker_name": "😂",
    }
    add_message(dm, 12, "", media=[sticker], reply_to_id=11)
    return dm


def _check(name: str, body: dict) -> None:
    path = GOLDEN / name
    text = json.dumps(body, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
    if os.environ.get("CINDY_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("route", "golden"),
    [
        (Route("gemini", "gemini-3-flash-preview"), "gemini_request.json"),
        (Route("grok", "grok-4-fast-non-reasoning"), "openai_compatible_request.json"),
        (Route("anthropic", "claude-sonnet-4-6"), "anthropic_request.json"),
    ],
    ids=["gemini", "openai-compatible", "anthropic"],
)
def test_request_body_matches_golden(fixed_conversation, fake_llm, route, golden):
    request = build_plan_request(fixed_conversation, TurnContext(trigger="message", target_message_id=12))

    call_llm(request, route=route)

    _check(golden, fake_llm.requests[0].json)
