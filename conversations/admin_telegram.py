"""The conversation admin's Telegram side: leaving chats and showing the requests made for a chat."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.utils.html import format_html, format_html_join

from agents.models import Agent, GatewayRequest
from agents.services.telegram_requests import conversation_request_leave, gateway_request_describe
from cindy_site import clock
from conversations.models import Conversation

#: Requests about one chat, shown on its admin page.
CHAT_KINDS = (
    GatewayRequest.Kind.SET_MUTED,
    GatewayRequest.Kind.LEAVE_CHAT,
    GatewayRequest.Kind.REFRESH_PROFILE,
)


def gateway_note(agent: Agent, done: str) -> str:
    """What happens next, for the message shown after a change that Telegram must carry out."""
    lease = getattr(agent, "lease", None)
    if lease is not None and lease.expires_at > clock.now():
        return f"Chat {done} here; the gateway applies it in Telegram within seconds."
    return (
        f"Chat {done} here; no gateway holds {agent.name} now, so Telegram gets the change when "
        "one starts (manage.py runagents)."
    )


def conversations_request_leave(*, conversations: list[Conversation]) -> str:
    """Ask the gateway to leave each group or channel; returns the message for the operator."""
    asked, refused = 0, []
    for conversation in conversations:
        try:
            conversation_request_leave(agent=conversation.agent, peer_id=conversation.peer_id)
            asked += 1
        except ValidationError as exc:
            refused.append(f"{conversation}: {' '.join(exc.messages)}")
    message = f"Asked the gateway to leave {asked} chat(s)."
    return message + (" Not left: " + "; ".join(refused) if refused else "")


def telegram_requests_display(conversation: Conversation) -> str:
    if conversation.pk is None:
        return "-"
    rows = [
        r
        for r in GatewayRequest.objects.filter(agent_id=conversation.agent_id, kind__in=CHAT_KINDS).order_by(
            "-created", "-id"
        )[:50]
        if int((r.params or {}).get("peer_id", 0) or 0) == conversation.peer_id
    ][:5]
    if not rows:
        return "None yet."
    return format_html(
        "<ul style='margin:0;padding-left:1.2em'>{}</ul>",
        format_html_join(
            "",
            "<li>{} · {} · {}</li>",
            (
                (
                    f"{r.created:%Y-%m-%d %H:%M:%S}",
                    gateway_request_describe(r),
                    f"request failed: {r.error}"
                    if r.status == GatewayRequest.Status.FAILED
                    else r.get_status_display(),
                )
                for r in rows
            ),
        ),
    )
