"""Writing an export's chats into an agent's conversations, batch by batch.

Where each chat goes: for an agent on the Telegram transport, its conversation with the chat's peer
(the export's `id`, marked as Telegram marks groups and channels); for a sandbox agent, the sandbox
chat named as the export's chat (`sandbox.services.imported`). Messages keep their ids and dates;
those sent from the agent's own account (`me`) are its own, outgoing.

Every batch is one transaction (`conversations.services.history_import`); ids the conversation
already holds are left alone, so a stopped import resumes by running it again and a finished one
adds nothing the second time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import transaction

from agents.models import Agent, Transport
from conversations.models import Conversation
from conversations.services.history_import import history_import_batch
from conversations.services.ingest import conversation_upsert
from conversations.transport.base import InboundMessage
from cwimport.chatexport.chats import ChatExport, ExportChat
from cwimport.chatexport.messages import ExportMessage
from cwimport.chatexport.reading import ChatExportError
from sandbox.services.chats import SandboxError
from sandbox.services.imported import (
    sandbox_import_check_ids,
    sandbox_import_reserve_ids,
    sandbox_import_target,
)

DEFAULT_BATCH = 500


@dataclass
class ImportSummary:
    """What an import did: stored, already there, skipped by kind ("unsupported", "empty", ...)."""

    imported: int = 0
    already: int = 0
    service: int = 0  # service lines among `imported`
    skipped: Counter = field(default_factory=Counter)
    conversations: list[Conversation] = field(default_factory=list)
    stopped: bool = False

    def line(self) -> str:
        skipped = ", ".join(f"{kind} {count}" for kind, count in sorted(self.skipped.items())) or "none"
        service = f" ({self.service} service lines)" if self.service else ""
        return f"imported {self.imported}{service}, already there {self.already}, skipped: {skipped}"


@dataclass(frozen=True)
class PlannedChat:
    """One chat, ready to write: its records in id order and where they go."""

    chat: ExportChat
    me: int
    messages: tuple[ExportMessage, ...]
    skipped: Counter


class ChatImport:
    """Imports the chosen chats of `export` for `agent`. `stop()` (from a signal handler) ends the
    run after the batch under way; `progress(done, total)` is called after each batch."""

    def __init__(
        self,
        *,
        agent: Agent,
        export: ChatExport,
        me: int | None = None,
        name: str | None = None,
        batch: int = DEFAULT_BATCH,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        self.agent = agent
        self.export = export
        self.name = name
        self.batch = batch
        self.progress = progress or (lambda done, total: None)
        self.stopping = False
        self.planned = [self._plan(chat, me) for chat in export.chats]

    @property
    def total(self) -> int:
        return sum(len(p.messages) for p in self.planned)

    def stop(self) -> None:
        self.stopping = True

    def run(self) -> ImportSummary:
        summary = ImportSummary()
        done = 0
        # Every chat's place first, in one transaction: a chat refused there (a sandbox chat whose own
        # messages take the export's ids) leaves nothing behind, not even another chat's conversation.
        with transaction.atomic():
            targets = [self._target(planned) for planned in self.planned]
        for planned, (conversation, records) in zip(self.planned, targets, strict=True):
            summary.skipped.update(planned.skipped)
            summary.conversations.append(conversation)
            for start in range(0, len(records), self.batch):
                if self.stopping:
                    summary.stopped = True
                    return summary
                chunk = records[start : start + self.batch]
                outcome = history_import_batch(agent=self.agent, conversation=conversation, records=chunk)
                summary.imported += outcome.created
                summary.already += outcome.already
                summary.service += outcome.service
                done += len(chunk)
                self.progress(done, self.total)
        summary.stopped = self.stopping and done < self.total
        return summary

    def _plan(self, chat: ExportChat, me: int | None) -> PlannedChat:
        me = self._me(chat, me)
        skipped: Counter = Counter()
        records = []
        for message in sorted(chat.messages, key=lambda m: m.id):
            if message.kind not in ("message", "service"):
                skipped[message.kind] += 1
            elif message.empty:
                skipped["empty"] += 1
            else:
                records.append(message)
        return PlannedChat(chat=chat, me=me, messages=tuple(records), skipped=skipped)

    def _me(self, chat: ExportChat, given: int | None) -> int:
        """Whose messages are the agent's own: --me, else the agent's Telegram account, else the
        exporting account, else (in a personal chat) the one sender who is not the chat's peer."""
        senders = {m.sender_id for m in chat.messages if m.sender_id is not None and m.kind == "message"}
        me = given or self.agent.telegram_user_id or self.export.account_id
        if me is None and chat.chat_kind == "dm":
            others = senders - {chat.id}
            if len(others) == 1:
                me = others.pop()
            elif not others:
                me = 0  # only the other side wrote: nothing is the agent's
        if me is None:
            raise ChatExportError(
                f"{self.export.display}: {chat.where}: cannot tell which sender is {self.agent.name}: "
                f"give --me USER_ID (the senders' ids: {', '.join(str(s) for s in sorted(senders)) or 'none'})"
            )
        if chat.chat_kind == "dm" and me == chat.id:
            raise ChatExportError(
                f"{self.export.display}: {chat.where}: the chat's id is {self.agent.name}'s own account ({me}): "
                "this export was made from the other side's account; export the chat from the agent's "
                "account, or give --me with the id of the account that made the export"
            )
        if chat.chat_kind == "dm":
            strangers = senders - {chat.id, me}
            if strangers:
                raise ChatExportError(
                    f"{self.export.display}: {chat.where}: messages from {', '.join(map(str, sorted(strangers)))}, "
                    f"who is neither the chat ({chat.id}) nor the agent's account ({me}): give --me with the "
                    "id of the account that made the export"
                )
        return me

    def _target(self, planned: PlannedChat) -> tuple[Conversation, list[InboundMessage]]:
        chat = planned.chat
        pending = planned.messages
        if self.agent.transport != Transport.SANDBOX:
            conversation = conversation_upsert(
                agent=self.agent, peer_id=chat.peer_id, kind=chat.chat_kind, title=chat.name
            )
            return conversation, [self._record(m, planned.me, peer=chat.peer_id, chat=chat) for m in pending]
        name = (self.name or chat.name).strip()[:128]  # a sandbox user's or group's name
        if not name:
            raise ChatExportError(f"{self.export.display}: {chat.where} has no name: give --name NAME")
        try:
            target = sandbox_import_target(
                agent=self.agent, name=name, group=chat.chat_kind != "dm", bot=chat.type == "bot_chat"
            )
            if pending:
                first, last = pending[0].id, pending[-1].id
                sandbox_import_check_ids(target=target, first_id=first, last_id=last)
                sandbox_import_reserve_ids(target=target, last_id=last)
        except SandboxError as exc:
            raise ChatExportError(f"{self.export.display}: {chat.where}: {exc}") from exc
        conversation = conversation_upsert(
            agent=self.agent, peer_id=target.peer_id, kind=chat.chat_kind, title=name
        )
        records = [
            self._record(
                m,
                planned.me,
                peer=target.peer_id,
                chat=chat,
                own_id=target.agent_user_id,
                their_id=target.peer_id if chat.chat_kind == "dm" else None,
            )
            for m in pending
        ]
        return conversation, records

    def _record(
        self,
        message: ExportMessage,
        me: int,
        *,
        peer: int,
        chat: ExportChat,
        own_id: int | None = None,
        their_id: int | None = None,
    ) -> InboundMessage:
        outgoing = message.sender_id is not None and message.sender_id == me
        if outgoing:
            sender_id = own_id or me
            sender_name = message.sender_name or self.agent.name
        else:
            sender_id = their_id or message.sender_id
            sender_name = message.sender_name
        return InboundMessage(
            peer_id=peer,
            chat_kind=chat.chat_kind,
            message_id=message.id,
            date=message.date,
            sender_id=sender_id,
            sender_name=sender_name,
            sender_is_bot=chat.type == "bot_chat" and not outgoing,
            is_outgoing=outgoing,
            text=message.text,
            reply_to_id=message.reply_to_id,
            media=message.media,
            forwarded_from=message.forwarded_from,
            is_service=message.kind == "service",
            edited_at=message.edited,
            chat_title=chat.name,
        )
