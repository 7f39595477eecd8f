"""The versioned REST API (`/api/v1/`): one NinjaAPI, one router per resource (api/routes/)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, ValidationError

from api.core import ApiError, TokenAuth
from api.routes import agents, conversations, recall, records, sandbox, status, work

api = NinjaAPI(
    title="Cindy API",
    version="1",
    description=(
        "Script your agents. Every call sends `Authorization: Bearer TOKEN` (make one with "
        "`manage.py apitoken USERNAME` or in the admin's API tokens page) and acts as that staff user, "
        "with their permissions. Lists page with `limit` and `offset` and give the `next` page's URL."
    ),
    urls_namespace="api",
    auth=TokenAuth(),
    docs_url=None,
)


@api.exception_handler(ApiError)
def _api_error(request: HttpRequest, exc: ApiError) -> HttpResponse:
    return api.create_response(request, {"detail": exc.detail, "field": exc.field}, status=exc.status)


@api.exception_handler(ValidationError)
def _malformed(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    """django-ninja's field errors, with the first one's field named as every other error names it."""
    field = None
    if exc.errors:
        location = [str(part) for part in exc.errors[0].get("loc", ())]
        field = (
            ".".join(
                location[1:]
                if location[:1] in (["body"], ["query"], ["path"], ["form"], ["file"])
                else location
            )
            or None
        )
        if field and field.startswith("body."):
            field = field[len("body.") :]
    return api.create_response(request, {"detail": exc.errors, "field": field}, status=422)


@api.exception_handler(AuthenticationError)
def _unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    response = api.create_response(
        request,
        {
            "detail": "send a valid API token as `Authorization: Bearer TOKEN` (make one with "
            "`manage.py apitoken USERNAME`); revoked or expired tokens and users who are no longer "
            "active staff are refused",
            "field": "Authorization",
        },
        status=401,
    )
    response["WWW-Authenticate"] = 'Bearer realm="cindy api"'
    return response


api.add_router("/agents", agents.router)
api.add_router("/agents", conversations.router)
api.add_router("/agents", records.router)
api.add_router("/agents", work.router)
api.add_router("/agents", sandbox.router)
api.add_router("/agents", recall.router)
api.add_router("", status.router)
