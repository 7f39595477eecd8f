"""Encoding speech as a Telegram voice note: Opus at 48 kHz mono, the packed waveform, the duration."""

from __future__ import annotations

import array
import math
import struct

import pytest

from conversations.voice_encoding import (
    VoiceEncodingError,
    decode_voice_note,
    encode_voice_note,
    pack_waveform,
    unpack_waveform,
    waveform_levels,
)


def tone(seconds: float, rate: int) -> bytes:
    count = round(seconds * rate)
    return struct.pack(
        f"<{count}h", *(int(8000 * math.sin(2 * math.pi * 330 * i / rate)) for i in range(count))
    )


@pytest.mark.parametrize(("seconds", "rate"), [(3.2, 24_000), (0.4, 16_000), (1.0, 48_000)])
def test_pcm_becomes_opus_at_48_khz_mono_of_the_same_length(seconds, rate):
    note = encode_voice_note(tone(seconds, rate), sample_rate=rate)
    decoded = decode_voice_note(note.data)
    assert note.data.startswith(b"OggS")
    assert (decoded.codec, decoded.sample_rate, decoded.channels) == ("opus", 48_000, 1)
    assert decoded.duration == pytest.approx(seconds, abs=0.01) and note.duration == pytest.approx(
        seconds, abs=0.01
    )


def test_the_waveform_is_100_five_bit_levels_packed_in_63_bytes():
    levels = [i % 32 for i in range(100)]
    packed = pack_waveform(levels)
    assert len(packed) == 63 and unpack_waveform(packed) == levels
    # Telegram's order: the first level in the lowest 5 bits of the first byte.
    assert pack_waveform([31] + [0] * 99)[0] == 0b11111 and pack_waveform([0, 1] + [0] * 98)[0] == 0b100000


def test_the_waveform_follows_the_loudness_of_the_speech():
    rate = 24_000
    quiet_then_loud = tone(1.0, rate) + struct.pack(f"<{rate}h", *([20000, -20000] * (rate // 2)))
    levels = unpack_waveform(encode_voice_note(quiet_then_loud, sample_rate=rate).waveform)
    assert max(levels[:45]) < 15 and min(levels[55:]) == 31
    assert waveform_levels(array.array("h", [0] * 1000)) == [0] * 100  # silence draws a flat line


def test_no_audio_is_an_error_that_says_so():
    with pytest.raises(VoiceEncodingError, match="returned no audio"):
        encode_voice_note(b"", sample_rate=24_000)
