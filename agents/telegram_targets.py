"""What an operator types to name a chat to join or a user to add: parsed once, for every transport."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

USERNAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{4,31}$")
_LINK = re.compile(r"^(?:https?://)?(?:www\.)?(?:t\.me|telegram\.me|telegram\.dog)/(?P<rest>[^?#]+)", re.I)
_INVITE_HASH = re.compile(r"^[A-Za-z0-9_-]{8,64}$")


class TargetError(ValueError):
    """The text names no chat or user; the message says what forms are accepted."""


@dataclass(frozen=True)
class JoinTarget:
    kind: Literal["username", "invite"]
    value: str  # the username without "@", or the invite link's hash


def parse_join_target(text: str) -> JoinTarget:
    """`@name`, `name`, `t.me/name`, `t.me/+HASH` or `t.me/joinchat/HASH`."""
    raw = (text or "").strip()
    link = _LINK.match(raw)
    if link:
        rest = link.group("rest").strip("/")
        if rest.startswith("+") or rest.lower().startswith("joinchat/"):
            invite = rest[1:] if rest.startswith("+") else rest.split("/", 1)[1]
            if _INVITE_HASH.match(invite):
                return JoinTarget("invite", invite)
            raise TargetError(f"{raw!r}: the invite link's code {invite!r} is not a Telegram invite code")
        raw = rest.split("/", 1)[0]
    name = raw.removeprefix("@")
    if USERNAME.match(name):
        return JoinTarget("username", name)
    raise TargetError(
        f"{text!r} is not a chat to join: give @username, https://t.me/username or an invite link "
        "(https://t.me/+code)"
    )


def parse_user_target(text: str) -> int | str:
    """A user id (digits) or a username (without "@")."""
    raw = (text or "").strip()
    if raw.isdigit():
        return int(raw)
    name = raw.removeprefix("@")
    if USERNAME.match(name):
        return name
    raise TargetError(f"{text!r} is not a user: give a numeric user id or an @username")


def parse_username(text: str) -> str:
    """A username to set on the account ("" removes it)."""
    name = (text or "").strip().removeprefix("@")
    if name and not USERNAME.match(name):
        raise TargetError(
            f"{text!r} is not a valid username: 5 to 32 letters, digits or underscores, starting with a letter"
        )
    return name
