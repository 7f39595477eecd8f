"""What the API handlers (`api`, `chats_api`) see of the stand-in: an account key's state, the
connection a request came on and the server answering it, described here so that the handlers need
not import the server that runs them (`server.Connection`, `server.StandIn`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from telethon.crypto import AuthKey

from .world import World


@dataclass
class KeyState:
    auth_key: AuthKey
    salt: int
    user_id: int | None = None
    pending_user: int | None = None  # signed in with a code, waiting for the password
    revoked: str = ""
    connections: set = field(default_factory=set)


class Caller(Protocol):
    """The connection a request came on."""

    key: KeyState | None

    @property
    def user_id(self) -> int | None: ...


class Endpoint(Protocol):
    """The server answering: where it listens, its world, and the switches tests set on it."""

    host: str
    port: int
    world: World
    random_id_duplicate_error: bool
