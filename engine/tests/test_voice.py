"""voice: the worker speaks and encodes the note, the gateway shows recording and sends it once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cindy_site.testing.fake_llm import speech_seconds
from conversations.models import ActivityEvent, Message, NodeStatus, TaskNode, VoiceNote
from conversations.transport.base import TransportError
from conversations.voice_encoding import decode_voice_note, unpack_waveform
from dashboard.selectors import sandbox_message_row
from engine.tests.cast import teach
from engine.tests.harness import Harness, tasks
from llm.models import LLMCall
from sandbox.models import SandboxMessage, SandboxUpdate
from sandbox.services.chats import sandbox_say, sandbox_transcript
from sandbox.transport.transport import SandboxTransport

pytestmark = pytest.mark.django_db

TEXT = "Good morning! The canal is high after the rain."


@pytest.fixture(autouse=True)
def _taught(agent, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    agent.voice_name, agent.voice_language = "Puck", "en-GB"
    agent.save(update_fields=["voice_name", "voice_language"])
    return teach(agent, "Task-Voice")


def speech_requests(fake_llm):
    return [r for r in fake_llm.requests if r.api == "gemini-speech"]


def test_a_voice_task_sends_a_voice_note_of_the_spoken_length(agent, harness, fake_llm, settings):
    fake_llm.reply_with(tasks({"kind": "voice", "text": TEXT}))
    sandbox_say(agent=agent, text="say something")
    harness.settle()

    (speech,) = speech_requests(fake_llm)
    config = speech.json["generationConfig"]
    assert config["responseModalities"] == ["AUDIO"]
    # The SDK writes speechConfig's inner fields in snake_case; the API reads either spelling.
    speech_config = json.dumps(config["speechConfig"])
    assert '"voice_name": "Puck"' in speech_config and '"language_code": "en-GB"' in speech_config
    assert speech.model == "gemini-2.5-flash-preview-tts" and TEXT in json.dumps(speech.json)

    sent = SandboxMessage.objects.filter(sender__agent=agent).get()
    (part,) = sent.media
    assert part["media_kind"] == "voice" and part["transcript"] == TEXT and sent.text == ""
    decoded = decode_voice_note((Path(settings.MEDIA_ROOT) / part["file"]).read_bytes())
    assert (decoded.codec, decoded.sample_rate, decoded.channels) == ("opus", 48_000, 1)
    assert decoded.duration == pytest.approx(speech_seconds(TEXT), abs=0.01)
    assert part["duration"] == pytest.approx(decoded.duration, abs=0.01)
    assert sandbox_transcript(agent=agent)[1] == f"Wendy: (voice {speech_seconds(TEXT):.1f} s) {TEXT}"
    row = sandbox_message_row(sent)["media"][0]  # what the browser chat draws: a player
    assert row["url"].startswith("/") and row["url"].endswith(".ogg")

    note = VoiceNote.objects.get()
    assert max(unpack_waveform(bytes(note.waveform))) == 31 and note.voice == "Puck"
    node = TaskNode.objects.get(kind="voice")
    assert node.status == NodeStatus.DONE and node.params["voice_note_id"] == note.pk
    assert node.random_id is not None and node.result["message_id"] == sent.message_id
    call = LLMCall.objects.get(purpose=LLMCall.Purpose.SPEECH)
    assert call.status == LLMCall.Status.OK and call.output_tokens > 0 and call.cost > 0
    out = ActivityEvent.objects.get(kind=ActivityEvent.Kind.MESSAGE_OUT)
    assert TEXT in out.summary  # the activity stream shows what the note says
    mirrored = Message.objects.get(is_agent=True)
    assert mirrored.media[0]["media_kind"] == "voice"
    assert mirrored.media[0]["extra"]["transcript"] == TEXT


def test_recording_is_shown_for_about_the_speaking_time_before_the_note_goes_out(
    agent, harness, fake_llm, clock
):
    text = "x" * 200  # 10 s of speech
    fake_llm.reply_with(tasks({"kind": "voice", "text": text}))
    sandbox_say(agent=agent, text="tell me a story")
    started = clock.now()
    harness.settle()

    node = TaskNode.objects.get(kind="voice")
    assert (node.finished - started).total_seconds() >= speech_seconds(text)
    renewals = SandboxUpdate.objects.filter(kind=SandboxUpdate.Kind.TYPING, actor__agent=agent).count()
    assert renewals >= 2  # renewed every few seconds while "recording"


class SendsThenLoses(SandboxTransport):
    """The note goes out, but the answer is lost (a crash or a dropped connection right after)."""

    lose: list[bool] = []

    async def send_voice(self, peer_id, voice, *, random_id, reply_to=None):
        sent = await super().send_voice(peer_id, voice, random_id=random_id, reply_to=reply_to)
        if self.lose:
            self.lose.pop()
            raise TransportError("connection lost after the send")
        return sent


def test_a_voice_send_retried_after_a_lost_answer_is_not_sent_twice(agent, clock, fake_llm, settings):
    settings.CINDY_MAX_ATTEMPTS, settings.CINDY_RETRY_SECONDS = 10, 10
    SendsThenLoses.lose = [True]
    harness = Harness(
        clock, transport_factory=lambda agent, gateway_id="": SendsThenLoses(agent, gateway_id=gateway_id)
    )
    harness.start()
    fake_llm.reply_with(tasks({"kind": "voice", "text": TEXT}))
    sandbox_say(agent=agent, text="say it")
    harness.settle()

    node = TaskNode.objects.get(kind="voice", params__retry_of__isnull=True)
    assert node.status == NodeStatus.DONE and node.attempts == 1
    assert ActivityEvent.objects.filter(kind="node_retried", node_id=node.pk).count() == 1
    assert SandboxMessage.objects.filter(sender__agent=agent).count() == 1
    assert len(speech_requests(fake_llm)) == 1 and VoiceNote.objects.count() == 1


def test_a_note_the_provider_refuses_is_sent_as_text_with_a_note(agent, harness, fake_llm):
    fake_llm.reply_with(tasks({"kind": "voice", "text": TEXT}))
    fake_llm.fail_next_speech(400, message="voice not available")
    sandbox_say(agent=agent, text="say it")
    harness.settle()

    assert sandbox_transcript(agent=agent)[1] == f"Wendy: {TEXT}"
    assert not VoiceNote.objects.exists() and not TaskNode.objects.filter(kind="voice").exists()
    note = ActivityEvent.objects.filter(summary__contains="the voice note could not be made").get()
    assert "voice not available" in note.summary
    call = LLMCall.objects.get(purpose=LLMCall.Purpose.SPEECH)
    assert call.status == LLMCall.Status.ERROR


def test_a_note_with_too_little_time_left_in_the_turn_is_sent_as_text(agent, harness, fake_llm, clock):
    from engine.voice_render import voice_tasks_render
    from llm.plan_result import PlanResult
    from llm.tasks import Task

    sandbox_say(agent=agent, text="say it")
    harness.ingest()
    node = TaskNode.objects.get(kind="received")
    result = PlanResult(tasks=[Task("voice", {"text": TEXT, "reply_to": 7})])
    made = voice_tasks_render(node_id=node.pk, result=result, deadline=clock.monotonic() + 2)

    assert made == 0 and speech_requests(fake_llm) == []
    assert (result.tasks[0].kind, result.tasks[0].params) == ("send", {"text": TEXT, "reply_to": 7})
    assert "only 2 s were left in the turn" in result.notes[0]


class MirroredFirst(SandboxTransport):
    """Telegram's history reached the mirror before the send was recorded: the note as a document."""

    async def send_voice(self, peer_id, voice, *, random_id, reply_to=None):
        from asgiref.sync import sync_to_async

        from conversations.services.ingest import message_upsert
        from conversations.transport.base import InboundMessage, MediaItem

        sent = await super().send_voice(peer_id, voice, random_id=random_id, reply_to=reply_to)
        record = InboundMessage(
            peer_id=peer_id,
            chat_kind="dm",
            message_id=sent.message_id,
            date=sent.date,
            sender_id=self.agent.telegram_user_id,
            is_outgoing=True,
            media=(MediaItem(media_kind="document", unique_id="5551", mime="audio/ogg"),),
        )
        await sync_to_async(message_upsert)(agent=self.agent, record=record)
        return sent


def test_a_note_mirrored_from_history_before_its_send_was_recorded_keeps_its_transcript(
    agent, clock, fake_llm
):
    harness = Harness(
        clock, transport_factory=lambda agent, gateway_id="": MirroredFirst(agent, gateway_id=gateway_id)
    )
    harness.start()
    fake_llm.reply_with(tasks({"kind": "voice", "text": TEXT}))
    sandbox_say(agent=agent, text="say it")
    harness.settle()

    (part,) = Message.objects.get(is_agent=True).media
    assert part["media_kind"] == "voice" and part["extra"]["transcript"] == TEXT
