"""Any media file sent to a sandbox agent as a person would (`manage.py sandbox file`, the API's
`POST /agents/{id}/sandbox/files`): a photo, a sticker, an animated sticker, a video or a document.

The kind defaults from the file's first bytes, never its name. An explicit kind wins over the bytes,
so an operator can send a mislabelled file (a PNG "sticker", a JPEG "animated sticker") and see
the downstream checks meet it: the part then says what Telegram would say of a file sent that way
(a sticker is `image/webp`, an animated sticker `application/x-tgsticker`), whatever it holds.

A file's size is checked before it is read (`CINDY_SANDBOX_MAX_FILE_BYTES`); the stored copy is
MEDIA_ROOT/sandbox/<unique id><ext>, the unique id the content hash with a prefix per kind, so the
same bytes sent twice the same way are one catalog entry, as Telegram's file unique ids are.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zlib
from pathlib import Path
from typing import IO, Any

from django.conf import settings

from agents.models import Agent
from media_catalog.audio import media_duration
from sandbox.forms import sniff_image
from sandbox.models import SandboxMessage
from sandbox.services.chats import SandboxError, sandbox_say

#: The kinds `sandbox file --kind` takes, as operators type them.
FILE_KINDS = ("photo", "sticker", "animated-sticker", "video", "document")
#: The setting that bounds a sandbox file (and a voice note).
LIMIT_SETTING = "CINDY_SANDBOX_MAX_FILE_BYTES"
_DIR = "sandbox"
_PREFIX = {"photo": "sbx", "sticker": "sbs", "animated-sticker": "sba", "video": "sbm", "document": "sbd"}
_VIDEO_SIGNATURES = ((b"\x1a\x45\xdf\xa3", 0, "video/webm", ".webm"), (b"ftyp", 4, "video/mp4", ".mp4"))
_OTHER_SIGNATURES = (
    (b"%PDF-", 0, "application/pdf", ".pdf"),
    (b"OggS", 0, "audio/ogg", ".ogg"),
    (b"PK\x03\x04", 0, "application/zip", ".zip"),
)


def max_file_bytes() -> int:
    return int(settings.CINDY_SANDBOX_MAX_FILE_BYTES)


def check_file_size(path: Path, *, what: str = "file") -> int:
    """The file's size by `stat`, before anything reads it: refused when missing or past the limit."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise SandboxError(f"cannot read the {what} {path}: {exc.strerror or exc}") from exc
    if not path.is_file():
        raise SandboxError(f"the {what} {path} is not a regular file: give a file to send")
    limit = max_file_bytes()
    if size > limit:
        raise SandboxError(
            f"the {what} {path} is {size:,} bytes; the sandbox takes at most {limit:,} "
            f"({LIMIT_SETTING}): send a smaller file or raise the setting"
        )
    if size == 0:
        raise SandboxError(f"the {what} {path} is empty (0 bytes): send a file with something in it")
    return size


def _lottie_inside(head: bytes) -> bool:
    """A gzip whose first unpacked bytes open a JSON object: a TGS file (Lottie JSON, gzipped).
    At most 64 unpacked bytes are made, so a gzip bomb costs nothing here."""
    try:
        unpacked = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 64)
    except zlib.error:
        return False
    return unpacked.lstrip()[:1] == b"{"


def sniff_file(head: bytes) -> tuple[str, str, str]:
    """(kind, mime, extension) of a file from its first bytes (give at least 64)."""
    image = sniff_image(head)
    if image is not None:
        mime, ext = image
        if mime == "image/webp":
            return "sticker", mime, ext
        if mime == "image/gif":
            return "document", mime, ext
        return "photo", mime, ext
    if head[:2] == b"\x1f\x8b":
        if _lottie_inside(head):
            return "animated-sticker", "application/x-tgsticker", ".tgs"
        return "document", "application/gzip", ".gz"
    for signature, offset, mime, ext in (*_VIDEO_SIGNATURES, *_OTHER_SIGNATURES):
        if head[offset : offset + len(signature)] == signature:
            return ("video" if mime.startswith("video/") else "document"), mime, ext
    return "document", "application/octet-stream", ".bin"


#: What Telegram states of a file sent as each kind when its bytes say otherwise.
_CLAIMED = {
    "photo": ("image/jpeg", ".jpg"),
    "sticker": ("image/webp", ".webp"),
    "animated-sticker": ("application/x-tgsticker", ".tgs"),
    "video": ("video/mp4", ".mp4"),
}
#: A photo sent from a file of another image type keeps it (a GIF as a photo), a video likewise.
_TOP_TYPE = {"photo": "image", "video": "video"}


def file_part(source: IO[bytes], *, name: str, size: int, kind: str | None = None) -> dict[str, Any]:
    """Store the file read from `source` (already checked for size) and return its media part.

    Steps: sniff the head; take `kind` or the sniffed one; hash and copy the file in chunks to a
    temporary file beside the store; rename it to its content-addressed name (or drop it when that
    is there already); read a video's duration."""
    if kind is not None and kind not in FILE_KINDS:
        raise SandboxError(f"--kind {kind}: use one of {', '.join(FILE_KINDS)}")
    head = source.read(64)
    sniffed_kind, mime, ext = sniff_file(head)
    kind = kind or sniffed_kind
    if kind != sniffed_kind and kind in _CLAIMED and mime.split("/")[0] != _TOP_TYPE.get(kind):
        mime, ext = _CLAIMED[kind]
    folder = Path(settings.MEDIA_ROOT) / _DIR
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(head)
    with tempfile.NamedTemporaryFile(dir=folder, prefix=".incoming-", delete=False) as out:
        partial = Path(out.name)
        out.write(head)
        while chunk := source.read(1024 * 1024):
            digest.update(chunk)
            out.write(chunk)
    unique_id = f"{_PREFIX[kind]}{digest.hexdigest()[:29]}"
    relative = f"{_DIR}/{unique_id}{ext}"
    target = Path(settings.MEDIA_ROOT) / relative
    if target.exists():
        partial.unlink()
    else:
        os.replace(partial, target)
    return _part(kind, mime=mime, unique_id=unique_id, relative=relative, target=target, name=name, size=size)


def _part(
    kind: str, *, mime: str, unique_id: str, relative: str, target: Path, name: str, size: int
) -> dict[str, Any]:
    part: dict[str, Any] = {
        "kind": "media",
        "media_kind": "sticker" if kind == "animated-sticker" else kind,
        "unique_id": unique_id,
        "mime": mime,
        "file": relative,
        "path": str(target),
        "size": size,
    }
    if kind in ("sticker", "animated-sticker"):
        part["sticker_format"] = "animated" if kind == "animated-sticker" else "static"
    elif kind == "video":
        duration = media_duration(target)
        part["duration"] = round(duration, 2) if duration is not None else 0.0
        part["file_name"] = Path(name).name[:200]
    elif kind == "document":
        part["file_name"] = Path(name).name[:200]
    return part


def sandbox_file(
    *,
    agent: Agent,
    path: Path | str,
    kind: str | None = None,
    as_name: str = "You",
    group: str | None = None,
    reply_to: int | None = None,
    caption: str = "",
) -> SandboxMessage:
    """A person sends the file at `path` to the agent as `kind` (default: what its bytes are)."""
    path = Path(path)
    size = check_file_size(path)
    try:
        with path.open("rb") as source:
            part = file_part(source, name=path.name, size=size, kind=kind)
    except OSError as exc:
        raise SandboxError(f"cannot read the file {path}: {exc.strerror or exc}") from exc
    return sandbox_say(
        agent=agent, text=caption, as_name=as_name, group=group, reply_to=reply_to, media=[part]
    )
