"""The persona's optional `# Voice` section: how its voice notes (the `voice` kind) sound.

    # Voice
    Voice: Kore
    Language: en-GB

`Voice` is the speech provider's voice: one of Gemini's prebuilt voices (Kore, Puck, Charon, ...) or,
for installations speaking through ElevenLabs, an ElevenLabs voice id (20 letters and digits);
`Language` a BCP-47 code. Both are optional: without them a note uses CINDY_SPEECH_VOICE and the
provider detects the language. The original ignores the heading as unknown; Cindy reads it, and
like every optional value a bad line is ignored with a warning naming the file, the line and the fix.
"""

from __future__ import annotations

import re

VOICE_HEADING = "Voice"
VOICE_KEYS = {"Voice": "voice_name", "Language": "voice_language"}
VOICE_EXAMPLE = "Voice: Kore and Language: en-GB"
#: Gemini's prebuilt speech voices.
GEMINI_VOICES = frozenset(
    "Zephyr Puck Charon Kore Fenrir Leda Orus Aoede Callirrhoe Autonoe Enceladus Iapetus Umbriel Algieba "
    "Despina Erinome Algenib Rasalgethi Laomedeia Achernar Alnilam Schedar Gacrux Pulcherrima Achird "
    "Zubenelgenubi Vindemiatrix Sadachbia Sadaltager Sulafat".split()
)
_ELEVENLABS_VOICE_ID = re.compile(r"^[A-Za-z0-9]{20}$")
_LANGUAGE = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}$")


def set_voice(persona, body: str, source: str) -> None:
    """Read the `Key: value` lines of `# Voice` onto `persona`; a bad line is warned about and ignored."""
    for line in (line.strip() for line in body.split("\n")):
        if not line:
            continue
        key, sep, raw = line.partition(":")
        key, value = " ".join(key.split()), raw.strip()
        where = f'{source}: "{VOICE_HEADING}" line "{line[:60]}"'
        if not sep or key not in VOICE_KEYS:
            persona.warnings.append(f"{where} is not a known setting; ignored: write {VOICE_EXAMPLE}")
            continue
        if key == "Voice":
            match = next((name for name in GEMINI_VOICES if name.lower() == value.lower()), None)
            if match is None and _ELEVENLABS_VOICE_ID.match(value):
                match = value
            if match is None:
                persona.warnings.append(
                    f'{where}: "{value}" is not one of Gemini\'s voices nor an ElevenLabs voice id; '
                    f"ignored, the notes use CINDY_SPEECH_VOICE: write one of "
                    f"{', '.join(sorted(GEMINI_VOICES)[:6])}, ... or a 20-character ElevenLabs voice id"
                )
                continue
            persona.voice_name = match
        else:
            if not _LANGUAGE.match(value):
                persona.warnings.append(
                    f'{where}: "{value}" is not a BCP-47 language code; ignored: write e.g. en-GB or de-DE'
                )
                continue
            persona.voice_language = value


def voice_text(persona) -> str:
    """The `# Voice` section's body for these values ("" when neither is set)."""
    lines = []
    for key, attr in VOICE_KEYS.items():
        value = getattr(persona, attr, "") or ""
        if value:
            lines.append(f"{key}: {value}")
    return "\n".join(lines)
