"""The same scenarios on Telegram's wire protocol: the personas become Telegram agents signed in to the
MTProto stand-in (cindy_site/testing/mtproto), which runs in the test process as in
telegram/tests/test_standin_process.py, and the people are stand-in users who write
through it. The gateway, its workers and the LLM stand-in are the same processes as on the sandbox.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import time
from pathlib import Path

from telethon import utils
from telethon.tl import types

from cindy_site.testing.mtproto import StandIn
from cindy_site.testing.mtproto.media import (
    add_photo,
    add_sticker_set,
    add_video,
    add_voice_note,
    image_bytes,
    save_to_saved_messages,
    sticker_document,
    tgs_bytes,
)
from conversations.transport.base import TYPING_UPDATE_SECONDS
from engine.tests.processes import MANAGE, ChildDatabase, manage
from engine.tests.scenarios.spec import ANIMATED_SET, HARNESS_STICKER_SETS, PERSONAS, Scenario, Turn
from engine.tests.scenarios.stage import SAMPLES, Stage
from engine.tests.scenarios.voice import voice_part

#: Test numbers (+99966XYYYY: the login code is X five times), one per persona.
PHONES = {name: f"+999662{number:04d}" for number, name in enumerate(PERSONAS, start=1)}
#: The sticker sets the personas use, as Telegram would have them (their stickers' emoji).
STICKER_SETS = {"BrambleGnome": ["👋", "🍄"], "ForestFriends": ["🦔", "🌰"]}


class TelegramStage(Stage):
    """A stage whose agents are Telegram accounts on the MTProto stand-in."""

    def __init__(self, tmp: Path, template: ChildDatabase, scenarios: list[Scenario]) -> None:
        self.standin = StandIn().start()
        self.people: dict[str, int] = {}
        self._voice_media: dict[tuple[str, str], types.MessageMediaDocument] = {}
        self.group_ids: dict[str, int] = {}  # a group scenario's title -> its stand-in channel id
        self.topics: dict[tuple[str, str], int] = {}  # (group title, topic title) -> topic id
        super().__init__(tmp, template, scenarios)
        key_path = tmp / "standin.pub.pem"
        key_path.write_bytes(self.standin.key.public_pem)
        self.env |= {
            "TELEGRAM_API_ID": "1",
            "TELEGRAM_API_HASH": "standin",
            "CINDY_TELEGRAM_SERVER": self.standin.address,
            "CINDY_TELEGRAM_SERVER_KEY": str(key_path),
        }
        for short_name, emoji in STICKER_SETS.items():
            stickers = [(e, image_bytes(e, size=(512, 512), color="green", fmt="WEBP")) for e in emoji]
            self.standin.run(add_sticker_set, self.standin.world, short_name, short_name, stickers)
        for short_name, entries in HARNESS_STICKER_SETS.items():
            stickers = [(e, image_bytes(e, size=(512, 512), color="green", fmt="WEBP")) for e, _p in entries]
            premium = tuple(e for e, p in entries if p)
            self.standin.run(
                add_sticker_set, self.standin.world, short_name, short_name, stickers, premium=premium
            )
        animated = [(e, tgs_bytes(rgb=(0.2 * i, 0.5, 0.8))) for i, e in enumerate(ANIMATED_SET[1])]
        self.standin.run(
            add_sticker_set,
            self.standin.world,
            ANIMATED_SET[0],
            ANIMATED_SET[0],
            animated,
            mime="application/x-tgsticker",
        )
        self.accounts: dict[str, int] = {}
        for persona, phone in PHONES.items():
            self.accounts[persona] = self.standin.run(
                self.standin.world.create_user, phone=phone, first_name=persona, username=persona.lower()
            ).id
        for scenario in scenarios:  # kept in Saved Messages before the account signs in
            for set_name, emoji in scenario.saved_stickers:
                self.standin.run(self._save_sticker, self.accounts[scenario.persona], set_name, emoji)
        manage(
            self.env,
            "shell",
            "-c",
            "from agents.models import Agent\n"
            + "".join(
                f"Agent.objects.filter(name={p!r}).update(transport='telegram', phone={phone!r})\n"
                for p, phone in PHONES.items()
            ),
        )
        #: A library file's bytes -> its library item: a photo in a chat with these bytes is that item,
        #: uploaded with the send (the account has no Saved Messages copy of an admin upload).
        self.library_files = {
            (SAMPLES / "media" / key.split("/", 1)[1]).read_bytes(): unique_id
            for key, (unique_id, _curated) in self.library.items()
        }
        for persona, phone in PHONES.items():
            done = subprocess.run(
                [sys.executable, MANAGE, "telegram_login", persona],
                env=self.env,
                input=f"{phone[6] * 5}\n",
                capture_output=True,
                text=True,
                timeout=120,
                start_new_session=True,
            )
            assert done.returncode == 0, f"telegram_login {persona} failed:\n{done.stdout}\n{done.stderr}"
        for scenario in scenarios:
            if scenario.backlog is not None:
                self.seed_backlog(scenario)

    def stop(self) -> None:
        super().stop()
        self.standin.stop()

    # --- the past -----------------------------------------------------------------------------------

    def _past(
        self, scenario: Scenario, person: str, past: list[tuple[bool, str, int]]
    ) -> tuple[int, list[int], list[tuple[int, str, int]]]:
        """Message ids for a DM's past with `person`, taken on the stand-in now, and the messages as
        `World.add_history` writes them: (sender, text, Unix date) from (by the persona, text, date)."""
        me, them = self.accounts[scenario.persona], self._person(scenario.user(person))
        ids = self.standin.run(self.standin.world.reserve_ids, len(past))
        return them, ids, [(me if own else them, text, date) for own, text, date in past]

    def _write_past(self, scenario: Scenario, them: int, ids: list[int], past: list) -> None:
        key = self.standin.world.dm_key(self.accounts[scenario.persona], them)
        self.standin.run(self.standin.world.add_history, key, past, ids)

    def seed_backlog(self, scenario: Scenario) -> None:
        """The scenario's `[backlog]` on "Telegram": the DM's history on the stand-in, older than any
        session and read by the persona's account, and Cindy's mirror of the same ids (backlog.py's
        `mirror`), before the gateway starts, so its reconcile finds the chat caught up."""
        backlog, person = scenario.backlog, scenario.people[0]
        first = int(time.time()) - 7 * 86_400 - 60 * backlog.count
        numbers = range(1, backlog.count + 1)
        them, ids, past = self._past(
            scenario, person, [(n % 2 == 0, backlog.text(n), first + 60 * n) for n in numbers]
        )
        rows = [[n, i, date, text] for n, i, (_who, text, date) in zip(numbers, ids, past, strict=True)]
        path = self.tmp / f"{scenario.name}-backlog.json"
        path.write_text(json.dumps(rows), encoding="utf-8")
        name, me = scenario.user(person), self.accounts[scenario.persona]
        manage(
            self.env,
            "shell",
            "-c",
            "import datetime as dt, json, pathlib\n"
            "from engine.tests.scenarios.backlog import mirror\n"
            f"rows = json.loads(pathlib.Path({str(path)!r}).read_text())\n"
            f"mirror(persona={scenario.persona!r}, peer=({them}, {name!r}, ''), "
            f"own=({me}, {scenario.persona!r}, {scenario.persona.lower()!r}), "
            "messages=[(n, i, dt.datetime.fromtimestamp(d, dt.UTC), t) for n, i, d, t in rows])",
        )
        self._write_past(scenario, them, ids, past)

    def import_history(self, scenario: Scenario, turn: Turn) -> None:
        """An operator imports the person's past with the persona from a Telegram Desktop export made
        on the persona's account (`manage.py importchat`, the peer being the export's `id`, the account's
        own messages the agent's): the turn's `history`, a minute apart the day before, with ids the
        stand-in gives them. Once imported, the same messages are the DM's history on the stand-in."""
        start = int(time.time()) - 86_400
        them, ids, past = self._past(
            scenario,
            turn.person,
            [(own, text, start + 60 * n) for n, (text, own) in enumerate(turn.history, 1)],
        )
        me, person = self.accounts[scenario.persona], scenario.user(turn.person)
        messages = [
            {
                "id": msg_id,
                "type": "message",
                "date": dt.datetime.fromtimestamp(date).isoformat(timespec="seconds"),
                "date_unixtime": str(date),
                "from": scenario.persona if sender == me else person,
                "from_id": f"user{sender}",
                "text": text,
            }
            for msg_id, (sender, text, date) in zip(ids, past, strict=True)
        ]
        path = self.tmp / f"{scenario.name}-turn{turn.number}-result.json"
        export = {"name": person, "type": "personal_chat", "id": them, "messages": messages}
        path.write_text(json.dumps(export, ensure_ascii=False), encoding="utf-8")
        out = self.command("importchat", scenario.persona, str(path))
        assert f"imported {len(messages)}, already there 0" in out, out
        self._write_past(scenario, them, ids, past)

    def world_setup(self, scenarios: list[Scenario]) -> None:
        """Nothing in the database: Telegram has the sets and the Saved Messages (see __init__)."""

    def _save_sticker(self, account: int, set_name: str, emoji: str) -> None:
        world = self.standin.world
        document = sticker_document(world, set_name, emoji)
        saved = [m.media for m in world.history(world.dm_key(account, account))]
        if not any(getattr(m, "document", None) is document for m in saved):
            save_to_saved_messages(world, account, document)

    def set_rights(self, scenario: Scenario, rights: str) -> None:
        """An admin changes the persona's right to write: "read_only" makes the supergroup a broadcast
        channel the people administer, "restricted" / "banned" restrict or ban the persona, "" undoes it."""
        me = self.accounts[scenario.persona]

        def change() -> None:
            chat = self.standin.world.chats[self.group_ids[scenario.group_title]]
            chat.broadcast = rights == "read_only"
            chat.admins = (chat.members - {me}) if chat.broadcast else set()
            chat.restricted = {me} if rights == "restricted" else set()
            chat.banned = {me} if rights == "banned" else set()

        self.standin.run(change)

    # --- the people ---------------------------------------------------------------------------------

    def _person(self, name: str, *, user_id: int | None = None, bot: bool = False) -> int:
        if name not in self.people:
            phone = f"+99966{len(self.people) + 10:05d}"[:11]
            self.people[name] = self.standin.run(
                self.standin.world.create_user, phone=phone, first_name=name, user_id=user_id, bot=bot
            ).id
        return self.people[name]

    def operator_id(self, name: str) -> int:
        return self._person(name)

    def _group(self, scenario: Scenario) -> int:
        """The scenario's group: a supergroup (a forum with `forum = true`) of the persona and the people
        (spec.py allows no other agents here); returns its peer id as Telethon marks it."""
        members = [self.accounts[scenario.persona]] + [
            self._person(scenario.user(p), bot=p in scenario.bots) for p in scenario.people
        ]
        chat = self.standin.run(
            lambda: self.standin.world.create_group(
                title=scenario.group_title, member_ids=members, supergroup=True, forum=scenario.forum
            )
        )
        self.group_ids[scenario.group_title] = chat.id
        return utils.get_peer_id(types.PeerChannel(chat.id))

    def _topic(self, scenario: Scenario, title: str, creator: int) -> int:
        """The forum topic titled `title`, opened by `creator` on first use."""
        key = (scenario.group_title, title)
        if key not in self.topics:
            chat_id = self.group_ids[scenario.group_title]
            self.topics[key] = self.standin.run(self.standin.world.create_topic, creator, chat_id, title).id
        return self.topics[key]

    def _say_in_group(self, scenario: Scenario, turn: Turn, person: int, text: str) -> None:
        """The person writes in the group (in a forum, in the turn's topic), mentioning the persona as
        Telegram's apps do when the text holds its @username."""
        topic = self._topic(scenario, turn.topic, person) if turn.topic else None
        agent = self.accounts[scenario.persona]
        handle = f"@{scenario.persona.lower()}"
        at = text.lower().find(handle)
        entities = [types.MessageEntityMention(offset=at, length=len(handle))] if at >= 0 else []
        key = ("channel", self.group_ids[scenario.group_title])
        self.standin.run(
            lambda: self.standin.world.send(
                person, key, text, mentions=(agent,) if entities else (), entities=entities, topic=topic
            )
        )

    def say(self, scenario: Scenario, turn: Turn, text: str = "", typing: float = 0.0) -> None:
        """The person writes; with `typing`, one `UpdateUserTyping` follows at once (Telegram's clients
        take it to last TYPING_UPDATE_SECONDS)."""
        person = self._person(
            scenario.user(turn.person),
            user_id=scenario.user_ids.get(turn.person),
            bot=turn.person in scenario.bots,
        )
        if scenario.group:
            self._say_in_group(scenario, turn, person, text or turn.say)
            return
        key = self.standin.world.dm_key(self.accounts[scenario.persona], person)

        media = self._media_of(turn) if turn.media else None

        def act() -> None:
            self.standin.world.send(person, key, text or turn.say, media=media)
            if typing:
                self.standin.world.typing(person, key)

        self.standin.run(act)

    def say_voice(self, scenario: Scenario, turn: Turn) -> None:
        """The person sends the turn's voice note: a document with a voice audio attribute, uploaded once
        per note; the same note again is the same document (the same media unique id)."""
        person = self._person(scenario.user(turn.person))
        key = self.standin.world.dm_key(self.accounts[scenario.persona], person)
        note = (scenario.name, turn.voice)
        if note not in self._voice_media:
            path, _made = self.voice_note(scenario, turn)
            self._voice_media[note] = self.standin.run(
                add_voice_note, self.standin.world, path.read_bytes(), duration=turn.voice_seconds
            )
        media = self._voice_media[note]
        self.standin.run(lambda: self.standin.world.send(person, key, "", media=media))

    def typing_lasts(self, seconds: float) -> float:
        return TYPING_UPDATE_SECONDS

    def _media_of(self, turn: Turn) -> types.MessageMediaDocument | types.MessageMediaPhoto:
        """A turn's `media` as Telegram sends it: a sticker of the animated set, a new video or photo."""
        spec = turn.media_spec
        world = self.standin.world
        if spec["kind"] == "photo":
            data = image_bytes(spec["text"], size=(320, 240), color="red", fmt="JPEG")
            return types.MessageMediaPhoto(
                photo=self.standin.run(add_photo, world, data, width=320, height=240)
            )
        if spec["kind"] == "animated_sticker":
            document = sticker_document(world, ANIMATED_SET[0], spec["name"])
        else:
            document = self.standin.run(
                add_video, world, seconds=spec["seconds"], round_message=spec["kind"] == "video_note"
            )
        return types.MessageMediaDocument(document=document)

    def _dm(self, scenario: Scenario, person: str) -> tuple[int, tuple]:
        who = self._person(scenario.user(person))
        return who, self.standin.world.dm_key(self.accounts[scenario.persona], who)

    def say_unseen(self, scenario: Scenario, turn: Turn) -> None:
        """The message is stored and logged, but its update is not pushed: the account learns of it from
        the dialog list, or from getDifference once a later update shows the gap."""
        person, key = self._dm(scenario, turn.person)
        self.standin.run(
            self.standin.world.send, person, key, turn.say, skip_push=self.accounts[scenario.persona]
        )

    def deliver_late(self, scenario: Scenario, turn: Turn) -> str:
        """An edit of the unseen message is pushed: its pts gap makes Telethon fetch the difference,
        which brings the lost update after all."""
        person, key = self._dm(scenario, turn.person)
        edited = f"{turn.say} (edited)"

        def act() -> None:
            message = next(m for m in reversed(self.standin.world.history(key)) if m.text == turn.say)
            self.standin.world.edit(person, key, message.id, edited)

        self.standin.run(act)
        return edited

    def mark_unread(self, scenario: Scenario, turn: Turn) -> None:
        """The agent's account marks the chat unread on another device: `UpdateDialogUnreadMark`."""
        _person, key = self._dm(scenario, turn.person)
        self.standin.run(self.standin.world.mark_unread, self.accounts[scenario.persona], key)

    # --- reading the world --------------------------------------------------------------------------

    def user_id(self, name: str) -> int:
        assert name in self.people, (
            f"no stand-in user {name!r} yet: a scenario names a person before they wrote"
        )
        return self.people[name]

    def _exists(self, name: str) -> bool:
        return name in self.people

    def agent_user_id(self, persona: str) -> int:
        return self.accounts[persona]

    def messages(self, scenario: Scenario, person: str) -> list[tuple[int, bool, str, list, list]]:
        """As on the sandbox; in a forum, every topic's messages (not the service messages that open
        topics), the persona's text as `Name: text`."""
        name = scenario.user(person)
        me = self.accounts[scenario.persona]
        if scenario.group:
            if scenario.group_title not in self.group_ids:
                return []
            key = ("channel", self.group_ids[scenario.group_title])
        elif name not in self.people:
            return []
        else:
            key = self.standin.world.dm_key(me, self.people[name])

        def read():
            return [
                (
                    m.id,
                    m.sender == me,
                    f"{scenario.persona}: {m.text}" if scenario.group and m.sender == me else m.text,
                    self._media(m.media),
                    [{"emoji": emoji, "user_ids": [uid]} for uid, emoji in m.reactions.items()],
                )
                for m in self.standin.world.history(key)
                if not m.deleted and m.action is None
            ]

        return self.standin.run(read)

    def read_mark(self, scenario: Scenario, person: str) -> int:
        """As on the sandbox: the account's `read_inbox_max_id` of the person's DM (or the group) on the
        stand-in, which its read requests (messages.readHistory, channels.readHistory) move."""
        me = self.accounts[scenario.persona]
        if scenario.group:
            if scenario.group_title not in self.group_ids:
                return 0
            key = ("channel", self.group_ids[scenario.group_title])
        elif scenario.user(person) not in self.people:
            return 0
        else:
            key = self.standin.world.dm_key(me, self.people[scenario.user(person)])
        return self.standin.run(lambda: self.standin.world.users[me].read_max.get(key, 0))

    def message_topics(self, scenario: Scenario) -> dict[int, str]:
        """Message id -> the title of the topic Telegram has it in (the topic its `reply_to_top_id`
        / `top_msg_id` named), for the scenario's forum ("": General)."""
        chat_id = self.group_ids.get(scenario.group_title)
        if chat_id is None:
            return {}
        chat = self.standin.world.chats[chat_id]
        return self.standin.run(
            lambda: {
                m.id: chat.topics.get(m.topic, "")
                for m in self.standin.world.history(("channel", chat_id))
                if m.topic is not None
            }
        )

    def _media(self, media) -> list[dict]:
        """A message's media as the sandbox's parts: stickers with their set and emoji, else the kind."""
        if media is None:
            return []
        if isinstance(media, types.MessageMediaDocument):
            for attribute in media.document.attributes:
                if isinstance(attribute, types.DocumentAttributeSticker):
                    sets = self.standin.world.sticker_sets.values()
                    name = next((s.short_name for s, _docs in sets if s.id == attribute.stickerset.id), "?")
                    return [
                        {"media_kind": "sticker", "sticker_name": attribute.alt, "sticker_set_name": name}
                    ]
                if isinstance(attribute, types.DocumentAttributeAudio) and attribute.voice:
                    data = self.standin.world.files.get(media.document.id)
                    voice = voice_part(data, stated=attribute.duration, whole_seconds=True)
                    voice["mime"] = media.document.mime_type
                    voice["waveform"] = bool(attribute.waveform)
                    return [voice]
            return [{"media_kind": "document"}]
        if isinstance(media, types.MessageMediaPhoto):
            data = self.standin.world.files.get(media.photo.id)
            unique_id = self.library_files.get(data, str(media.photo.id))
            return [{"media_kind": "photo", "unique_id": unique_id, "data": data}]
        return [{"media_kind": type(media).__name__}]

    def photo_bytes(self, part: dict) -> bytes | None:
        """The bytes of a photo as the stand-in received it (uploaded with messages.sendMedia)."""
        return part.get("data")

    def blocked_ids(self, persona: str) -> list[int]:
        return self.standin.run(lambda: sorted(self.standin.world.users[self.accounts[persona]].blocked))

    def contact_ids(self, persona: str) -> list[int]:
        return self.standin.run(lambda: sorted(self.standin.world.users[self.accounts[persona]].contacts))

    def shown_online(self, persona: str) -> bool:
        return bool(self.standin.run(lambda: self.standin.world.users[self.accounts[persona]].online))
