"""The sandbox chat in Chromium plays an agent's voice note: an <audio> element that loads the OGG/Opus
file and has the note's duration, with the note's length and transcript beside it."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
from django.conf import settings

from agents.models import RolePrompt
from cindy_site.testing.fake_llm import speech_seconds
from dashboard.tests.test_browser import (  # noqa: F401 - fixtures used below
    _agent,
    _log_in,
    _staff,
    llm,
    page,
    site,
    site_db,
    tasks,
)

playwright_sync = pytest.importorskip("playwright.sync_api")
expect = playwright_sync.expect

pytestmark = pytest.mark.browser

TEXT = "Hello Alice, here is my voice, recorded just for you."
TASK_VOICE = Path(settings.BASE_DIR) / "configdir" / "prompts" / "Task-Voice.md"


def test_the_sandbox_chat_plays_the_agents_voice_note(site_db, page, llm):  # noqa: F811
    RolePrompt.objects.get_or_create(
        name="Task-Voice", scope_key=0, defaults={"text": TASK_VOICE.read_text(encoding="utf-8")}
    )
    agent = _agent(f"Vera {secrets.token_hex(2)}", role_prompt_names=["Task-Voice"])
    _log_in(page, _staff("listener"), next_url="/dashboard/sandbox/")
    page.select_option("#id_agent", label=agent.name)
    page.fill("#id_as_name", "Alice")
    page.click("text=Open chat")
    expect(page.locator("#live-status")).to_have_text("live")

    llm.reply_with(tasks({"kind": "voice", "text": TEXT}))
    site_db.start_gateway()
    page.fill("#message-text", "Could I hear your voice?")
    page.click("#send")

    bubble = page.locator("#transcript .bubble.agent")
    expect(bubble.locator("audio")).to_have_count(1, timeout=60_000)
    expect(bubble.locator(".media.voice")).to_contain_text(f"voice {speech_seconds(TEXT):.1f} s")
    expect(bubble.locator(".voice-says")).to_have_text(TEXT)
    audio = bubble.locator("audio")
    # HAVE_METADATA at least, and a finite duration: the browser loaded and parsed the Opus stream.
    page.wait_for_function(
        "el => el.readyState >= 1 && Number.isFinite(el.duration)", arg=audio.element_handle(), timeout=15_000
    )
    duration = audio.evaluate("el => el.duration")
    assert duration == pytest.approx(speech_seconds(TEXT), abs=0.05)
    assert audio.evaluate("el => el.error") is None
