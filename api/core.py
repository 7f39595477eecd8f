"""What every API resource shares: token authentication, errors, agent lookups and paging.

- Authentication is a bearer token only (`api.services.tokens`); cookies and sessions are ignored,
  so the API needs no CSRF token. A missing, unknown, revoked or expired token, or one whose user is
  no longer active staff, gets 401.
- Agent-scoped lookups ask `agents.access`: an agent the user may not see is a 404 (its existence is
  not revealed), a visible one without the permission the operation needs is a 403 naming it.
- Lists page with `limit` (1 to MAX_LIMIT) and `offset` in a stable order; `next` is the URL of the
  following page, or null on the last.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Annotated, Any
from urllib.parse import urlencode

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Field, Schema
from ninja.security import HttpBearer
from pydantic import create_model

from agents.access import agents_for, has_agent_perm
from agents.models import Agent
from api.services.tokens import api_token_user

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
# Bounds that keep numbers inside what every database stores (64-bit integers).
MAX_ID = 2**62
MAX_OFFSET = 10**9

Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT, description=f"Items per page, 1 to {MAX_LIMIT}")]
Offset = Annotated[int, Field(ge=0, le=MAX_OFFSET, description="Items to skip (the `next` link sets it)")]
RowId = Annotated[int, Field(ge=1, le=MAX_ID)]
PeerId = Annotated[int, Field(ge=-MAX_ID, le=MAX_ID, description="A Telegram peer id")]


class ApiError(Exception):
    """An answer other than success: the status, what is wrong and how to fix it, and the field."""

    def __init__(self, status: int, detail: str, *, field: str | None = None) -> None:
        super().__init__(detail)
        self.status, self.detail, self.field = status, detail, field


class ErrorOut(Schema):
    detail: str | list[dict[str, Any]] = Field(
        description="What is wrong and how to fix it (a list of field errors for malformed requests)"
    )
    field: str | None = Field(None, description="The request field at fault, when there is one")


#: The error answers every authenticated operation may give, for the schema (413: a body past the
#: form-data limit, `cindy_site.body_limit`).
ERRORS: dict[int, type[Schema]] = {
    400: ErrorOut,
    401: ErrorOut,
    403: ErrorOut,
    404: ErrorOut,
    413: ErrorOut,
    422: ErrorOut,
}


class TokenAuth(HttpBearer):
    """`Authorization: Bearer TOKEN`; the token's user becomes `request.user` (and `request.auth`)."""

    def authenticate(self, request: HttpRequest, token: str) -> Any | None:
        user = api_token_user(token.strip())
        if user is not None:
            request.user = user
        return user


def visible_agent(request: HttpRequest, agent_id: int, perm: str | None = None) -> Agent:
    """The agent, if the user may see it (else 404) and, when `perm` is given, holds it (else 403)."""
    agent = agents_for(request.user).filter(pk=agent_id).first()
    if agent is None:
        raise ApiError(
            404, f"agent {agent_id} does not exist or is not visible to you: list yours at /api/v1/agents"
        )
    if perm is not None and not has_agent_perm(request.user, perm, agent):
        raise ApiError(
            403, f"{request.user.get_username()} lacks the permission {perm} on agent {agent.name}"
        )
    return agent


def page_schema(item: type[Schema], name: str) -> type[Schema]:
    """The page envelope for `item`: items, the total count and the next page's URL."""
    return create_model(
        name,
        __base__=Schema,
        items=(list[item], ...),
        count=(int, Field(..., description="Items on all pages")),
        next=(str | None, Field(None, description="URL of the next page; null on the last page")),
    )


def page(
    request: HttpRequest,
    queryset: QuerySet | Iterable[Any],
    *,
    limit: int,
    offset: int,
    row: Callable[[Any], Any],
) -> dict[str, Any]:
    """One page of `queryset` (which must be in a stable order), each item passed through `row`."""
    if isinstance(queryset, QuerySet):
        count = queryset.count()
        items = list(queryset[offset : offset + limit])
    else:
        everything = list(queryset)
        count, items = len(everything), everything[offset : offset + limit]
    following = None
    if offset + limit < count:
        query = request.GET.copy()
        query["offset"], query["limit"] = str(offset + limit), str(limit)
        following = request.build_absolute_uri(f"{request.path}?{urlencode(sorted(query.items()))}")
    return {"items": [row(item) for item in items], "count": count, "next": following}
