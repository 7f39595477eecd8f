"""The same scenarios on Telegram's wire protocol: the personas become Telegram agents signed in to the
MTProto stand-in (conversations/testing/mtproto), which runs in the test process as in
conversations/tests/telethon/test_standin_process.py, and the people are stand-in users who write
through it. The gateway, its workers and the LLM stand-in are the same processes as on the sandbox.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from telethon.tl import types

from conversations.testing.mtproto import StandIn
from conversations.testing.mtproto.media import add_sticker_set, image_bytes
from conversations.transport.base import TYPING_UPDATE_SECONDS
from engine.tests.processes import MANAGE, ChildDatabase, manage
from engine.tests.scenarios.spec import PERSONAS, Scenario, Turn
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
        self.accounts: dict[str, int] = {}
        for persona, phone in PHONES.items():
            self.accounts[persona] = self.standin.run(
                self.standin.world.create_user, phone=phone, first_name=persona, username=persona.lower()
            ).id
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

    def stop(self) -> None:
        super().stop()
        self.standin.stop()

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

    def say(self, scenario: Scenario, turn: Turn, text: str = "", typing: float = 0.0) -> None:
        """The person writes; with `typing`, one `UpdateUserTyping` follows at once (Telegram's clients
        take it to last TYPING_UPDATE_SECONDS)."""
        person = self._person(
            scenario.user(turn.person),
            user_id=scenario.user_ids.get(turn.person),
            bot=turn.person in scenario.bots,
        )
        key = self.standin.world.dm_key(self.accounts[scenario.persona], person)

        def act() -> None:
            self.standin.world.send(person, key, text or turn.say)
            if typing:
                self.standin.world.typing(person, key)

        self.standin.run(act)

    def typing_lasts(self, seconds: float) -> float:
        return TYPING_UPDATE_SECONDS

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
        name = scenario.user(person)
        if name not in self.people:
            return []
        me = self.accounts[scenario.persona]
        key = self.standin.world.dm_key(me, self.people[name])

        def read():
            return [
                (
                    m.id,
                    m.sender == me,
                    m.text,
                    self._media(m.media),
                    [{"emoji": emoji, "user_ids": [uid]} for uid, emoji in m.reactions.items()],
                )
                for m in self.standin.world.history(key)
                if not m.deleted
            ]

        return self.standin.run(read)

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
            return [{"media_kind": "photo", "unique_id": self.library_files.get(data, str(media.photo.id))}]
        return [{"media_kind": type(media).__name__}]

    def blocked_ids(self, persona: str) -> list[int]:
        return self.standin.run(lambda: sorted(self.standin.world.users[self.accounts[persona]].blocked))
