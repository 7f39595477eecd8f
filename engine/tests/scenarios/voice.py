"""Voice notes in the scenarios: every note the agent sent is decoded with PyAV, on both transports.

A voice part of a message, as the stage reads it, carries `decoded` (codec, rate, channels and the
decoded duration) and `stated` (the duration the message states: the sandbox's seconds, or Telegram's
whole seconds in `DocumentAttributeAudio`). `render` shows it as `(voice 2.4 s)` from the decoded
audio, and `voice_problems` lists what does not match Telegram's voice-note format or the statement.
"""

from __future__ import annotations

import math
from dataclasses import asdict

from conversations.voice_encoding import decode_voice_note


def voice_part(data: bytes | None, *, stated: float | None, whole_seconds: bool) -> dict:
    part: dict = {"media_kind": "voice", "stated": stated, "whole_seconds": whole_seconds}
    if data is None:
        part["decoded"] = None
        return part
    try:
        part["decoded"] = asdict(decode_voice_note(data))
    except Exception as exc:  # reported by voice_problems
        part["decoded"] = {"error": f"{type(exc).__name__}: {exc}"}
    return part


def render_voice(part: dict) -> str:
    decoded = part.get("decoded") or {}
    duration = decoded.get("duration")
    return f"(voice {duration:.1f} s)" if duration is not None else "(voice undecodable)"


def voice_problems(part: dict) -> list[str]:
    decoded = part.get("decoded")
    if decoded is None:
        return ["a voice note without its file"]
    if "error" in decoded:
        return [f"a voice note that does not decode: {decoded['error']}"]
    problems = []
    shape = (decoded["codec"], decoded["sample_rate"], decoded["channels"])
    if shape != ("opus", 48_000, 1):
        problems.append(f"a voice note in {shape}, not Opus at 48 kHz mono")
    stated, duration = part.get("stated"), decoded["duration"]
    if stated is None:
        problems.append("a voice note that states no duration")
    elif part.get("whole_seconds"):
        if stated != max(1, math.ceil(duration)):
            problems.append(f"a voice note of {duration:.2f} s that states {stated} s")
    elif abs(stated - duration) > 0.05:
        problems.append(f"a voice note of {duration:.2f} s that states {stated:.2f} s")
    return problems
