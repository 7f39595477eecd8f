"""Meaning as well as words: a vector per recall entry, from the WordLlama embeddings.

WordLlama (https://github.com/dleemiller/WordLlama) is a table of token embeddings taken from a large
language model's input layer and trained to pool into sentence vectors: a text's vector is the mean
of its tokens' rows, so embedding a message costs a tokenisation and a sum (about 0.04 ms), with no
network and no server. Its weights (256 dimensions, about 32 MB in memory) ship in the package's
wheel and are loaded from the installed package's folder with downloads disabled: recall never
reaches the network.

Vectors are unit length and stored as 256 little-endian float16 values (512 bytes) in
`RecallEntry.vector`; their dot product is the cosine similarity.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from django.conf import settings

#: Dimensions of a stored vector (the model's full size).
DIM = 256
#: How a vector is stored: little-endian float16.
STORED_DTYPE = np.dtype("<f2")
_LOCK = threading.Lock()


class EmbeddingUnavailable(RuntimeError):
    """The embedding model cannot be loaded; the message says why and what to do."""


def vectors_enabled() -> bool:
    """Whether entries get vectors and searches use them (CINDY_RECALL_VECTORS)."""
    return bool(getattr(settings, "CINDY_RECALL_VECTORS", True))


@functools.cache
def _model():
    with _LOCK:
        try:
            import wordllama
            from wordllama import WordLlama
        except ImportError as error:
            raise EmbeddingUnavailable(
                "recall vectors need the wordllama package (requirements.txt): install it, "
                "or set CINDY_RECALL_VECTORS=0 to search by words only"
            ) from error
        folder = Path(wordllama.__file__).resolve().parent
        try:
            return WordLlama.load(config="l2_supercat", dim=DIM, cache_dir=folder, disable_download=True)
        except FileNotFoundError as error:
            raise EmbeddingUnavailable(
                f"the WordLlama weights are not in {folder} ({error}): reinstall wordllama from its "
                "wheel, or set CINDY_RECALL_VECTORS=0 to search by words only"
            ) from error


def embed(texts: Sequence[str]) -> np.ndarray:
    """Unit vectors (float32, one row per text); a text without known tokens gets zeros."""
    if not texts:
        return np.zeros((0, DIM), dtype=np.float32)
    vectors = _model().embed(list(texts), norm=False)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


def to_blob(vector: np.ndarray) -> bytes:
    return vector.astype(STORED_DTYPE).tobytes()


def from_blobs(blobs: Sequence[bytes | memoryview]) -> np.ndarray:
    """The stored vectors as one float32 matrix (one row per blob)."""
    if not blobs:
        return np.zeros((0, DIM), dtype=np.float32)
    joined = b"".join(blobs)
    return np.frombuffer(joined, dtype=STORED_DTYPE).reshape(len(blobs), DIM).astype(np.float32)
