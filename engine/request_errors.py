"""How a failed gateway request reads to the operator: shared by the request runner
(`engine.requests`) and the account requests it hands off (`engine.account_requests`)."""

from __future__ import annotations

import logging

from agents.models import GatewayRequest
from agents.telegram_targets import TargetError
from conversations.transport.base import AuthError, PermanentError

logger = logging.getLogger(__name__)


def request_error(request: GatewayRequest, exc: BaseException) -> str:
    """The reason a request failed, as the operator reads it on the request and in the admin."""
    if isinstance(exc, KeyError):
        return f"{request.get_kind_display()} request {request.pk} is missing parameter {exc}"
    if isinstance(exc, TargetError):
        return str(exc)
    logger.warning("gateway request %s (%s) failed: %r", request.pk, request.kind, exc)
    if isinstance(exc, (PermanentError, AuthError)):
        detail = str(exc)
        return f"Telegram refused: {exc.reason}" + (f" ({detail})" if detail != exc.reason else "")
    return f"{type(exc).__name__}: {exc}"
