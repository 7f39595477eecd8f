"""The sandbox account's media: its Saved Messages library, downloads, and sticker sets."""

from __future__ import annotations

import shutil
from pathlib import Path

from asgiref.sync import sync_to_async

from conversations.transport.base import LibraryRef, LibrarySave, PermanentError, StickerRef, StickerSetInfo
from sandbox.models import SandboxMessage
from sandbox.services import chats as sandbox_services


class SandboxMedia:
    """Mixed into `SandboxTransport`: `saved_media`, `save_to_library`, `download_media` and
    `resolve_sticker_set`."""

    async def saved_media(self, *, limit: int = 200) -> list[LibraryRef]:
        """The stickers the account keeps in its Saved Messages (its DM with itself, see
        `sandbox_save`); the rest of the sandbox library is the admin's uploads (LibraryItem)."""
        return await sync_to_async(self._saved_media)(limit)

    def _saved_media(self, limit: int) -> list[LibraryRef]:
        me = self._require_me()
        chat = sandbox_services.sandbox_saved_chat(user=me)
        if chat is None:
            return []
        items = []
        for message in SandboxMessage.objects.filter(chat=chat, deleted=False).order_by("-message_id")[
            :limit
        ]:
            for part in message.media or []:
                if part.get("media_kind") == "sticker" and part.get("unique_id"):
                    items.append(
                        LibraryRef(
                            str(part["unique_id"]),
                            "sticker",
                            saved_message_id=message.message_id,
                            mime=str(part.get("mime") or ""),
                            sticker_set_name=str(part.get("sticker_set_name") or ""),
                            sticker_name=str(part.get("sticker_name") or ""),
                        )
                    )
        return items

    async def save_to_library(self, peer_id: int, message_id: int, unique_id: str) -> LibrarySave:
        """The message's media item is posted to the account's Saved Messages (its DM with itself)."""
        return await sync_to_async(self._save_to_library)(peer_id, message_id, unique_id)

    def _save_to_library(self, peer_id: int, message_id: int, unique_id: str) -> LibrarySave:
        me = self._require_me()
        message = SandboxMessage.objects.filter(
            chat=self._chat_for_peer(peer_id), message_id=message_id
        ).first()
        if message is None:
            raise PermanentError("MESSAGE_ID_INVALID", f"sandbox chat {peer_id} has no message {message_id}")
        part = next((p for p in message.media or [] if str(p.get("unique_id", "")) == unique_id), None)
        if part is None:
            raise PermanentError(
                "MEDIA_NOT_FOUND",
                f"message {message_id} of sandbox chat {peer_id} does not hold media {unique_id}",
            )
        chat = sandbox_services.sandbox_saved_chat(user=me)
        for saved in SandboxMessage.objects.filter(chat=chat, deleted=False) if chat else []:
            if any(str(p.get("unique_id", "")) == unique_id for p in saved.media or []):
                ref = LibraryRef(
                    unique_id, str(part.get("media_kind", "")), saved_message_id=saved.message_id
                )
                return LibrarySave(ref, already=True)
        saved = sandbox_services.sandbox_save(agent=self.agent, media=[dict(part)])
        mime = str(part.get("mime") or "")
        ref = LibraryRef(
            unique_id, str(part.get("media_kind", "")), saved_message_id=saved.message_id, mime=mime
        )
        return LibrarySave(ref)

    async def download_media(self, peer_id: int, message_id: int, dest_dir: Path) -> Path | None:
        return await sync_to_async(self._download_media)(peer_id, message_id, dest_dir)

    def _download_media(self, peer_id: int, message_id: int, dest_dir: Path) -> Path | None:
        chat = self._chat_for_peer(peer_id)
        message = SandboxMessage.objects.filter(chat=chat, message_id=message_id).first()
        if message is None:
            return None
        for part in message.media:
            source = Path(part.get("extra", {}).get("path", "") or part.get("path", ""))
            if source.is_file():
                dest_dir.mkdir(parents=True, exist_ok=True)
                target = dest_dir / f"{part.get('unique_id') or message_id}{source.suffix}"
                shutil.copyfile(source, target)
                return target
        return None

    async def resolve_sticker_set(self, short_name: str) -> StickerSetInfo:
        return await sync_to_async(self._resolve_sticker_set)(short_name)

    def _resolve_sticker_set(self, short_name: str) -> StickerSetInfo:
        from media_catalog.models import StickerSet

        sticker_set = StickerSet.objects.filter(short_name=short_name).first()
        if sticker_set is None:
            return self._sticker_set_from_descriptions(short_name)
        stickers = tuple(
            StickerRef(
                set_short_name=short_name,
                name=s.name,
                unique_id=s.unique_id,
                ref={"format": s.format, "mime": s.mime, "premium": s.premium},
            )
            for s in sticker_set.stickers.all()
        )
        return StickerSetInfo(short_name=short_name, title=sticker_set.title, stickers=stickers)

    @staticmethod
    def _sticker_set_from_descriptions(short_name: str) -> StickerSetInfo:
        """The sandbox's "Telegram" also knows every set that curated sticker descriptions name, so a
        persona's stickers work in the sandbox before any set was imported from Telegram."""
        from media_catalog.models import STICKER_KINDS, MediaDescription

        described = list(
            MediaDescription.objects.filter(kind__in=STICKER_KINDS, sticker_set_name=short_name)
            .exclude(sticker_name="")
            .order_by("unique_id")
        )
        if not described:
            raise PermanentError("STICKERSET_INVALID", f"the sandbox knows no sticker set {short_name!r}")
        title = next((d.sticker_set_title for d in described if d.sticker_set_title), short_name)
        stickers = tuple(
            StickerRef(
                set_short_name=short_name, name=d.sticker_name, unique_id=d.unique_id, ref={"mime": d.mime}
            )
            for d in described
        )
        return StickerSetInfo(short_name=short_name, title=title, stickers=stickers)
