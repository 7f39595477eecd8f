"""Speech as a Telegram voice note: OGG/Opus at 48 kHz mono, its waveform and its duration.

The speech providers answer raw 16-bit PCM (Gemini: 24 kHz mono). Telegram shows a voice note with a
waveform drawn from the message's `DocumentAttributeAudio(voice=True, waveform=...)`: 100 samples of
5 bits each (0-31), packed little-endian bit by bit into 63 bytes. PyAV (FFmpeg in its wheel) resamples
and encodes; nothing is downloaded and no system FFmpeg is needed. PyAV (about 30 MB) is imported
on the first note, so a task worker that never speaks does not load it.
"""

from __future__ import annotations

import array
import io
from dataclasses import dataclass
from fractions import Fraction

#: Telegram's voice-note format: Opus in OGG, 48 kHz, one channel.
VOICE_SAMPLE_RATE = 48_000
VOICE_MIME = "audio/ogg"
VOICE_BITRATE = 32_000
#: Telegram's waveform: this many samples of WAVEFORM_BITS bits each.
WAVEFORM_SAMPLES = 100
WAVEFORM_BITS = 5


class VoiceEncodingError(ValueError):
    """The audio cannot be made into a voice note (empty, or not the PCM it claims to be)."""


@dataclass(frozen=True)
class VoiceNoteAudio:
    data: bytes  # the OGG/Opus file
    duration: float  # seconds
    waveform: bytes  # Telegram's packed 5-bit waveform


def pcm_samples(pcm: bytes) -> array.array:
    """Signed 16-bit little-endian samples of a mono PCM buffer."""
    if len(pcm) % 2:
        pcm = pcm[:-1]
    samples = array.array("h")
    samples.frombytes(pcm)
    if samples.itemsize != 2:  # pragma: no cover - every supported platform has 16-bit shorts
        raise VoiceEncodingError("this platform has no 16-bit array type")
    return samples


def waveform_levels(samples: array.array, count: int = WAVEFORM_SAMPLES) -> list[int]:
    """`count` loudness levels (0-31): the peak of each slice of the audio, scaled to the loudest."""
    if not samples:
        return [0] * count
    peaks = []
    for index in range(count):
        start = index * len(samples) // count
        end = max(start + 1, (index + 1) * len(samples) // count)
        chunk = samples[start:end]
        peaks.append(max(abs(min(chunk)), abs(max(chunk))) if chunk else 0)
    loudest = max(peaks) or 1
    top = (1 << WAVEFORM_BITS) - 1
    return [min(top, round(peak * top / loudest)) for peak in peaks]


def pack_waveform(levels: list[int]) -> bytes:
    """Telegram's packing: each level's 5 bits, least significant first, one after the other."""
    bits = 0
    for index, level in enumerate(levels):
        bits |= (level & ((1 << WAVEFORM_BITS) - 1)) << (index * WAVEFORM_BITS)
    return bits.to_bytes((len(levels) * WAVEFORM_BITS + 7) // 8, "little")


def unpack_waveform(data: bytes, count: int = WAVEFORM_SAMPLES) -> list[int]:
    bits = int.from_bytes(data, "little")
    return [(bits >> (index * WAVEFORM_BITS)) & ((1 << WAVEFORM_BITS) - 1) for index in range(count)]


def encode_voice_note(pcm: bytes, *, sample_rate: int) -> VoiceNoteAudio:
    """OGG/Opus (48 kHz mono) of 16-bit mono PCM at `sample_rate`, with its waveform and duration.

    Steps: read the samples, draw the waveform from them, resample to 48 kHz and encode with libopus
    in an OGG container, then read the duration back from the file (what a player shows).
    """
    import av

    samples = pcm_samples(pcm)
    if not samples:
        raise VoiceEncodingError("the speech provider returned no audio")
    out = io.BytesIO()
    with av.open(out, mode="w", format="ogg") as container:
        stream = container.add_stream("libopus", rate=VOICE_SAMPLE_RATE, layout="mono")
        stream.bit_rate = VOICE_BITRATE
        resampler = av.AudioResampler(format="s16", layout="mono", rate=VOICE_SAMPLE_RATE)
        frame = av.AudioFrame(format="s16", layout="mono", samples=len(samples))
        frame.planes[0].update(samples.tobytes())
        frame.sample_rate = sample_rate
        frame.time_base = Fraction(1, sample_rate)
        frame.pts = 0
        for resampled in [*resampler.resample(frame), *resampler.resample(None)]:
            for packet in stream.encode(resampled):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    data = out.getvalue()
    return VoiceNoteAudio(
        data=data, duration=voice_duration(data), waveform=pack_waveform(waveform_levels(samples))
    )


@dataclass(frozen=True)
class DecodedVoice:
    codec: str
    sample_rate: int
    channels: int
    duration: float


def decode_voice_note(data: bytes) -> DecodedVoice:
    """Decode a voice note whole: its codec, rate, channels and the duration of the decoded audio."""
    import av

    with av.open(io.BytesIO(data), mode="r") as container:
        stream = container.streams.audio[0]
        decoded = 0
        rate = stream.codec_context.sample_rate
        for frame in container.decode(stream):
            decoded += frame.samples
            rate = frame.sample_rate
        return DecodedVoice(
            codec=stream.codec_context.name,
            sample_rate=rate,
            channels=stream.codec_context.channels,
            duration=decoded / rate if rate else 0.0,
        )


def voice_duration(data: bytes) -> float:
    """Seconds of audio in an OGG/Opus file (decoded, so encoder padding does not count twice)."""
    return round(decode_voice_note(data).duration, 2)
