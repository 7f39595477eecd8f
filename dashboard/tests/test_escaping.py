"""Names, titles, texts and errors from Telegram or an LLM are escaped wherever pages render them."""

from __future__ import annotations

import pytest

from cindy_site.clock import now
from conversations.models import Conversation, TaskGraph, TaskNode
from conversations.services.activity import record_event
from dashboard.tests.conftest import HOSTILE
from llm.models import LLMCall
from media_catalog.models import MediaDescription, Sticker, StickerSet
from sandbox.services.chats import sandbox_say

pytestmark = pytest.mark.django_db

RAW_MARKUP = ("<script>alert(1)</script>", "<img src=x", "onerror=alert(2)>")


def _assert_inert(html: str) -> None:
    for fragment in RAW_MARKUP:
        assert fragment not in html, f"{fragment!r} reached the page unescaped"


def test_dashboard_escapes_hostile_agent_names_titles_messages_and_errors(verified, hostile_agent):
    conversation = Conversation.objects.create(
        agent=hostile_agent, peer_id=7, kind="group", title=f"Group {HOSTILE}"
    )
    graph = TaskGraph.objects.create(conversation=conversation, created=now(), trigger="message")
    TaskNode.objects.create(
        graph=graph,
        conversation=conversation,
        agent=hostile_agent,
        kind="send",
        status="failed",
        params={"text": f"reply {HOSTILE}"},
        error=f"LLM said {HOSTILE}",
        not_before=now(),
        created=now(),
    )
    record_event(
        "message_in",
        agent_id=hostile_agent.pk,
        conversation_id=conversation.pk,
        summary=f"{HOSTILE}: {HOSTILE}",
    )
    LLMCall.objects.create(created=now(), agent=hostile_agent, provider="gemini", model="m")

    html = verified.client.get("/dashboard/").content.decode()

    _assert_inert(html)
    # The data is there, escaped for a <script type="application/json"> block.
    assert "\\u003Cscript\\u003Ealert(1)\\u003C/script\\u003E" in html
    assert html.count("onerror=alert(2)\\u003E") >= 5


def test_sandbox_page_escapes_hostile_agent_sender_group_and_sticker_text(verified, hostile_agent):
    StickerSet.objects.create(short_name="Faces", title=f"Faces {HOSTILE}")
    hostile_agent.sticker_set_names = ["Faces"]
    hostile_agent.save()
    Sticker.objects.create(sticker_set=StickerSet.objects.get(), name="x", unique_id="AgADx")
    MediaDescription.objects.create(unique_id="AgADx", description=f"a face {HOSTILE}")
    sandbox_say(agent=hostile_agent, text=HOSTILE, as_name=f"Mallory {HOSTILE}", group=f"Club {HOSTILE}")

    response = verified.client.get(
        "/dashboard/sandbox/",
        {"agent": hostile_agent.pk, "as_name": f"Mallory {HOSTILE}", "group": f"Club {HOSTILE}"},
    )

    assert response.status_code == 200
    html = response.content.decode()
    _assert_inert(html)
    assert "Eve &lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img src=x onerror=alert(2)&gt;" in html
    assert "Club &lt;script&gt;" in html
    assert "a face &lt;script&gt;" in html


def test_form_errors_escape_the_value_they_name(verified, sandbox_agent):
    response = verified.client.get("/dashboard/sandbox/", {"agent": HOSTILE, "as_name": "Alice"})
    assert response.status_code == 400
    _assert_inert(response.content.decode())
