"""Gateway upkeep: sticker sets reach the catalog, mute/block flags stay fresh, stuck requests return."""

from __future__ import annotations

import datetime as dt

import pytest
from asgiref.sync import async_to_sync

from agents.models import GatewayRequest
from conversations.models import Conversation
from conversations.transport.base import PermanentError, StickerRef, StickerSetInfo
from engine.requests import MAX_REQUEST_ATTEMPTS
from engine.tests.harness import Harness
from engine.upkeep import DIALOG_REFRESH_SECONDS, STICKER_SWEEP_SECONDS
from llm.prompt.sections import sticker_section
from media_catalog.models import Sticker, StickerAccess, StickerSet
from sandbox.models import SandboxMember, SandboxUser
from sandbox.services.chats import sandbox_person, sandbox_say, sandbox_user_for_agent
from sandbox.transport.transport import SandboxTransport

pytestmark = pytest.mark.django_db


def _chat_with_alice(harness: Harness, agent) -> tuple:
    """The gateway holds the agent, and Alice's DM with it is in the mirror: (Alice, the account)."""
    harness.start()
    sandbox_say(agent=agent, text="hi", as_name="Alice")
    harness.ingest()
    return sandbox_person(name="Alice"), sandbox_user_for_agent(agent=agent)


def _scan(harness: Harness, agent) -> bool:
    """The attention step, and the agent's unread scan to its end if it started one: whether it did."""

    async def run() -> bool:
        await harness.gateway.steps["attention"].run()
        task = harness.gateway.steps["attention"].scans[agent.pk].task
        if task is None or task.done():
            return False
        await task
        return True

    return async_to_sync(run)()


class TelegramLikeStickers(SandboxTransport):
    """The sandbox, with sticker sets resolved the way Telegram would (not from the catalog)."""

    resolved: list[str] = []
    sets = {
        "WendyDancer": (
            "Wendy dances",
            [("😉", "U1", "image/webp"), ("🎉", "U2", "application/x-tgsticker")],
        ),
        "Other": ("Other set", [("🙂", "U3", "video/webm")]),
    }

    async def resolve_sticker_set(self, short_name):
        TelegramLikeStickers.resolved.append(short_name)
        if short_name not in self.sets:
            raise PermanentError("STICKERSET_INVALID", f"no sticker set {short_name}")
        title, stickers = self.sets[short_name]
        refs = tuple(
            StickerRef(set_short_name=short_name, name=n, unique_id=u, ref={"document_id": 10 + i, "mime": m})
            for i, (n, u, m) in enumerate(stickers)
        )
        return StickerSetInfo(short_name=short_name, title=title, stickers=refs)


@pytest.fixture
def stickers_harness(agent, clock):
    TelegramLikeStickers.resolved = []
    agent.sticker_set_names = ["WendyDancer"]
    agent.explicit_stickers = ["Other::🙂"]
    agent.save()
    return Harness(
        clock, transport_factory=lambda a, gateway_id="": TelegramLikeStickers(a, gateway_id=gateway_id)
    )


def test_configured_sticker_sets_are_imported_on_connect_and_reach_the_prompt(agent, stickers_harness):
    stickers_harness.start()
    assert stickers_harness.step("stickers") is True

    dancer = StickerSet.objects.get(short_name="WendyDancer")
    assert dancer.title == "Wendy dances" and dancer.fetched_at is not None
    rows = list(
        Sticker.objects.filter(sticker_set=dancer).values_list("name", "unique_id", "format", "position")
    )
    assert rows == [("😉", "U1", "static", 0), ("🎉", "U2", "animated", 1)]
    assert Sticker.objects.get(unique_id="U3").format == "video"
    assert "- WendyDancer :: 🎉" in sticker_section(agent)

    assert stickers_harness.step("stickers") is False  # fresh: nothing asked again
    assert TelegramLikeStickers.resolved == ["WendyDancer", "Other"]


def test_a_stale_set_is_refetched_and_a_new_set_is_imported_when_the_agent_changes(
    agent, stickers_harness, clock
):
    stickers_harness.start()
    stickers_harness.step("stickers")
    Sticker.objects.create(
        sticker_set=StickerSet.objects.get(short_name="WendyDancer"), name="x", unique_id="gone"
    )
    StickerSet.objects.filter(short_name="WendyDancer").update(fetched_at=clock.now() - dt.timedelta(days=2))

    agent.sticker_set_names = ["WendyDancer", "Missing"]
    agent.save()
    stickers_harness.step("leases")  # picks up the admin edit
    stickers_harness.step("stickers")

    assert TelegramLikeStickers.resolved == ["WendyDancer", "Other", "WendyDancer", "Missing"]
    assert not Sticker.objects.filter(unique_id="gone").exists()
    stickers_harness.step("stickers")
    assert TelegramLikeStickers.resolved.count("Missing") == 1  # a failure is not retried every pass


def test_a_pass_with_nothing_changed_reads_no_sticker_access_until_the_sweep(
    agent, stickers_harness, clock, django_assert_num_queries
):
    """The step looks at an agent when it may want other sets (new client, edited agent, changed
    Saved Messages stickers); every agent's sticker access is read again only at the sweep."""
    stickers_harness.start()
    stickers_harness.step("stickers")
    with django_assert_num_queries(0):
        assert stickers_harness.step("stickers") is False

    # Saved Messages stickers recorded from elsewhere (not this gateway's library refresh): the sweep.
    TelegramLikeStickers.sets["Kept"] = ("Kept", [("🦔", "K1", "image/webp")])
    StickerAccess.objects.update_or_create(
        agent=agent, defaults={"saved_stickers": [{"set": "Kept", "name": "🦔", "unique_id": "K1"}]}
    )
    try:
        with django_assert_num_queries(0):
            stickers_harness.step("stickers")
        clock.advance(STICKER_SWEEP_SECONDS)
        assert stickers_harness.step("stickers") is True
    finally:
        del TelegramLikeStickers.sets["Kept"]
    assert TelegramLikeStickers.resolved == ["WendyDancer", "Other", "Kept"]


def test_an_import_sticker_set_request_uses_the_same_import(agent, stickers_harness, clock):
    stickers_harness.start()
    request = GatewayRequest.objects.create(
        agent=agent,
        kind=GatewayRequest.Kind.IMPORT_STICKER_SET,
        params={"short_name": "Other"},
        created=clock.now(),
    )
    stickers_harness.step("requests")
    request.refresh_from_db()
    assert request.status == GatewayRequest.Status.DONE, request.error
    assert request.result["stickers"] == 1
    assert Sticker.objects.filter(sticker_set__short_name="Other").count() == 1


def test_a_refresh_profile_request_updates_the_conversation(agent, clock):
    harness = Harness(clock)
    alice, me = _chat_with_alice(harness, agent)
    SandboxUser.objects.filter(pk=me.pk).update(blocked_user_ids=[alice.user_id])
    SandboxMember.objects.filter(user=me).update(muted=True)
    request = GatewayRequest.objects.create(
        agent=agent,
        kind=GatewayRequest.Kind.REFRESH_PROFILE,
        params={"peer_id": alice.user_id},
        created=clock.now(),
    )
    harness.step("requests")

    request.refresh_from_db()
    assert request.status == GatewayRequest.Status.DONE, request.error
    conversation = Conversation.objects.get(peer_id=alice.user_id)
    assert conversation.muted and conversation.blocked


def test_mute_and_block_changes_are_picked_up_every_minute(agent, clock, settings):
    settings.CINDY_UNREAD_SCAN_SECONDS = 0  # the dialog refresh reads the lists (with scans on, they do)
    harness = Harness(clock)
    alice, me = _chat_with_alice(harness, agent)
    conversation = Conversation.objects.get(peer_id=alice.user_id)
    assert not conversation.muted and not conversation.blocked

    SandboxMember.objects.filter(user=me).update(muted=True)
    SandboxUser.objects.filter(pk=me.pk).update(blocked_user_ids=[alice.user_id])
    harness.refresh("dialogs")  # places the agent on its phase of the minute
    clock.advance(harness.refresh_due("dialogs", agent.pk) - 1)
    assert harness.refresh("dialogs") is False
    conversation.refresh_from_db()
    assert not conversation.muted

    clock.advance(1)
    assert harness.refresh("dialogs") is True
    conversation.refresh_from_db()
    assert conversation.muted and conversation.blocked

    SandboxMember.objects.filter(user=me).update(muted=False)
    SandboxUser.objects.filter(pk=me.pk).update(blocked_user_ids=[])
    clock.advance(max(harness.refresh_due("dialogs", agent.pk), 0))
    harness.refresh("dialogs")
    conversation.refresh_from_db()
    assert not conversation.muted and not conversation.blocked


def _stuck(agent, clock, *, attempts: int, expires_in: float) -> GatewayRequest:
    operator = sandbox_person(name="Operator")
    return GatewayRequest.objects.create(
        agent=agent,
        kind=GatewayRequest.Kind.SEND_OTP,
        params={"user_id": operator.user_id, "text": "Your code is 1"},
        status=GatewayRequest.Status.RUNNING,
        claimed_by="dead-gateway:1:abc",
        claim_expires=clock.now() + dt.timedelta(seconds=expires_in),
        attempts=attempts,
        created=clock.now(),
    )


def test_a_request_left_running_by_a_dead_gateway_is_run_again(agent, clock):
    harness = Harness(clock)
    harness.start()
    stuck = _stuck(agent, clock, attempts=1, expires_in=-1)
    alive = _stuck(agent, clock, attempts=1, expires_in=30)

    assert harness.step("reap_requests") is True
    harness.step("requests")

    stuck.refresh_from_db()
    alive.refresh_from_db()
    assert stuck.status == GatewayRequest.Status.DONE and stuck.attempts == 2
    assert alive.status == GatewayRequest.Status.RUNNING and alive.claimed_by == "dead-gateway:1:abc"


def test_a_request_that_keeps_dying_fails_with_the_reason(agent, clock):
    harness = Harness(clock)
    harness.start()
    stuck = _stuck(agent, clock, attempts=MAX_REQUEST_ATTEMPTS, expires_in=-1)

    harness.step("reap_requests")

    stuck.refresh_from_db()
    assert stuck.status == GatewayRequest.Status.FAILED
    assert stuck.error.startswith(f"gave up after {MAX_REQUEST_ATTEMPTS} attempts")
    assert "dead-gateway:1:abc" in stuck.error


def test_a_claim_carries_a_lease_and_counts_an_attempt(agent, clock):
    from engine.requests import requests_claim

    request = GatewayRequest.objects.create(
        agent=agent, kind=GatewayRequest.Kind.SEND_OTP, params={}, created=clock.now()
    )
    [claimed] = requests_claim(agent_id=agent.pk, holder="gw-a")
    request.refresh_from_db()
    assert claimed.pk == request.pk and request.claimed_by == "gw-a" and request.attempts == 1
    assert request.claim_expires > clock.now()


def test_the_admin_refresh_action_asks_a_telegram_agent_using_the_set(agent, other_agent, verified_client):
    from agents.models import Agent

    StickerSet.objects.create(short_name="WendyDancer", title="old")
    Agent.objects.filter(pk=agent.pk).update(transport="telegram", sticker_set_names=["WendyDancer"])
    Agent.objects.filter(pk=other_agent.pk).update(transport="telegram")
    url = "/admin/media_catalog/stickerset/"
    sticker_set = StickerSet.objects.get()

    response = verified_client.post(
        url, {"action": "refresh_from_telegram", "_selected_action": [sticker_set.pk]}, follow=True
    )

    assert response.status_code == 200
    request = GatewayRequest.objects.get()
    assert (request.agent_id, request.kind, request.params) == (
        agent.pk,
        GatewayRequest.Kind.IMPORT_STICKER_SET,
        {"short_name": "WendyDancer"},
    )
    assert "Asked the gateway to fetch WendyDancer again" in response.content.decode()


def test_the_admin_refresh_action_says_when_no_telegram_agent_can_fetch(agent, verified_client):
    sticker_set = StickerSet.objects.create(short_name="Lonely")
    response = verified_client.post(
        "/admin/media_catalog/stickerset/",
        {"action": "refresh_from_telegram", "_selected_action": [sticker_set.pk]},
        follow=True,
    )
    assert "no enabled, running Telegram agent" in response.content.decode()
    assert not GatewayRequest.objects.exists()


def test_a_mute_that_reached_telegram_after_an_unread_scan_is_in_the_mirror_within_a_period_and_stays(
    agent, clock
):
    """A list is applied as soon as it is read, never later: an unread scan's list read before the
    mute reached Telegram does not undo it, and the next scan (within one refresh period) brings the
    mute into the mirror; the dialog refresh, with scans on, reads nothing that could undo it."""
    harness = Harness(clock)
    alice, me = _chat_with_alice(harness, agent)
    harness.refresh("dialogs")  # places the agent on its phase of the minute

    harness.step("attention")  # connected: the first scan comes within its spread
    clock.advance(10)
    assert _scan(harness, agent)  # a scan ran, reading the chat unmuted

    SandboxMember.objects.filter(user=me).update(muted=True)  # the mute reaches Telegram
    seen = []
    for _ in range(int(DIALOG_REFRESH_SECONDS // 5)):
        clock.advance(5)
        _scan(harness, agent)
        harness.refresh("dialogs")
        seen.append(Conversation.objects.get(peer_id=alice.user_id).muted)
    assert seen[-1] and seen == sorted(seen)  # muted within the period, and never undone


class CountedDialogs(SandboxTransport):
    """The sandbox, counting its dialog-list reads."""

    reads = 0

    async def dialogs(self, *, limit: int = 100):
        CountedDialogs.reads += 1
        return await super().dialogs(limit=limit)


def test_unread_scans_keep_the_flags_fresh_and_the_refresh_reads_no_list_of_its_own(agent, clock, settings):
    """With scans on, each scan applies its own list's flags and the dialog refresh reads no list: the
    account is asked for its dialogs once per scan, whatever the phases of the two."""
    settings.CINDY_UNREAD_SCAN_SECONDS = 30
    CountedDialogs.reads = 0
    harness = Harness(clock, transport_factory=lambda agent, **kw: CountedDialogs(agent, **kw))
    alice, me = _chat_with_alice(harness, agent)
    before = CountedDialogs.reads  # the reconcile's at connect
    assert harness.refresh("dialogs") is False
    assert CountedDialogs.reads == before
    assert harness.gateway.steps["dialogs"].refreshes.states == {}  # no refresh is even scheduled

    scans = 0
    SandboxMember.objects.filter(user=me).update(muted=True)  # muted on another device
    for _ in range(8):  # four minutes of scans and refreshes
        for _ in range(6):  # the gateway's passes, one every 5 s: a scan starts on its own beat
            clock.advance(5)
            scans += _scan(harness, agent)
        assert harness.refresh("dialogs") is False

    assert scans >= 6  # the first comes within its spread, then one every 30 s
    assert Conversation.objects.get(peer_id=alice.user_id).muted  # a scan applied it
    assert CountedDialogs.reads - before == scans  # one list per scan: the refreshes read none


def test_an_unchanged_dialog_list_is_compared_with_the_mirror_once_a_period(
    agent, clock, settings, monkeypatch
):
    """Scans every 30 s: a list whose flags did not change since the last comparison is compared again
    only after a refresh period, which still undoes a mute set in the mirror alone (Telegram's says no)."""
    from engine import upkeep

    compared = []
    real = upkeep.conversations_refresh_flags
    monkeypatch.setattr(
        upkeep, "conversations_refresh_flags", lambda **kw: compared.append(clock.monotonic()) or real(**kw)
    )
    settings.CINDY_UNREAD_SCAN_SECONDS = 30
    harness = Harness(clock)
    alice, _me = _chat_with_alice(harness, agent)

    harness.step("attention")
    for _ in range(4):  # the first scan comes within its spread, then every 30 s
        clock.advance(30)
        _scan(harness, agent)
        harness.refresh("dialogs")
    first = len(compared)
    assert first >= 1
    Conversation.objects.filter(peer_id=alice.user_id).update(muted=True)  # the mirror alone
    for _ in range(int(DIALOG_REFRESH_SECONDS // 30) + 1):
        clock.advance(30)
        _scan(harness, agent)
        harness.refresh("dialogs")
    assert len(compared) - first <= 2  # about once a period, not at every scan
    assert not Conversation.objects.get(peer_id=alice.user_id).muted  # Telegram's state won


def muted_and_sent(harness: Harness, clock, conversation):
    """A coroutine function: an operator mutes `conversation`, and the gateway sends the mute and
    finishes its request (a second passes before and after)."""
    from asgiref.sync import sync_to_async

    from conversations.services.curation import conversations_set_muted

    async def mute_and_send():
        await sync_to_async(conversations_set_muted)(conversations=[conversation], muted=True)
        clock.advance(1)
        await harness.gateway.steps["requests"].run()
        clock.advance(1)

    return mute_and_send


class MutedWhileRead(SandboxTransport):
    """The sandbox, where an operator's mute reaches Telegram and its request finishes while a dialog
    list is on its way back: the list shows the chat unmuted, and is applied after the request."""

    during_read = None  # a coroutine function run once, after the list is read

    async def dialogs(self, *, limit: int = 100):
        listed = await super().dialogs(limit=limit)
        during, MutedWhileRead.during_read = MutedWhileRead.during_read, None
        if during is not None:
            await during()
        return listed


def test_a_list_read_before_a_mute_request_finished_does_not_undo_the_mute(agent, clock, settings):
    """An operator mutes a chat while the gateway reads its dialog list: the gateway sends the mute
    and finishes the request before the list, read earlier, is applied. The mute stays, and the next
    list (read after it) agrees. (The lists of the dialog refresh: unread scans off.)"""
    settings.CINDY_UNREAD_SCAN_SECONDS = 0

    harness = Harness(clock, transport_factory=lambda agent, **kw: MutedWhileRead(agent, **kw))
    alice, _me = _chat_with_alice(harness, agent)
    conversation = Conversation.objects.get(peer_id=alice.user_id)

    mute_and_send = muted_and_sent(harness, clock, conversation)

    harness.refresh("dialogs")  # places the agent on its phase of the minute
    clock.advance(DIALOG_REFRESH_SECONDS + 1)
    MutedWhileRead.during_read = mute_and_send
    harness.refresh("dialogs")
    assert MutedWhileRead.during_read is None  # the refresh read a list
    request = GatewayRequest.objects.get(kind=GatewayRequest.Kind.SET_MUTED)
    assert request.status == GatewayRequest.Status.DONE and request.finished is not None
    assert Conversation.objects.get(pk=conversation.pk).muted

    clock.advance(DIALOG_REFRESH_SECONDS + 1)
    harness.refresh("dialogs")  # read after the mute reached Telegram: it says muted too
    assert Conversation.objects.get(pk=conversation.pk).muted


@pytest.mark.parametrize("sent_during_read", [False, True], ids=["not sent yet", "sent during the read"])
def test_a_reconcile_at_connect_does_not_undo_a_mute_telegram_has_not_shown_yet(
    agent, clock, settings, sent_during_read
):
    """The reconcile at (re)connect applies the dialog list's flags too: a mute an operator asked for
    while the gateway was away (its request still waiting), or one sent while the list was read,
    stays; the next refresh (unread scans off), reading Telegram's state after the mute, agrees."""
    settings.CINDY_UNREAD_SCAN_SECONDS = 0

    from conversations.services.curation import conversations_set_muted
    from engine.ingest import reconcile

    harness = Harness(clock, transport_factory=lambda agent, **kw: MutedWhileRead(agent, **kw))
    alice, _me = _chat_with_alice(harness, agent)
    conversation = Conversation.objects.get(peer_id=alice.user_id)

    mute_and_send = muted_and_sent(harness, clock, conversation)

    if sent_during_read:
        MutedWhileRead.during_read = mute_and_send
    else:
        conversations_set_muted(conversations=[conversation], muted=True)
    transport = harness.gateway.clients[agent.pk].transport
    async_to_sync(reconcile)(agent_id=agent.pk, transport=transport)
    assert Conversation.objects.get(pk=conversation.pk).muted
    status = GatewayRequest.objects.get(kind=GatewayRequest.Kind.SET_MUTED).status
    assert status == (GatewayRequest.Status.DONE if sent_during_read else GatewayRequest.Status.PENDING)

    harness.step("requests")
    clock.advance(DIALOG_REFRESH_SECONDS + 1)
    harness.refresh("dialogs")
    assert Conversation.objects.get(pk=conversation.pk).muted
