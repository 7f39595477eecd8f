"""The speech side of the LLM stand-in (`fake_llm.py`): Gemini's speech output and ElevenLabs.

- Gemini: a generateContent request whose `generationConfig.responseModalities` is `["AUDIO"]` is
  answered with the audio inline, as Gemini's TTS models do: an `inlineData` part of MIME type
  `audio/L16;codec=pcm;rate=24000` (16-bit mono PCM, base64), with token usage (25 audio tokens a
  second).
- ElevenLabs: `POST .../v1/text-to-speech/{voice_id}?output_format=pcm_24000` (the `elevenlabs` SDK's
  `text_to_speech.convert`) is answered with the raw PCM.

The speech is a tone of SPEECH_SECONDS_PER_CHARACTER per character of the text (`speech_seconds`),
so a test knows the length every voice note must decode to.
"""

from __future__ import annotations

import base64
import math
import re
import struct
from typing import Any

#: How long the stand-in's speech lasts per character of the text it is asked to say.
SPEECH_SECONDS_PER_CHARACTER = 0.05
SPEECH_RATE = 24_000
ELEVENLABS_PATH = re.compile(r"^(?:/[^/]+)*/v1/text-to-speech/(?P<voice>[^/?]+)$")


def speech_seconds(text: str) -> float:
    """The length of the speech the stand-in answers for `text`, to the sample."""
    return round(len(text) * SPEECH_SECONDS_PER_CHARACTER * SPEECH_RATE) / SPEECH_RATE


def speech_pcm(text: str) -> bytes:
    """16-bit mono PCM at 24 kHz: a 220 Hz tone whose loudness rises and falls, `speech_seconds` long."""
    count = round(len(text) * SPEECH_SECONDS_PER_CHARACTER * SPEECH_RATE)
    samples = (
        int(9000 * math.sin(math.pi * i / count) * math.sin(2 * math.pi * 220 * i / SPEECH_RATE))
        for i in range(count)
    )
    return struct.pack(f"<{count}h", *samples)


def is_gemini_speech(body: Any) -> bool:
    config = body.get("generationConfig") if isinstance(body, dict) else None
    return isinstance(config, dict) and "AUDIO" in (config.get("responseModalities") or [])


def gemini_speech_text(body: dict[str, Any]) -> str:
    return "".join(
        part.get("text", "")
        for content in body.get("contents") or []
        for part in content.get("parts") or []
        if isinstance(part, dict)
    )


def gemini_speech_response(body: dict[str, Any], *, model: str, response_id: str) -> dict[str, Any]:
    text = gemini_speech_text(body)
    audio = base64.b64encode(speech_pcm(text)).decode()
    prompt, audio_tokens = max(1, len(text) // 4), round(speech_seconds(text) * 25)
    return {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"inlineData": {"mimeType": f"audio/L16;codec=pcm;rate={SPEECH_RATE}", "data": audio}}
                    ],
                },
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": prompt,
            "candidatesTokenCount": audio_tokens,
            "totalTokenCount": prompt + audio_tokens,
        },
        "modelVersion": model,
        "responseId": response_id,
    }


def elevenlabs_error(status: int, message: str) -> dict[str, Any]:
    return {"detail": {"status": "fake_error", "message": message}}
