"""Every URL of the site, walked with a verified staff user who holds no model permission.

The URLs come from the URL conf itself, so a view added without a permission check fails here: a
POST to any URL must answer 403 (or 405 where the view takes no POST), unless the URL is listed in
`NO_PERMISSION_NEEDED` with the reason; and neither a POST nor a GET may change a single row of any
table (the session table aside). Then the actions named one by one: the Telegram account and sign-in
pages, and the dashboard's controls, with the data a real form sends.
"""

from __future__ import annotations

import re

import pytest
from django.apps import apps
from django.contrib.sessions.models import Session
from django.db import connection
from django.urls import URLPattern, URLResolver, get_resolver
from django_otp.plugins.otp_totp.models import TOTPDevice

from agents.models import Agent, AgentGrant, GatewayRequest, Transport
from cindy_site.clock import now
from cindy_site.testing.staff import verify_client
from conversations.models import Conversation, Message, TaskGraph, TaskNode
from sandbox.services.chats import sandbox_say

pytestmark = pytest.mark.django_db

#: URLs any verified staff may POST to, each with the reason. Everything else must refuse.
NO_PERMISSION_NEEDED = {
    "admin:index": "reads: the console's index",
    "admin:app_list": "reads: an app's index, listing only the models the user may see",
    "admin:login": "signs in (the caller's own session)",
    "admin:password_change": "changes the caller's own password",
    "admin:password_change_done": "reads: a confirmation page",
    "admin:jsi18n": "reads: the admin's JavaScript translations",
    "admin:view_on_site": "reads: a redirect to an object's page",
    "admin:otp_devices": "reads: the caller's own sign-in devices",
    "admin:otp_enroll_totp": "adds a sign-in device to the caller's own account",
    "admin:otp_static_codes": "replaces the caller's own backup codes",
    "admin:otp_enroll_telegram": "adds a sign-in device to the caller's own account",
    "dashboard:index": "reads: the dashboard",
    "dashboard:conversation": "reads: what the agent's prompt shows of a conversation",
    "dashboard:users": "reads: the partners list",
    "dashboard:user": "reads: one partner's page",
    "dashboard:sandbox_photo": "reads: a photo uploaded in the sandbox",
    "home": "reads: a redirect to the dashboard",
    "<favicon.ico>": "reads: a redirect to the icon",
    "admin:api_apitoken_changelist": "the caller's own API tokens (its revoke action acts on theirs only)",
    "admin:api_apitoken_add": "makes an API token for the caller's own account",
    "api:openapi-json": "reads: the REST API's schema",
    "api:api-root": "the REST API's root (404)",
}
#: The REST API reads no session: a signed-in browser gets 401 there, whatever its permissions.
API_NAMESPACE = "api:"
#: Django's own admin views that only read, whatever the method: an object's history, and the
#: redirect from an object's URL to its change page.
READ_ONLY_ADMIN = re.compile(r"^admin:(\w+_history|<admin/\w+/\w+/<path:object_id>/>)$")
#: URLs not walked, with the reason.
NOT_WALKED = {
    "admin:logout": "ends the caller's own session (and so the walk)",
    "admin:<catch-all>": "matches only URLs that do not exist (404)",
}


def _routes(resolver: URLResolver, prefix: str = "", namespace: str = ""):
    """(name, route, pattern) of every URL pattern, depth first."""
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from _routes(entry, prefix + str(entry.pattern), inner)
        elif isinstance(entry, URLPattern):
            route = prefix + str(entry.pattern)
            name = f"{namespace}{entry.name}" if entry.name else f"{namespace}<{_unnamed(route)}>"
            yield name, route


def _unnamed(route: str) -> str:
    if route.endswith("(?P<url>.*)$"):
        return "catch-all"
    return route


def _model_for(name: str):
    """The model an admin URL name (`admin:<app>_<model>_<view>`) belongs to, if any."""
    short = name.split(":", 1)[1]
    for model in apps.get_models():
        if short.startswith(f"{model._meta.app_label}_{model._meta.model_name}_"):
            return model
    return None


def _model_for_route(route: str):
    match = re.match(r"^admin/(\w+)/(\w+)/", route)
    if match:
        try:
            return apps.get_model(match.group(1), match.group(2))
        except LookupError:
            return None
    return None


def _some_pk(model) -> str:
    if model is None:
        return "1"
    pk = model._default_manager.order_by("pk").values_list("pk", flat=True).first()
    return str(pk if pk is not None else 1)


def concrete(name: str, route: str, cast: dict) -> str:
    """`route` with every parameter filled from the cast (or an existing row of its model)."""
    model = _model_for(name) if name.startswith("admin:") else None
    model = model or _model_for_route(route)
    values = {
        "agent_id": str(cast["agent"].pk),
        "conversation_id": str(cast["conversation"].pk),
        "peer_id": str(cast["conversation"].peer_id),
        "fmt": "md",
        "name": "photo.jpg",
        "app_label": "agents",
        "content_type_id": "1",
    }

    def fill(match: re.Match) -> str:
        key = match.group("key")
        return values.get(key) or _some_pk(model)

    url = re.sub(r"<(?:\w+:)?(?P<key>\w+)>", fill, route)
    url = re.sub(r"\(\?P<(?P<key>\w+)>[^)]*\)", fill, url)
    return "/" + url.lstrip("^").rstrip("$")


def snapshot() -> dict[str, list]:
    """Every row of every table but the sessions' (plain SQL: the walk takes one after each request)."""
    rows = {}
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        for model in apps.get_models():
            if model is Session or model._meta.proxy:
                continue
            meta = model._meta
            cursor.execute(f"SELECT * FROM {quote(meta.db_table)} ORDER BY {quote(meta.pk.column)}")
            rows[meta.label] = cursor.fetchall()
    return rows


def changed(before: dict[str, list], after: dict[str, list]) -> list[str]:
    return [label for label in before if before[label] != after[label]]


@pytest.fixture
def bare_staff(client, django_user_model):
    """A client signed in as active, OTP-verified staff without any model permission."""
    user = django_user_model.objects.create_user("intern", "intern@example.com", "x", is_staff=True)
    device = TOTPDevice.objects.create(user=user, name="phone", confirmed=True)
    client.force_login(user)
    verify_client(client, device)
    return client


@pytest.fixture
def cast(db):
    agent = Agent.objects.create(
        name="Wendy", phone="+15550001", instructions="x", transport=Transport.SANDBOX
    )
    said = sandbox_say(agent=agent, text="hello")
    conversation = Conversation.objects.create(agent=agent, peer_id=said.sender.pk, kind="dm")
    Message.objects.create(
        conversation=conversation, message_id=1, sender_id=said.sender.pk, text="hi", date=now()
    )
    graph = TaskGraph.objects.create(
        conversation=conversation, active_slot=conversation.pk, trigger="message", created=now()
    )
    node = TaskNode.objects.create(
        graph=graph, conversation=conversation, agent=agent, kind="wait", not_before=now(), created=now()
    )
    GatewayRequest.objects.create(
        agent=agent,
        kind=GatewayRequest.Kind.READ_ACCOUNT,
        status=GatewayRequest.Status.DONE,
        created=now(),
        finished=now(),
        result={"profile": {"first_name": "Wendy", "photos": [{"id": 5, "file": "x.jpg"}]}, "contacts": []},
    )
    return {"agent": agent, "conversation": conversation, "node": node, "chat_id": said.chat_id}


def walk() -> list[tuple[str, str]]:
    return [(name, route) for name, route in _routes(get_resolver()) if name not in NOT_WALKED]


def test_the_walk_covers_every_console_and_dashboard_view():
    names = {name for name, _ in walk()}
    assert len(names) > 200
    for expected in (
        "admin:agents_agent_telegram",
        "admin:agents_agent_signin",
        "dashboard:conversation_gag",
        "dashboard:conversation_cancel",
        "dashboard:conversation_translate",
        "dashboard:sandbox_send",
    ):
        assert expected in names


def test_no_url_lets_staff_without_permissions_change_anything(bare_staff, cast):
    let_through, effects = [], []
    before = snapshot()
    for name, route in walk():
        url = concrete(name, route, cast)
        for method in ("post", "get"):
            response = getattr(bare_staff, method)(url)
            after = snapshot()  # also the next request's "before"
            if changed(before, after):
                effects.append(f"{method.upper()} {url} ({name}) changed {changed(before, after)}")
            before = after
            refusable = name not in NO_PERMISSION_NEEDED and not READ_ONLY_ADMIN.match(name)
            refusals = (401, 403, 405) if name.startswith(API_NAMESPACE) else (403, 405)
            if method == "post" and refusable and response.status_code not in refusals:
                let_through.append(f"POST {url} ({name}) answered {response.status_code}")
    assert not let_through, "\n".join(let_through)
    assert not effects, "\n".join(effects)


ACCOUNT_ACTIONS = [
    {"action": "read"},
    {"action": "profile", "profile-first_name": "Mallory"},
    {"action": "delete_contacts", "user_id": ["77"]},
    {"action": "join", "join-target": "@somegroup"},
    {"action": "contact", "contact-target": "77", "contact-first_name": "Bob"},
    {"action": "delete_photo", "photo_id": "5"},
]


@pytest.mark.parametrize("data", ACCOUNT_ACTIONS, ids=lambda d: d["action"])
def test_the_account_page_refuses_every_action_without_the_change_permission(bare_staff, cast, data):
    agent = cast["agent"]
    before = snapshot()

    response = bare_staff.post(f"/admin/agents/agent/{agent.pk}/telegram/", data)

    assert response.status_code == 403
    assert not changed(before, snapshot())


@pytest.mark.parametrize("action", ["start", "code", "password"])
def test_the_sign_in_page_refuses_without_the_change_permission(bare_staff, cast, action):
    agent = cast["agent"]
    before = snapshot()

    response = bare_staff.post(
        f"/admin/agents/agent/{agent.pk}/sign-in/",
        {"action": action, "code-code": "12345", "password-password": "hunter2"},
    )

    assert response.status_code == 403
    assert not changed(before, snapshot())


def test_the_account_pages_need_the_view_permission_to_be_seen(bare_staff, cast):
    agent = cast["agent"]
    assert bare_staff.get(f"/admin/agents/agent/{agent.pk}/telegram/").status_code == 403
    assert bare_staff.get(f"/admin/agents/agent/{agent.pk}/sign-in/").status_code == 403


def test_the_dashboard_controls_refuse_without_the_permission(bare_staff, cast):
    conversation, node = cast["conversation"], cast["node"]
    base = f"/dashboard/conversations/{conversation.pk}"
    before = snapshot()

    for url, data in [
        (f"{base}/gag/", {"gagged": "1"}),
        (f"{base}/cancel/", {}),
        (f"{base}/cancel/", {"node": str(node.pk)}),
        (f"{base}/translate/", {"language": "French"}),
        (f"{base}/llm/", {"llm_model": "gemini-2.5-flash"}),
        (f"{base}/summarize/", {}),
        (f"{base}/media/1/P1/save/", {"description": "a red kite"}),
        (f"/dashboard/agents/{cast['agent'].pk}/cancel-work/", {}),
        ("/dashboard/sandbox/", {"agent": str(cast["agent"].pk), "as_name": "Eve"}),
        ("/dashboard/sandbox/send/", {"agent": str(cast["agent"].pk), "as_name": "You", "text": "hi"}),
    ]:
        assert bare_staff.post(url, data).status_code == 403, url

    assert not changed(before, snapshot())


def test_a_user_with_the_permission_gets_the_action_done(bare_staff, cast, django_user_model):
    from django.contrib.auth.models import Permission

    user = django_user_model.objects.get(username="intern")
    user.user_permissions.add(
        Permission.objects.get(codename="change_agent"), Permission.objects.get(codename="view_agent")
    )
    agent = cast["agent"]
    # The permission alone is not enough: the agent must be granted too (agents.access).
    assert bare_staff.post(f"/admin/agents/agent/{agent.pk}/telegram/", {"action": "read"}).status_code == 404
    AgentGrant.objects.create(user=user, agent=agent)

    response = bare_staff.post(f"/admin/agents/agent/{agent.pk}/telegram/", {"action": "read"})

    assert response.status_code == 302
    assert GatewayRequest.objects.filter(agent=agent, kind=GatewayRequest.Kind.READ_ACCOUNT).count() == 2


def test_a_photo_id_that_is_not_a_number_is_a_clear_400(verified_client, cast):
    agent = cast["agent"]
    before = snapshot()

    response = verified_client.post(
        f"/admin/agents/agent/{agent.pk}/telegram/", {"action": "delete_photo", "photo_id": "abc"}
    )

    assert response.status_code == 400
    assert "photo_id is 'abc'" in response.content.decode()
    assert not changed(before, snapshot())


def test_no_admin_action_runs_for_staff_who_may_only_view(bare_staff, cast, rf, django_user_model):
    """Every action of every admin, asked for by a user holding every view permission and nothing
    else, on every row of its model: nothing changes (an action needs the change permission)."""
    from django.contrib import admin
    from django.contrib.auth.models import Permission

    user = django_user_model.objects.get(username="intern")
    user.user_permissions.add(*Permission.objects.filter(codename__startswith="view_"))
    superuser = django_user_model.objects.create_superuser("root", "root@example.com", "x")
    asked = 0
    for model, model_admin in admin.site._registry.items():
        request = rf.get("/")
        request.user = superuser
        actions = [name for name in model_admin.get_actions(request) if name != "delete_selected"]
        pks = [str(pk) for pk in model._default_manager.values_list("pk", flat=True)]
        url = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        for name in actions:
            before = snapshot()
            bare_staff.post(url, {"action": name, "_selected_action": pks or ["1"], "index": "0"})
            assert not changed(before, snapshot()), f"{url} action {name}"
            asked += 1
    assert asked >= 10
