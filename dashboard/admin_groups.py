"""The console's home page: models grouped by what an operator does, internals for owners only.

Django lists every app's models alphabetically, about sixty tables. `CindyAdminSite.get_app_list`
regroups them with `admin_app_list`: the groups below in this order, each model under the name given
here when it has one. `INTERNALS` holds the engine's own bookkeeping (leases, queue rows, task graphs,
Telegram sessions and update states, caches, wake-up counters, index marks): operators never edit it,
and it is listed only for owners, last, as "Internals". Their pages still open from links (a node on
the dashboard, a conversation's active graph) for whoever holds the permission; only the listing is
kept short. A registered model that no group names lands in "Other", which a test keeps empty.
"""

from __future__ import annotations

from typing import Any

#: (group name, [(model label, display name or None for the model's own), ...]) in display order.
GROUPS: tuple[tuple[str, tuple[tuple[str, str | None], ...]], ...] = (
    (
        "Agents",
        (
            ("agents.agent", None),
            ("agents.roleprompt", None),
            ("agents.agentdocument", None),
        ),
    ),
    (
        "Conversations",
        (
            ("conversations.conversation", None),
            ("conversations.message", None),
            ("conversations.voicenote", None),
            ("llm.translation", None),
            ("conversations.activityevent", None),
        ),
    ),
    (
        "Memory",
        (
            ("memory.memory", None),
            ("memory.curatedmemoryfile", None),
            ("memory.note", None),
            ("memory.plan", None),
            ("memory.intention", None),
            ("memory.summary", None),
        ),
    ),
    (
        "Schedule and initiative",
        (
            ("memory.scheduleentry", None),
            ("memory.scheduledevent", None),
            ("media_catalog.libraryitem", None),
        ),
    ),
    (
        "Media and stickers",
        (
            ("media_catalog.mediadescription", None),
            ("media_catalog.stickerset", None),
            ("media_catalog.sticker", None),
        ),
    ),
    (
        "LLMs and costs",
        (
            ("llm.offeredmodel", None),
            ("llm.llmcall", None),
            ("llm.modelprice", None),
            ("llm.siteparameter", None),
            ("llm.llmendpoint", None),
        ),
    ),
    (
        "Sandbox",
        (
            ("sandbox.sandboxchat", None),
            ("sandbox.sandboxuser", None),
            ("sandbox.sandboxmessage", None),
        ),
    ),
    (
        "Staff and sign-in",
        (
            ("auth.user", None),
            ("auth.group", "Roles (groups)"),
            ("agents.agentgrant", None),
            ("agents.accessrequest", None),
            ("api.apitoken", None),
            ("otp_totp.totpdevice", "Sign-in: authenticator apps"),
            ("otp_static.staticdevice", "Sign-in: backup codes"),
            ("agents.telegramdevice", "Sign-in: codes by Telegram"),
            ("account.emailaddress", None),
            ("socialaccount.socialaccount", None),
            ("socialaccount.socialapp", None),
        ),
    ),
)

INTERNALS_NAME = "Internals"
#: The engine's bookkeeping: listed for owners only.
INTERNALS: tuple[str, ...] = (
    "agents.agentlease",
    "agents.gatewayrequest",
    "agents.telegramsession",
    "agents.telegramupdatestate",
    "agents.telegramentity",
    "conversations.taskgraph",
    "conversations.tasknode",
    "conversations.gatewaywake",
    "conversations.backfillmark",
    "memory.schedulerefresh",
    "media_catalog.stickeraccess",
    "llm.explicitcache",
    "llm.llmusagedaily",
    "llm.routebreaker",
    "sandbox.sandboxmember",
    "sandbox.sandboxtopic",
    "sandbox.sandboxupdate",
    "socialaccount.socialtoken",
    "django_q.ormq",
    "django_q.schedule",
    "django_q.success",
    "django_q.failure",
)
INTERNAL = frozenset(INTERNALS)

OTHER_NAME = "Other"


def _label(entry: dict[str, Any]) -> str:
    return entry["model"]._meta.label_lower


def _group(name: str, models: list[dict[str, Any]]) -> dict[str, Any]:
    slug = name.lower().replace(" ", "-")
    return {
        "name": name,
        "app_label": slug,
        "app_url": f"#{slug}",
        "has_module_perms": True,
        "models": models,
    }


def admin_app_list(
    app_list: list[dict[str, Any]], *, owner: bool, app_label: str | None
) -> list[dict[str, Any]]:
    """Django's `app_list` (apps with the models the user may see) regrouped for the index.

    For one app's page (`app_label`), the app stays as Django built it, less its internal models for
    non-owners."""
    if app_label is not None:
        kept = []
        for app in app_list:
            models = [m for m in app["models"] if owner or _label(m) not in INTERNAL]
            if models:
                kept.append({**app, "models": models})
        return kept

    by_label = {_label(m): m for app in app_list for m in app["models"]}
    grouped = []
    for name, members in GROUPS:
        models = []
        for label, display in members:
            entry = by_label.pop(label, None)
            if entry is not None:
                models.append({**entry, "name": display} if display else entry)
        if models:
            grouped.append(_group(name, models))
    internals = [by_label.pop(label) for label in INTERNALS if label in by_label]
    if by_label:
        grouped.append(_group(OTHER_NAME, sorted(by_label.values(), key=lambda m: str(m["name"]))))
    if owner and internals:
        grouped.append(_group(INTERNALS_NAME, internals))
    return grouped
