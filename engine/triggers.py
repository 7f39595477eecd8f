"""Which ingested events start a new plan, following the design documents.

- In a DM, every message from the other side triggers.
- In a group, only callouts do: a mention of the agent, or a reply to one of its messages. In a
  sandbox group, a message that is none writes an activity line saying so ("not addressed").
- The first message of a DM the agent has never answered (nothing earlier in the mirror at all) triggers
  `new_conversation`, so the prompt tells the agent that someone new is writing to it. Groups always
  trigger `message`: the mirror of a group starts wherever the agent joined, not where the talk began.
- An unread reaction on the agent's last message triggers, in DMs and groups alike.
- Nothing triggers for Telegram's service account (777000: login codes, security notices), in its
  DM or wherever it writes, nor for a bot unless the agent's Answer Bots flag or the conversation's
  "answer bots" setting allows it.
- A message from another agent or a bot that would trigger does not once the chat's run of such
  messages is longer than the agent's hop limit (`engine.loops`).
- A muted chat (the account's notification setting) still triggers on callouts, as the original pays
  attention: a mention of the agent or a reply to one of its messages, and an unread reaction on its
  last message; anything else in it is only recorded.
- A dialog the account marked unread (Telegram's `unread_mark`) is a callout of its own: it starts a
  turn on the chat's newest message, muted or not (`unread_mark_decision`).
- Nothing triggers for a gagged chat, a blocked user, a channel, or a disabled, gagged or stopped
  agent: the message is still recorded.
- Nothing triggers in a group or channel the account cannot write in (`Conversation.cannot_write`: a
  read-only channel, a restricted group, a restriction or ban of the account); a message or reaction
  that would otherwise start a turn there writes an activity line naming why.

An agent asleep per its Daily Schedule (`agents/schedule.py`) still replans, but the tick runs none of
its nodes until it wakes (its consolidation turns aside, engine/consolidation.py): the night's
messages are answered once, in the morning.
"""

from __future__ import annotations

from dataclasses import dataclass

from agents.models import Agent, Transport
from conversations.models import TELEGRAM_SERVICE_USER_ID, ActivityEvent, Conversation, Message, TaskGraph
from conversations.selectors import (
    conversation_last_agent_message_id,
    is_reply_to_agent,
    message_recorded_before,
)
from conversations.services.activity import record_event
from engine.loops import loop_guard_reason

#: Why group chatter starts no turn, and what would (the sandbox group's activity line, docs/ingest.md "Attention").
NOT_ADDRESSED = "group chatter without a callout"
CALLOUTS = (
    "groups answer callouts only (an @mention of the agent, a reply to one of its messages, "
    "a reaction on its last message, or the chat marked unread)"
)


@dataclass(frozen=True)
class Decision:
    trigger: str | None  # "message", "new_conversation" or "reaction" when a replan is due
    reason: str

    def __bool__(self) -> bool:
        return self.trigger is not None


def quiet_reason(*, agent: Agent, conversation: Conversation, callout: bool = False) -> str | None:
    """Why nothing in this conversation may trigger right now, or None. A `callout` (a mention, a
    reply to the agent, a reaction on its message, an unread mark) is heard in a muted chat too."""
    if agent.disabled:
        return "agent disabled"
    if agent.stopped:
        return "agent stopped"
    if agent.gagged:
        return "agent gagged"
    if conversation.muted and not callout:
        return "chat muted"
    if conversation.gagged:
        return "chat gagged"
    if conversation.blocked:
        return "user blocked"
    if conversation.kind == Conversation.Kind.CHANNEL:
        return "channel"
    return None


def message_decision(
    *, agent: Agent, conversation: Conversation, message: Message, reply_to_agent: bool = False
) -> Decision:
    decision = _message_decision(
        agent=agent, conversation=conversation, message=message, reply_to_agent=reply_to_agent
    )
    if decision.reason == NOT_ADDRESSED and agent.transport == Transport.SANDBOX:
        _not_addressed(agent=agent, conversation=conversation, message=message)
    if decision:
        loop = loop_guard_reason(agent=agent, conversation=conversation, message=message)
        if loop:
            return Decision(None, loop)
    return decision


def _message_decision(
    *, agent: Agent, conversation: Conversation, message: Message, reply_to_agent: bool
) -> Decision:
    if message.is_agent:
        return Decision(None, "the agent's own message")
    if message.is_service:
        return Decision(None, "service message")
    if TELEGRAM_SERVICE_USER_ID in (conversation.peer_id, message.sender_id):
        return Decision(None, "Telegram's service account is no conversation partner")
    if message.sender_is_bot and not (agent.answer_bots or conversation.answer_bots):
        return Decision(None, "a bot (allow with the Answer Bots flag or the chat's answer bots setting)")
    mention = message.mentions_agent
    # Whether it replies to the agent matters only in a group or a muted chat (one query, else skipped).
    reply = (
        not mention
        and (conversation.kind != Conversation.Kind.DM or conversation.muted)
        and (reply_to_agent or is_reply_to_agent(conversation=conversation, reply_to_id=message.reply_to_id))
    )
    quiet = quiet_reason(agent=agent, conversation=conversation, callout=mention or reply)
    # A callout in a channel the account cannot post in is still told in the activity log (below).
    if quiet and not (quiet == "channel" and conversation.cannot_write):
        return Decision(None, quiet)
    decision = _callout_decision(conversation=conversation, message=message, mention=mention, reply=reply)
    if decision and conversation.cannot_write:
        return write_refused(agent=agent, conversation=conversation, what=_named(message))
    if quiet:
        return Decision(None, quiet)
    return decision


def _callout_decision(
    *, conversation: Conversation, message: Message, mention: bool, reply: bool
) -> Decision:
    if conversation.kind == Conversation.Kind.DM:
        if _first_in_mirror(conversation=conversation, message=message):
            return Decision(TaskGraph.Trigger.NEW_CONVERSATION, "first message of a new conversation")
        return Decision(TaskGraph.Trigger.MESSAGE, "direct message")
    if mention:
        return Decision(TaskGraph.Trigger.MESSAGE, "mention")
    if reply:
        return Decision(TaskGraph.Trigger.MESSAGE, "reply to the agent")
    return Decision(None, NOT_ADDRESSED)


def _not_addressed(*, agent: Agent, conversation: Conversation, message: Message) -> None:
    """In a sandbox group, why a message gets no answer: the operator testing there reads it in the
    chat's activity. (A Telegram group's chatter is not logged: busy groups would flood the stream.)"""
    record_event(
        ActivityEvent.Kind.INFO,
        agent_id=agent.pk,
        conversation_id=conversation.pk,
        summary=f"{_named(message)} not addressed: {CALLOUTS}",
        data={"message_id": message.message_id, "not_addressed": True},
    )


def _named(message: Message) -> str:
    return f"{message.sender_name or message.sender_id or 'a post'} #{message.message_id}"


def write_refused(*, agent: Agent, conversation: Conversation, what: str) -> Decision:
    """No turn in a chat the account cannot write in (as the original checks before any turn); the
    activity log says why."""
    reason = f"cannot write here: {conversation.cannot_write}"
    record_event(
        ActivityEvent.Kind.INFO,
        agent_id=agent.pk,
        conversation_id=conversation.pk,
        summary=f"{what} not answered: the account {reason}",
        data={"cannot_write": conversation.cannot_write},
    )
    return Decision(None, reason)


def _first_in_mirror(*, conversation: Conversation, message: Message) -> bool:
    """No earlier message of any kind (the agent's, service messages, deleted ones) is recorded."""
    return not message_recorded_before(conversation_id=conversation.pk, message_id=int(message.message_id))


def reaction_decision(
    *, agent: Agent, conversation: Conversation, message: Message, unread: bool
) -> Decision:
    if not unread or not message.is_agent:
        return Decision(None, "not an unread reaction on the agent's message")
    quiet = quiet_reason(agent=agent, conversation=conversation, callout=True)
    if quiet:
        return Decision(None, quiet)
    if message.message_id != conversation_last_agent_message_id(conversation=conversation):
        return Decision(None, "reaction on an older message")
    if conversation.cannot_write:
        return write_refused(
            agent=agent, conversation=conversation, what=f"a reaction on #{message.message_id}"
        )
    return Decision(TaskGraph.Trigger.REACTION, "unread reaction on the agent's last message")


def unread_mark_decision(*, agent: Agent, conversation: Conversation) -> Decision:
    """The account marked the dialog unread: a callout, in a muted chat too (not in Telegram's own)."""
    if conversation.is_telegram_service:
        return Decision(None, "Telegram's service account is no conversation partner")
    quiet = quiet_reason(agent=agent, conversation=conversation, callout=True)
    if quiet:
        return Decision(None, quiet)
    if conversation.cannot_write:
        return write_refused(agent=agent, conversation=conversation, what="the chat marked unread")
    return Decision(TaskGraph.Trigger.MESSAGE, "dialog marked unread")
