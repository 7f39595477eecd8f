"""What could have caused a turn's tasks, as the policy checks read it (`llm.policy`): the messages
since the agent's last turn, those the prompt showed, and the text that came from outside."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from conversations.models import Conversation, Message
from llm.conversation import ChatMessage

#: More messages than this since the agent's last turn are not checked one by one: shutdown is refused.
MAX_CHECKED_MESSAGES = 500


def partner_is_operator(conversation: Conversation) -> bool:
    """A direct message with one of CINDY_OPERATOR_IDS."""
    return conversation.kind == Conversation.Kind.DM and conversation.peer_id in set(
        settings.CINDY_OPERATOR_IDS
    )


@dataclass(frozen=True)
class Source:
    """One message the turn could have acted on."""

    message_id: int
    sender_id: int | None
    sender_name: str
    forwarded_from: str

    @classmethod
    def of(cls, message: Message | ChatMessage) -> Source:
        return cls(message.message_id, message.sender_id, message.sender_name, message.forwarded_from)

    def describe(self) -> str:
        who = f"{self.sender_name} ({self.sender_id})" if self.sender_name else f"sender {self.sender_id}"
        return f"message #{self.message_id} from {who}"


@dataclass(frozen=True)
class TurnInputs:
    """What could have caused a turn's tasks (see the module docstring)."""

    conversation: Conversation
    since_last_turn: tuple[Source, ...] = ()
    shown: tuple[Source, ...] = ()
    outside: tuple[str, ...] = ()  # e.g. "2 retrieved web pages", "a cross-chat intention"
    # The part of `outside` anybody could have written: web pages, and an intention carried from a
    # turn that read such text. (An intention the agent formed from its own chat is outside, not this.)
    untrusted: tuple[str, ...] = ()
    too_many: bool = False  # more than MAX_CHECKED_MESSAGES since the agent's last turn
    trigger: str = ""  # the graph's trigger: message, xsend, event, schedule, ...
    xsend_depth: int = 0  # the xsend hops that led to this turn (conversations.services.carry)
