"""Forms of the sandbox chat, used by the dashboard's sandbox page and the REST API alike. Each error
names the field, the value and what to do instead."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django import forms
from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from agents.models import Agent, Transport
from sandbox.selectors import agent_stickers

#: Photos larger than this are refused before they are stored.
MAX_PHOTO_BYTES = 5 * 1024 * 1024
#: Where uploaded sandbox photos go, under MEDIA_ROOT.
PHOTO_DIR = "sandbox"

# Image formats recognised by their first bytes; the browser's content type is not trusted.
_SIGNATURES: tuple[tuple[bytes, int, str, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, "image/png", ".png"),
    (b"\xff\xd8\xff", 0, "image/jpeg", ".jpg"),
    (b"GIF87a", 0, "image/gif", ".gif"),
    (b"GIF89a", 0, "image/gif", ".gif"),
    (b"WEBP", 8, "image/webp", ".webp"),
)


def sniff_image(head: bytes) -> tuple[str, str] | None:
    """(mime, extension) of a PNG, JPEG, GIF or WebP file from its first bytes, else None."""
    for signature, offset, mime, ext in _SIGNATURES:
        if head[offset : offset + len(signature)] == signature:
            if mime == "image/webp" and head[:4] != b"RIFF":
                continue
            return mime, ext
    return None


class AgentField(forms.ModelChoiceField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            queryset=Agent.objects.filter(transport=Transport.SANDBOX).order_by("name"),
            error_messages={
                "required": "Pick a sandbox agent.",
                "invalid_choice": "There is no sandbox agent with id %(value)s: pick one from the list.",
            },
            **kwargs,
        )


class ChatForm(forms.Form):
    """Which chat the page shows: an agent, who you are, and a group title (empty for a DM)."""

    agent = AgentField(empty_label="Choose an agent…")
    as_name = forms.CharField(
        label="Your display name",
        max_length=64,
        initial="You",
        error_messages={"required": "Your display name is empty: type the name the agent should see."},
    )
    group = forms.CharField(label="Group title (empty for a direct message)", max_length=255, required=False)
    topic = forms.CharField(
        label="Topic (a forum group's; empty for General)", max_length=128, required=False
    )

    def clean_as_name(self) -> str:
        name = self.cleaned_data["as_name"].strip()
        if not name:
            raise forms.ValidationError("Your display name is empty: type the name the agent should see.")
        agent = self.cleaned_data.get("agent")
        if agent is not None and name == agent.name:
            raise forms.ValidationError(f'"{name}" is the agent\'s own name: choose another display name.')
        return name

    def clean_group(self) -> str:
        return self.cleaned_data["group"].strip()

    def clean_topic(self) -> str:
        topic = self.cleaned_data["topic"].strip()
        if topic and not self.cleaned_data.get("group"):
            raise forms.ValidationError(
                f"Topic {topic!r} needs a group: topics live in groups; type the group's title too."
            )
        return topic


class TypingForm(ChatForm):
    """The person typing in the sandbox page (`typing` false: they stopped), in a direct message."""

    typing = forms.BooleanField(required=False)

    def clean_group(self) -> str:
        group = super().clean_group()
        if group:
            raise forms.ValidationError(
                "Typing is signalled in direct messages only (agents ignore typing in groups, as on Telegram)."
            )
        return group


@dataclass
class StoredPhoto:
    part: dict[str, Any]


class SendForm(ChatForm):
    """One message: text, a sticker of the agent's sets, a photo, or a mix, optionally as a reply."""

    text = forms.CharField(max_length=4096, required=False, strip=False)
    reply_to = forms.IntegerField(min_value=1, required=False)
    sticker = forms.CharField(max_length=300, required=False)
    photo = forms.FileField(required=False)

    def clean_text(self) -> str:
        return self.cleaned_data["text"].strip()

    def clean_sticker(self) -> dict[str, Any] | None:
        value = self.cleaned_data["sticker"].strip()
        if not value:
            return None
        agent = self.cleaned_data.get("agent")
        if agent is None:
            return None
        for sticker in agent_stickers(agent=agent):
            if sticker["value"] == value:
                return sticker
        raise forms.ValidationError(
            f'Sticker "{value}" is not in {agent.name}\'s sticker sets: pick one from the list.'
        )

    def clean_photo(self) -> UploadedFile | None:
        photo: UploadedFile | None = self.cleaned_data.get("photo")
        if photo is None:
            return None
        if photo.size > MAX_PHOTO_BYTES:
            raise forms.ValidationError(
                f'"{photo.name}" is {photo.size / 1048576:.1f} MB: photos may be at most '
                f"{MAX_PHOTO_BYTES // 1048576} MB."
            )
        photo.seek(0)
        head = photo.read(16)
        photo.seek(0)
        if sniff_image(head) is None:
            raise forms.ValidationError(
                f'"{photo.name}" is not an image: upload a PNG, JPEG, GIF or WebP file.'
            )
        return photo

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if not self.errors and not (data.get("text") or data.get("sticker") or data.get("photo")):
            raise forms.ValidationError("The message is empty: type some text, or pick a sticker or a photo.")
        return data

    def media_parts(self) -> list[dict[str, Any]]:
        """The media parts of the message; stores an uploaded photo under MEDIA_ROOT first."""
        parts: list[dict[str, Any]] = []
        sticker = self.cleaned_data.get("sticker")
        if sticker:
            parts.append(
                {
                    "kind": "media",
                    "media_kind": "sticker",
                    "sticker_set_name": sticker["set"],
                    "sticker_set_title": sticker["set_title"],
                    "sticker_name": sticker["name"],
                    "sticker_format": sticker["format"],
                    "unique_id": sticker["unique_id"],
                }
            )
        photo = self.cleaned_data.get("photo")
        if photo:
            parts.append(store_photo(photo))
        return parts


def store_photo(photo: UploadedFile) -> dict[str, Any]:
    """Save the upload as MEDIA_ROOT/sandbox/<unique id><ext>; the unique id is the content hash,
    so the same picture sent twice is one catalog entry, as with Telegram's file unique ids."""
    digest = hashlib.sha256()
    photo.seek(0)
    for chunk in photo.chunks():
        digest.update(chunk)
    photo.seek(0)
    mime, ext = sniff_image(photo.read(16)) or ("application/octet-stream", "")
    photo.seek(0)
    unique_id = f"sbx{digest.hexdigest()[:29]}"
    relative = f"{PHOTO_DIR}/{unique_id}{ext}"
    target = Path(settings.MEDIA_ROOT) / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists():
        with target.open("wb") as out:
            for chunk in photo.chunks():
                out.write(chunk)
    return {
        "kind": "media",
        "media_kind": "photo",
        "unique_id": unique_id,
        "mime": mime,
        "file": relative,
        "path": str(target),
        "file_name": Path(photo.name or "photo").name[:200],
        "size": photo.size,
    }


class ReactForm(ChatForm):
    message_id = forms.IntegerField(
        min_value=1, error_messages={"required": "Which message? message_id is missing."}
    )
    emoji = forms.CharField(max_length=16, required=False, strip=True)
