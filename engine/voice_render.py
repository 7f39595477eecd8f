"""Making the voice notes a plan asks for, on the worker that planned it (LLM work, never the gateway).

After the LLM's reply is validated and before its tasks become nodes, each `voice` task's text is
spoken (`llm.speech`), encoded as a Telegram voice note (`conversations.voice_encoding`) and stored
(`VoiceNote`, file and row); the task then carries the note's id and duration, and the gateway's
`voice` node only uploads and sends that file. A note that cannot be made (the speech provider
refuses or is down, the audio cannot be encoded) does not lose the message: the task becomes a `send`
of the same text, with a note in the activity log saying why.
"""

from __future__ import annotations

import logging

from cindy_site.clock import get_clock
from conversations.models import TaskNode
from conversations.services.voice_notes import voice_note_create
from conversations.voice_encoding import VoiceEncodingError, encode_voice_note
from llm.errors import LLMError, LLMTransientError
from llm.plan_result import PlanResult
from llm.speech import VoiceChoice, speak

logger = logging.getLogger(__name__)


#: A speech call is not started with less time than this left in the turn: its text is sent instead.
MIN_SPEECH_SECONDS = 5.0


def voice_tasks_render(*, node_id: int, result: PlanResult, deadline: float | None = None) -> int:
    """Make the notes of the plan's `voice` tasks (in place); returns how many were made.

    `deadline` (the clock's monotonic time) is the turn's: each speech call gets at most the time
    left, so the task worker is never killed mid-turn (CINDY_Q_TIMEOUT)."""
    voices = [task for task in result.tasks if task.kind == "voice"]
    if not voices:
        return 0
    node = TaskNode.objects.select_related("agent").only("agent", "conversation_id").get(pk=node_id)
    agent = node.agent
    choice = VoiceChoice(name=agent.voice_name, language=agent.voice_language)
    made = 0
    for task in voices:
        text = task.params["text"]
        left = None if deadline is None else deadline - get_clock().monotonic()
        try:
            if left is not None and left < MIN_SPEECH_SECONDS:
                raise LLMTransientError(f"only {max(left, 0):.0f} s were left in the turn")
            speech = speak(
                text,
                voice=choice,
                agent_id=agent.pk,
                conversation_id=node.conversation_id,
                node_id=node_id,
                timeout=left,
            )
            audio = encode_voice_note(speech.pcm, sample_rate=speech.sample_rate)
        except (LLMError, VoiceEncodingError) as exc:
            logger.info("agent %s: voice note not made, sent as text: %s", agent.name, exc)
            result.notes.append(f"the voice note could not be made ({exc}): its text was sent as a message")
            task.kind = "send"
            task.params = {"text": text, "reply_to": task.params.get("reply_to")}
            continue
        note = voice_note_create(
            agent_id=agent.pk,
            conversation_id=node.conversation_id,
            planned_by_node_id=node_id,
            text=text,
            audio=audio,
            provider=speech.provider,
            model=speech.model,
            voice=speech.voice,
            llm_call_id=speech.llm_call_id,
        )
        task.params = {**task.params, "voice_note_id": note.pk, "duration": note.duration}
        made += 1
    return made
