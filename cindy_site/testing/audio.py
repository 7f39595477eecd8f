"""Audio and video made for tests with PyAV: a voice note (Opus in Ogg, 48 kHz mono) of a tone, and a
short round video (a video note: H.264 and AAC in MP4). Nothing is downloaded; the bytes are made here."""

from __future__ import annotations

import io
import math
from array import array
from fractions import Fraction

import av

SAMPLE_RATE = 48_000


def _tone(seconds: float, frequency: float, rate: int) -> array:
    count = max(1, int(seconds * rate))
    return array("h", (int(8000 * math.sin(2 * math.pi * frequency * i / rate)) for i in range(count)))


def _audio_frames(samples: array, rate: int, frame_size: int, layout: str = "mono"):
    for start in range(0, len(samples), frame_size):
        chunk = samples[start : start + frame_size]
        frame = av.AudioFrame(format="s16", layout=layout, samples=len(chunk))
        frame.planes[0].update(chunk.tobytes())
        frame.sample_rate = rate
        frame.pts = start
        frame.time_base = Fraction(1, rate)
        yield frame


def voice_note(seconds: float, *, frequency: float = 440.0) -> bytes:
    """An OGG/Opus voice note of a sine tone, `seconds` long, as Telegram's clients record them."""
    out = io.BytesIO()
    with av.open(out, mode="w", format="ogg") as container:
        stream = container.add_stream("libopus", rate=SAMPLE_RATE)
        stream.layout = "mono"
        stream.bit_rate = 16_000
        for frame in _audio_frames(_tone(seconds, frequency, SAMPLE_RATE), SAMPLE_RATE, 960):
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return out.getvalue()


def video_note(seconds: float = 1.0, *, size: int = 64, frequency: float = 330.0) -> bytes:
    """A small square MP4 (H.264 video, AAC audio) of a grey frame and a tone: a round video note."""
    out = io.BytesIO()
    with av.open(out, mode="w", format="mp4") as container:
        video = container.add_stream("libx264", rate=10)
        video.width = video.height = size
        video.pix_fmt = "yuv420p"
        audio = container.add_stream("aac", rate=SAMPLE_RATE)
        audio.layout = "mono"
        for index in range(max(1, int(seconds * 10))):
            frame = av.VideoFrame(size, size, "yuv420p")
            for plane in frame.planes:
                plane.update(bytes([128]) * plane.buffer_size)
            frame.pts = index
            for packet in video.encode(frame):
                container.mux(packet)
        for packet in video.encode(None):
            container.mux(packet)
        samples = _tone(seconds, frequency, SAMPLE_RATE)
        for frame in _audio_frames(samples, SAMPLE_RATE, 1024):
            for packet in audio.encode(frame):
                container.mux(packet)
        for packet in audio.encode(None):
            container.mux(packet)
    return out.getvalue()
