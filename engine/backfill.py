"""Backfill: a Telegram agent's older history, fetched into the mirror (`manage.py backfill`).

The mirror holds what the agent saw since it first ran; a backfill fetches what came before, chat by
chat, newest page first, so that recall (recall/) can find it. The command never talks to Telegram:
it asks the gateway that holds the agent for one page at a time (a `backfill_page` gateway request,
engine/backfill_requests.py), waits for the answer, and asks for the page before it, until the chat's
first message or the date asked for. The gateway stores each page with the chat's `BackfillMark`, so
a run that stops anywhere (Ctrl-C, a failure, a dead gateway) goes on from the last stored page when
started again. Telegram's flood waits are waited out and the backfill goes on.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass

from agents.models import Agent, GatewayRequest
from agents.models import Transport as TransportKind
from agents.services.telegram_requests import gateway_request_create
from cindy_site.clock import now
from cindy_site.progress import ProgressPace
from conversations.models import BackfillMark, Conversation
from engine.backfill_requests import PAGE_LIMIT
from engine.leases import leases_live

Status = GatewayRequest.Status
#: Seconds a page request may wait for a gateway to take it before the backfill gives up.
CLAIM_TIMEOUT = 60.0
#: Seconds between two looks at a page request the gateway has not answered yet.
POLL_SECONDS = 0.2


class BackfillError(Exception):
    """A backfill that cannot start or go on; the message names the value and what to do."""


@dataclass
class ChatOutcome:
    peer_id: int
    title: str
    fetched: int = 0
    pages: int = 0
    waited: int = 0  # seconds of flood waits
    state: str = ""  # complete, reached, already, failed, interrupted
    oldest_date: dt.datetime | None = None
    error: str = ""

    def line(self) -> str:
        back = f", back to {self.oldest_date:%Y-%m-%d %H:%M}" if self.oldest_date else ""
        waited = f", {self.waited} s of flood waits" if self.waited else ""
        what = {
            "complete": "the whole chat is in the mirror",
            "reached": "reached the date asked for",
            "already": "nothing to do: an earlier run got here",
            "interrupted": "interrupted",
            "failed": f"failed: {self.error}",
            "": "going on",
        }[self.state]
        return f"{self.title} ({self.peer_id}): {self.fetched} messages in {self.pages} pages{back}{waited}; {what}"


def backfill_check(agent: Agent) -> None:
    """Backfill is for Telegram agents that a gateway runs now."""
    if agent.transport != TransportKind.TELEGRAM:
        raise BackfillError(
            f"agent {agent.name} is a {agent.get_transport_display()} agent: backfill fetches a Telegram "
            "account's older history, and a sandbox agent's chats are all in the mirror already"
        )
    if agent.pk not in leases_live(agent_ids=[agent.pk]):
        raise BackfillError(
            f"agent {agent.name} is not running in any gateway (no live lease): the gateway fetches the "
            "history, so start `manage.py runagents` (or the service) with this agent first"
        )


def backfill_chats(agent: Agent, peer_ids: list[int] | None = None) -> list[tuple[int, str]]:
    """(peer id, title) of the chats to backfill: the ones named, else every chat in the agent's
    mirror, the latest first. A forum's topics are one chat."""
    rows = Conversation.objects.filter(agent=agent).select_related("agent").order_by("topic_id", "pk")
    titles: dict[int, str] = {}
    latest: dict[int, dt.datetime] = {}
    for conversation in rows:
        titles.setdefault(conversation.peer_id, conversation.title or conversation.display_title)
        if conversation.last_message_at and conversation.last_message_at > latest.get(
            conversation.peer_id, dt.datetime.min.replace(tzinfo=dt.UTC)
        ):
            latest[conversation.peer_id] = conversation.last_message_at
    if peer_ids:
        unknown = [str(p) for p in peer_ids if p not in titles]
        if unknown:
            raise BackfillError(
                f"agent {agent.name} has no chat {', '.join(unknown)} in its mirror: --chat takes the "
                "Telegram chat id of one of its conversations (the dashboard's Users page and the admin's "
                "conversations list show them)"
            )
        return [(p, titles[p]) for p in dict.fromkeys(peer_ids)]
    oldest = dt.datetime.min.replace(tzinfo=dt.UTC)
    return sorted(titles.items(), key=lambda item: latest.get(item[0], oldest), reverse=True)


def _finished(mark: BackfillMark | None, since: dt.datetime | None) -> str:
    if mark is None:
        return ""
    if mark.complete:
        return "complete"
    if since is not None and mark.oldest_date is not None and mark.oldest_date <= since:
        return "reached"
    return ""


def gateway_wait(request_id: int, *, stopping: Callable[[], bool], claim_timeout: float = CLAIM_TIMEOUT):
    """Wait until the gateway finished the request; returns it. A request no gateway took within
    `claim_timeout` seconds, or one still waiting when Ctrl-C came, is withdrawn (BackfillError)."""
    started = time.monotonic()
    while True:
        request = GatewayRequest.objects.get(pk=request_id)
        if request.status in (Status.DONE, Status.FAILED):
            return request
        if request.status == Status.PENDING:
            late = time.monotonic() - started > claim_timeout
            if late or stopping():
                why = (
                    f"no gateway took it within {claim_timeout:.0f} s"
                    if late
                    else "interrupted before it ran"
                )
                withdrawn = GatewayRequest.objects.filter(pk=request_id, status=Status.PENDING).update(
                    status=Status.FAILED, finished=now(), error=f"withdrawn by the backfill: {why}"
                )
                if withdrawn:
                    raise BackfillError(
                        f"page request {request_id} withdrawn: {why}; is the gateway running agent "
                        f"{request.agent.name}? (`manage.py runagents`)"
                        if late
                        else f"page request {request_id} withdrawn: {why}"
                    )
        time.sleep(POLL_SECONDS)


class Backfill:
    """One agent's backfill, chat after chat. `wait(request_id)` returns the finished page request
    (`gateway_wait`); `pause(seconds)` waits out a flood wait; `stopping()` says Ctrl-C came."""

    def __init__(
        self,
        *,
        agent: Agent,
        since: dt.datetime | None,
        out: Callable[[str], None],
        wait: Callable[[int], GatewayRequest],
        pause: Callable[[float], None],
        stopping: Callable[[], bool],
        page_limit: int = PAGE_LIMIT,
    ) -> None:
        self.agent, self.since, self.out = agent, since, out
        self.wait, self.pause, self.stopping = wait, pause, stopping
        self.page_limit = page_limit
        self.outcomes: list[ChatOutcome] = []

    def run(self, chats: list[tuple[int, str]]) -> list[ChatOutcome]:
        """Backfill the chats in turn; `outcomes` holds those finished, also when this raises."""
        for peer_id, title in chats:
            if self.stopping():
                break
            self.outcomes.append(self.chat(peer_id, title))
        return self.outcomes

    def chat(self, peer_id: int, title: str) -> ChatOutcome:
        outcome = ChatOutcome(peer_id=peer_id, title=title)
        mark = BackfillMark.objects.filter(agent=self.agent, peer_id=peer_id).first()
        outcome.oldest_date = mark.oldest_date if mark else None
        if _finished(mark, self.since):
            outcome.state = "already"
            self.out(f"{self.agent.name}: {outcome.line()}")
            return outcome
        pace = ProgressPace()
        while not outcome.state:
            if self.stopping():
                outcome.state = "interrupted"
                break
            before_id = mark.oldest_message_id if mark and mark.oldest_message_id else 0
            request = gateway_request_create(
                agent=self.agent,
                kind=GatewayRequest.Kind.BACKFILL_PAGE,
                params={"peer_id": peer_id, "before_id": before_id, "limit": self.page_limit},
            )
            try:
                done = self.wait(request.pk)
            except BackfillError:
                if not self.stopping():
                    raise  # no gateway answers: the other chats would wait in vain too
                outcome.state = "interrupted"
                break
            if done.status == Status.FAILED:
                outcome.state, outcome.error = "failed", done.error
                break
            result = done.result or {}
            # A page's request is bookkeeping once read (the mark keeps the progress): thousands of
            # them would bury the account's other requests. A failed one stays, for its reason.
            GatewayRequest.objects.filter(pk=done.pk, status=Status.DONE).delete()
            if result.get("flood_wait"):
                seconds = int(result["flood_wait"])
                self.out(
                    f"{self.agent.name}: {title} ({peer_id}): Telegram asks to wait {seconds} s; waiting"
                )
                outcome.waited += seconds
                self.pause(seconds)
                continue
            outcome.pages += 1
            outcome.fetched += int(result.get("stored") or 0)
            mark = BackfillMark.objects.get(agent=self.agent, peer_id=peer_id)
            outcome.oldest_date = mark.oldest_date
            outcome.state = _finished(mark, self.since)
            if not outcome.state and pace.due():
                self.out(f"{self.agent.name}: {outcome.line()}")
        self.out(f"{self.agent.name}: {outcome.line()}")
        return outcome


def interruptible_sleep(stopping: Callable[[], bool]) -> Callable[[float], None]:
    """A flood wait's pause that ends early on Ctrl-C."""

    def pause(seconds: float) -> None:
        end = time.monotonic() + seconds
        while not stopping() and time.monotonic() < end:
            time.sleep(min(1.0, end - time.monotonic()))

    return pause
