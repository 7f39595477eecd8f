"""Meaning as well as words: a vector per recall entry, from the WordLlama embeddings.

WordLlama (https://github.com/dleemiller/WordLlama) is a table of token embeddings taken from a large
language model's input layer and trained so that their mean is a sentence vector: a text's vector is
the mean of its tokens' rows, so embedding a message costs a tokenisation and a sum (about 0.05 ms),
with no network and no server. The table (the `l2_supercat` model: 32,000 tokens by 256 float16
values) and its tokenizer ship in the `wordllama` wheel. Recall reads them from the installed
package's folder, without importing the package and never reaching the network, the way the
package's own `WordLlama.load(cache_dir=..., disable_download=True)` does, except that the table is
memory-mapped as stored (float16) rather than copied into float32: a process pays for the rows its
texts touch (pages shared between processes, about 16 MB at most) instead of a private 32 MB copy.
`recall/tests/test_vectors.py` holds the vectors equal to the package's own.

Vectors are unit length and stored as 256 little-endian float16 values (512 bytes) in
`RecallEntry.vector`; their dot product is the cosine similarity.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings

if TYPE_CHECKING:
    import numpy as np

#: Dimensions of a vector (the model's full size). A stored vector is DIM * 2 bytes, which MariaDB's
#: column holds at most 512 of (migration 0011): a larger model needs that column and index made again.
DIM = 256
#: How a vector is stored: little-endian float16. numpy and the tokenizer are imported on first use
#: (about 25 MB of a process's memory), so a process that never indexes nor searches pays nothing.
STORED_DTYPE = "<f2"
WEIGHTS = Path("weights") / f"l2_supercat_{DIM}.safetensors"
TOKENIZER = Path("tokenizers") / "l2_supercat_tokenizer_config.json"
_TENSOR = "embedding.weight"
_LOCK = threading.Lock()


class EmbeddingUnavailable(RuntimeError):
    """The embedding model cannot be loaded; the message says why and what to do."""


def vectors_enabled() -> bool:
    """Whether entries get vectors and searches use them (CINDY_RECALL_VECTORS)."""
    return bool(getattr(settings, "CINDY_RECALL_VECTORS", True))


@dataclass(frozen=True)
class Model:
    table: np.ndarray  # (tokens, DIM) float16, memory-mapped
    tokenizer: object  # tokenizers.Tokenizer


def package_folder() -> Path:
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingUnavailable(
            "recall vectors need the wordllama package (requirements.txt): install it, "
            "or set CINDY_RECALL_VECTORS=0 to search by words only"
        )
    return Path(next(iter(spec.submodule_search_locations)))


@functools.cache
def model() -> Model:
    with _LOCK:
        import numpy as np
        from tokenizers import Tokenizer

        folder = package_folder()
        weights, tokenizer = folder / WEIGHTS, folder / TOKENIZER
        try:
            with weights.open("rb") as file:
                size = int.from_bytes(file.read(8), "little")
                header = json.loads(file.read(size))
            tensor = header[_TENSOR]
            if tensor["dtype"] != "F16" or tensor["shape"][1] != DIM:
                raise ValueError(f"{_TENSOR} is {tensor['dtype']} {tensor['shape']}, not F16 (*, {DIM})")
            start = 8 + size + tensor["data_offsets"][0]
            table = np.memmap(
                weights, dtype=STORED_DTYPE, mode="r", offset=start, shape=tuple(tensor["shape"])
            )
            return Model(table=table, tokenizer=Tokenizer.from_file(str(tokenizer)))
        except (OSError, ValueError, KeyError) as error:
            raise EmbeddingUnavailable(
                f"the WordLlama model in {folder} cannot be read ({error}): reinstall wordllama "
                "(requirements.txt) from its wheel, or set CINDY_RECALL_VECTORS=0 to search by words only"
            ) from error


def embed(texts: Sequence[str]) -> np.ndarray:
    """Unit vectors (float32, one row per text); a text without tokens gets zeros."""
    import numpy as np

    vectors = np.zeros((len(texts), DIM), dtype=np.float32)
    if not texts:
        return vectors
    loaded = model()
    last = loaded.table.shape[0] - 1
    for row, encoding in enumerate(loaded.tokenizer.encode_batch(list(texts), add_special_tokens=False)):
        ids = np.clip(np.asarray(encoding.ids, dtype=np.int64), 0, last)
        if len(ids):
            vectors[row] = loaded.table[ids].sum(axis=0, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


def to_blob(vector: np.ndarray) -> bytes:
    return vector.astype(STORED_DTYPE).tobytes()


def from_blobs(blobs: Sequence[bytes | memoryview]) -> np.ndarray:
    """The stored vectors as one float32 matrix (one row per blob)."""
    import numpy as np

    if not blobs:
        return np.zeros((0, DIM), dtype=np.float32)
    return np.frombuffer(b"".join(blobs), dtype=STORED_DTYPE).reshape(len(blobs), DIM).astype(np.float32)
