"""What an import may read: regular files inside their config directory, each under its kind's cap.

Every file an import reads passes `import_file_check` first, which looks only at the file's metadata
(`lstat`): a symbolic link, a file under a linked directory (anything whose real path is not the path
the import walked to), or anything but a regular file is refused, and so is a file bigger than its
kind's cap (`CINDY_IMPORT_MAX_*_BYTES`). `read_capped` then reads at most the cap and one byte more,
so a file that grows after the check is refused as well, never read whole.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from django.conf import settings

#: Each kind of file: (the setting that caps it, what it is called in messages).
CAPS = {
    "persona": ("CINDY_IMPORT_MAX_PERSONA_BYTES", "a persona file"),
    "prompt": ("CINDY_IMPORT_MAX_PROMPT_BYTES", "a role prompt"),
    "document": ("CINDY_IMPORT_MAX_DOCUMENT_BYTES", "a document"),
    "memory": ("CINDY_IMPORT_MAX_MEMORY_BYTES", "a memory file"),
    "media_json": ("CINDY_IMPORT_MAX_MEDIA_JSON_BYTES", "a media description"),
    "media_file": ("CINDY_IMPORT_MAX_MEDIA_FILE_BYTES", "a media file"),
}


class ImportLimitError(ValueError):
    """A file an import refuses to read; the message names the file, the reason and the fix."""


def _cap(kind: str) -> tuple[int, str, str]:
    setting, what = CAPS[kind]
    return int(getattr(settings, setting)), setting, what


def import_file_check(path: Path, display: str, kind: str) -> int:
    """Refuse a link, a file outside its directory, a special file or one above its cap; return its
    size. Reads nothing."""
    try:
        info = path.lstat()
    except OSError as exc:
        raise ImportLimitError(f"{display}: cannot be read ({exc.strerror}): check the file") from exc
    if stat.S_ISLNK(info.st_mode):
        target = os.readlink(path)
        raise ImportLimitError(
            f"{display}: a symbolic link (to {target}): an import reads only regular files inside the "
            "config directory: copy the file in instead of linking it"
        )
    real = path.resolve()
    if real != path.absolute():
        raise ImportLimitError(
            f"{display}: lies under a symbolic link and resolves to {real}, outside the config directory: "
            "copy the files in instead of linking a folder"
        )
    if not stat.S_ISREG(info.st_mode):
        raise ImportLimitError(f"{display}: not a regular file: an import reads only regular files")
    cap, setting, what = _cap(kind)
    if info.st_size > cap:
        raise ImportLimitError(
            f"{display}: {info.st_size:,} bytes, more than the {cap:,} bytes {what} may have ({setting}): "
            "make the file smaller, or raise the cap"
        )
    return info.st_size


def read_capped(path: Path, display: str, kind: str) -> bytes:
    """The file's bytes, after `import_file_check`; never more than its cap is read."""
    import_file_check(path, display, kind)
    cap, setting, what = _cap(kind)
    with path.open("rb") as handle:
        raw = handle.read(cap + 1)
    if len(raw) > cap:
        raise ImportLimitError(
            f"{display}: grew beyond the {cap:,} bytes {what} may have ({setting}) while it was read: "
            "import again once it is written"
        )
    return raw
