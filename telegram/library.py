"""The agent's media library on Telegram: the photos and files in the account's Saved Messages.

A sticker there that belongs to a set is listed with its set's short name and its emoji, so it also
joins the agent's sticker list (`engine.stickers`).

Items are named by the media's id (as `normalize` names media everywhere), and sent again by reading
the Saved Messages message for a fresh file reference, then `messages.sendMedia` with the send's
random_id, so a retried send never duplicates. An item an operator uploaded in the admin (a file, no
Saved Messages message) is uploaded to Telegram with the send; the sent message names the media id
Telegram gave it (`SentMessage.media_unique_id`), so its curated description follows it.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from django.conf import settings
from telethon import functions, types, utils

from conversations.transport.base import LibraryRef, LibrarySave, PermanentError, SentMessage


def media_of(message) -> tuple[str, str, str] | None:
    """(unique id, media kind, mime) of a message's photo or document, or None."""
    media = getattr(message, "media", None)
    if isinstance(media, types.MessageMediaPhoto) and isinstance(media.photo, types.Photo):
        return str(media.photo.id), "photo", "image/jpeg"
    if isinstance(media, types.MessageMediaDocument) and isinstance(media.document, types.Document):
        mime = media.document.mime_type or ""
        kind = "photo" if mime.startswith("image/") else "video" if mime.startswith("video/") else "document"
        if any(isinstance(a, types.DocumentAttributeSticker) for a in media.document.attributes):
            kind = "sticker"
        return str(media.document.id), kind, mime
    return None


def _input_media(message):
    media = message.media
    if isinstance(media, types.MessageMediaPhoto):
        photo = media.photo
        return types.InputMediaPhoto(
            id=types.InputPhoto(
                id=photo.id, access_hash=photo.access_hash, file_reference=photo.file_reference
            )
        )
    doc = media.document
    return types.InputMediaDocument(
        id=types.InputDocument(id=doc.id, access_hash=doc.access_hash, file_reference=doc.file_reference)
    )


class TelethonLibrary:
    """Mixed into `TelethonTransport`; relies on its `_call` and `_send_input_media`."""

    async def saved_media(self, *, limit: int = 200) -> list[LibraryRef]:
        result = await self._call(
            functions.messages.GetHistoryRequest(
                peer=types.InputPeerSelf(),
                offset_id=0,
                offset_date=None,
                add_offset=0,
                limit=limit,
                max_id=0,
                min_id=0,
                hash=0,
            )
        )
        messages = list(getattr(result, "messages", []))
        set_ids = {
            a.stickerset.id
            for m in messages
            for a in getattr(getattr(getattr(m, "media", None), "document", None), "attributes", None) or []
            if isinstance(a, types.DocumentAttributeSticker)
            and isinstance(a.stickerset, types.InputStickerSetID)
        }
        await self._resolve_sticker_sets(set_ids, messages)  # a sticker names its set by id only
        items: list[LibraryRef] = []
        for message in messages:
            found = media_of(message)
            if found is not None:
                unique_id, kind, mime = found
                set_name, name = self._saved_sticker_key(message) if kind == "sticker" else ("", "")
                items.append(
                    LibraryRef(
                        unique_id,
                        kind,
                        saved_message_id=message.id,
                        mime=mime,
                        sticker_set_name=set_name,
                        sticker_name=name,
                    )
                )
        return items

    async def save_to_library(self, peer_id: int, message_id: int, unique_id: str) -> LibrarySave:
        """messages.sendMedia to Saved Messages (`InputPeerSelf`) with the chat message's own photo or
        document, so the media keeps its id; nothing is sent when Saved Messages already hold it."""
        for item in await self.saved_media():
            if item.unique_id == unique_id:
                return LibrarySave(item, already=True)

        def build(peer):
            ids = [types.InputMessageID(id=message_id)]
            if isinstance(peer, types.InputPeerChannel):
                return functions.channels.GetMessagesRequest(channel=utils.get_input_channel(peer), id=ids)
            return functions.messages.GetMessagesRequest(id=ids)

        found = await self._peer_call(peer_id, build)
        message = next(
            (
                m
                for m in getattr(found, "messages", [])
                if isinstance(m, types.Message) and m.id == message_id
            ),
            None,
        )
        if message is None:
            raise PermanentError("MESSAGE_ID_INVALID", f"chat {peer_id} has no message {message_id}")
        media = media_of(message)
        if media is None or media[0] != unique_id:
            raise PermanentError(
                "MEDIA_NOT_FOUND", f"message {message_id} of chat {peer_id} does not hold media {unique_id}"
            )
        random_id = secrets.randbits(63)
        result = await self._call(
            functions.messages.SendMediaRequest(
                peer=types.InputPeerSelf(), media=_input_media(message), message="", random_id=random_id
            )
        )
        me = self.me.user_id if self.me else 0
        sent = self._sent(result, me, random_id)
        return LibrarySave(
            LibraryRef(unique_id, media[1], saved_message_id=sent.message_id, mime=media[2]), already=False
        )

    def _saved_sticker_key(self, message) -> tuple[str, str]:
        """(set short name, emoji) of a sticker in Saved Messages; ("", "") when its set is unknown."""
        for attr in message.media.document.attributes:
            if not isinstance(attr, types.DocumentAttributeSticker):
                continue
            stickerset = attr.stickerset
            if isinstance(stickerset, types.InputStickerSetShortName):
                return stickerset.short_name, attr.alt or ""
            known = self._sticker_set_names.get(getattr(stickerset, "id", None))
            return (known[0], attr.alt or "") if known else ("", "")
        return "", ""

    async def send_media(
        self,
        peer_id: int,
        item: LibraryRef,
        *,
        random_id: int,
        reply_to: int | None = None,
        caption: str = "",
        topic_id: int | None = None,
    ) -> SentMessage:
        if item.saved_message_id is None:
            if item.file:
                return await self._send_uploaded(
                    peer_id, item, random_id=random_id, reply_to=reply_to, caption=caption, topic_id=topic_id
                )
            raise PermanentError(
                "MEDIA_NOT_SAVED", f"library item {item.unique_id} has no Saved Messages message"
            )
        found = await self._call(
            functions.messages.GetMessagesRequest(id=[types.InputMessageID(id=item.saved_message_id)])
        )
        message = next(iter(getattr(found, "messages", [])), None)
        if message is None or media_of(message) is None or media_of(message)[0] != item.unique_id:
            raise PermanentError(
                "MEDIA_NOT_FOUND",
                f"library item {item.unique_id} is no longer in Saved Messages (message {item.saved_message_id})",
            )
        return await self._send_input_media(
            peer_id,
            _input_media(message),
            random_id=random_id,
            reply_to=reply_to,
            topic_id=topic_id,
            matches=lambda m: (media_of(m) or ("",))[0] == item.unique_id,
            caption=caption,
        )

    async def _send_uploaded(
        self,
        peer_id: int,
        item: LibraryRef,
        *,
        random_id: int,
        reply_to: int | None,
        caption: str = "",
        topic_id: int | None = None,
    ) -> SentMessage:
        """Upload the item's file (MEDIA_ROOT) and send it: a photo as a photo, anything else as a file."""
        path = Path(settings.MEDIA_ROOT) / item.file
        if not path.is_file():
            raise PermanentError(
                "MEDIA_NOT_FOUND", f"library item {item.unique_id} has no uploaded file ({item.file!r})"
            )
        self._check_pause(peer_id)
        client = self._require_client()
        uploaded = await self._guard(client.upload_file(str(path)), peer_id=peer_id)
        if item.media_kind == "photo":
            media = types.InputMediaUploadedPhoto(file=uploaded)
        else:
            media = types.InputMediaUploadedDocument(
                file=uploaded,
                mime_type=item.mime or "application/octet-stream",
                attributes=[types.DocumentAttributeFilename(file_name=path.name)],
            )
        return await self._send_input_media(
            peer_id,
            media,
            random_id=random_id,
            reply_to=reply_to,
            topic_id=topic_id,
            matches=lambda m: media_of(m) is not None,
            caption=caption,
        )
