"""The account side of `SandboxTransport`: mute settings, joining and leaving chats, the profile and
contacts, kept in the sandbox tables the way Telegram keeps them for a real account."""

from __future__ import annotations

import shutil
from pathlib import Path

from asgiref.sync import sync_to_async
from django.db import transaction

from agents.telegram_targets import parse_join_target, parse_user_target
from cindy_site.clock import now
from conversations.transport.base import (
    ChatDetails,
    ContactInfo,
    PermanentError,
    ProfileInfo,
    ProfilePhoto,
)
from sandbox.models import SandboxChat, SandboxMember, SandboxUser


class SandboxAccount:
    """Mixed into `SandboxTransport`; relies on its `_require_me`, `_chat_for_peer` and `_details`."""

    async def set_muted(self, peer_id: int, muted: bool) -> None:
        await sync_to_async(self._set_muted)(peer_id, muted)

    def _set_muted(self, peer_id: int, muted: bool) -> None:
        chat = self._chat_for_peer(peer_id)
        SandboxMember.objects.filter(chat=chat, user=self._require_me()).update(muted=muted)

    async def join_chat(self, target: str) -> ChatDetails:
        return await sync_to_async(self._join_chat)(target)

    def _join_chat(self, target: str) -> ChatDetails:
        parsed = parse_join_target(target)
        chats = SandboxChat.objects.filter(kind=SandboxChat.Kind.GROUP)
        if parsed.kind == "username":
            chat = chats.filter(username__iexact=parsed.value).first()
            missing = ("USERNAME_NOT_OCCUPIED", f"no sandbox group has the username @{parsed.value}")
        else:
            chat = chats.filter(invite_hash=parsed.value).first()
            missing = ("INVITE_HASH_INVALID", f"no sandbox group has the invite code {parsed.value}")
        if chat is None:
            raise PermanentError(*missing)
        SandboxMember.objects.get_or_create(chat=chat, user=self._require_me())
        return self._details(chat)

    async def leave_chat(self, peer_id: int) -> None:
        await sync_to_async(self._leave_chat)(peer_id)

    def _leave_chat(self, peer_id: int) -> None:
        if peer_id > 0:
            raise PermanentError("PEER_ID_INVALID", f"peer {peer_id} is a private chat: only groups are left")
        chat = self._chat_for_peer(peer_id)
        SandboxMember.objects.filter(chat=chat, user=self._require_me()).delete()

    # --- profile --------------------------------------------------------------------------------

    def _fresh_me(self) -> SandboxUser:
        self.me = SandboxUser.objects.get(pk=self._require_me().pk)
        return self.me

    async def get_profile(self, *, photo_dir: Path) -> ProfileInfo:
        return await sync_to_async(self._get_profile)(Path(photo_dir))

    def _get_profile(self, photo_dir: Path) -> ProfileInfo:
        me = self._fresh_me()
        photos = []
        for photo in me.photos or []:
            source = Path(photo.get("path", ""))
            saved = ""
            if source.is_file():
                photo_dir.mkdir(parents=True, exist_ok=True)
                target = photo_dir / f"{photo['id']}{source.suffix or '.jpg'}"
                if not target.is_file():
                    # Whole or not at all: a page may be showing the previous read's copy meanwhile.
                    partial = target.with_suffix(".part")
                    shutil.copyfile(source, partial)
                    partial.replace(target)
                saved = str(target)
            photos.append(ProfilePhoto(photo_id=int(photo["id"]), date=None, path=saved))
        return ProfileInfo(
            user_id=me.user_id,
            first_name=me.name,
            last_name=me.last_name,
            username=me.username,
            about=me.about,
            photos=tuple(photos),
        )

    async def update_profile(self, *, first_name: str, last_name: str, about: str) -> None:
        await sync_to_async(self._update_profile)(first_name, last_name, about)

    def _update_profile(self, first_name: str, last_name: str, about: str) -> None:
        if not first_name.strip():
            raise PermanentError("FIRSTNAME_INVALID", "the first name cannot be empty")
        if len(about) > 70:
            raise PermanentError("ABOUT_TOO_LONG", f"the bio has {len(about)} characters; at most 70")
        SandboxUser.objects.filter(pk=self._require_me().pk).update(
            name=first_name.strip(), last_name=last_name.strip(), about=about
        )

    async def set_username(self, username: str) -> None:
        await sync_to_async(self._set_username)(username)

    def _set_username(self, username: str) -> None:
        me = self._require_me()
        if username and SandboxUser.objects.filter(username__iexact=username).exclude(pk=me.pk).exists():
            raise PermanentError("USERNAME_OCCUPIED", f"the username @{username} is taken")
        SandboxUser.objects.filter(pk=me.pk).update(username=username)

    async def add_profile_photo(self, path: Path) -> None:
        await sync_to_async(self._add_profile_photo)(Path(path))

    def _add_profile_photo(self, path: Path) -> None:
        with transaction.atomic():
            me = SandboxUser.objects.select_for_update().get(pk=self._require_me().pk)
            photos = list(me.photos or [])
            # Never reused, as on Telegram: a saved copy is keyed by the id.
            photo_id = max([int(p["id"]) for p in photos] + [int(now().timestamp() * 1000)]) + 1
            me.photos = [{"id": photo_id, "path": str(path), "date": now().isoformat()}, *photos]
            me.save(update_fields=["photos"])

    async def delete_profile_photo(self, photo_id: int) -> None:
        await sync_to_async(self._delete_profile_photo)(photo_id)

    def _delete_profile_photo(self, photo_id: int) -> None:
        with transaction.atomic():
            me = SandboxUser.objects.select_for_update().get(pk=self._require_me().pk)
            kept = [p for p in me.photos or [] if int(p["id"]) != photo_id]
            if len(kept) == len(me.photos or []):
                raise PermanentError("PHOTO_INVALID", f"the account has no profile photo {photo_id}")
            me.photos = kept
            me.save(update_fields=["photos"])

    # --- contacts -------------------------------------------------------------------------------

    async def contacts(self) -> list[ContactInfo]:
        return await sync_to_async(self._contacts)()

    def _contacts(self) -> list[ContactInfo]:
        me = self._fresh_me()
        ids = list(me.contact_user_ids or [])
        people = {u.user_id: u for u in SandboxUser.objects.filter(user_id__in=ids)}
        return [
            ContactInfo(
                user_id=uid,
                first_name=people[uid].name,
                last_name=people[uid].last_name,
                username=people[uid].username,
                mutual=me.user_id in (people[uid].contact_user_ids or []),
            )
            for uid in ids
            if uid in people
        ]

    async def add_contact(self, target: str, *, first_name: str, last_name: str = "") -> ContactInfo:
        return await sync_to_async(self._add_contact)(target, first_name, last_name)

    def _add_contact(self, target: str, first_name: str, last_name: str) -> ContactInfo:
        who = parse_user_target(target)
        people = SandboxUser.objects.all()
        other = people.filter(user_id=who).first() if isinstance(who, int) else None
        if isinstance(who, str):
            other = people.filter(username__iexact=who).first()
        if other is None:
            raise PermanentError("USER_ID_INVALID", f"the sandbox has no user {target!r}")
        with transaction.atomic():
            me = SandboxUser.objects.select_for_update().get(pk=self._require_me().pk)
            ids = [i for i in me.contact_user_ids or [] if i != other.user_id]
            me.contact_user_ids = [*ids, other.user_id]
            me.save(update_fields=["contact_user_ids"])
        return ContactInfo(
            user_id=other.user_id,
            first_name=first_name or other.name,
            last_name=last_name or other.last_name,
            username=other.username,
        )

    async def delete_contacts(self, user_ids: list[int]) -> None:
        await sync_to_async(self._delete_contacts)(user_ids)

    def _delete_contacts(self, user_ids: list[int]) -> None:
        with transaction.atomic():
            me = SandboxUser.objects.select_for_update().get(pk=self._require_me().pk)
            me.contact_user_ids = [i for i in me.contact_user_ids or [] if i not in set(user_ids)]
            me.save(update_fields=["contact_user_ids"])
