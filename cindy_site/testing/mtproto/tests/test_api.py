"""The stand-in's chats through the real Telethon client: supergroups, difference, muting, blocking."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request

import pytest
from telethon import TelegramClient, errors, events
from telethon.sessions import MemorySession
from telethon.tl import functions, types

from cindy_site.testing.mtproto import StandIn, register_public_key
from cindy_site.testing.mtproto.control import serve_control

PHONE = "+9996671234"  # code 77777


@pytest.fixture(scope="module")
def standin():
    server = StandIn().start()
    register_public_key(server.key.public_pem)
    server.ann = server.run(server.world.create_user, phone=PHONE, first_name="Ann", username="ann")
    server.bob = server.run(server.world.create_user, phone="+9996681111", first_name="Bob", username="bob")
    yield server
    server.stop()


async def logged_in(server: StandIn, *, updates: bool = False) -> TelegramClient:
    session = MemorySession()
    session.set_dc(2, "127.0.0.1", server.port)
    client = TelegramClient(session, 1, "test", receive_updates=updates, flood_sleep_threshold=0)
    await client.connect()
    await client.send_code_request(PHONE)
    await client.sign_in(phone=PHONE, code="77777")
    return client


def test_a_supergroup_message_is_pushed_and_read_back_from_its_history(standin):
    group = standin.run(
        standin.world.create_group, title="Club", member_ids=[standin.ann.id, standin.bob.id], supergroup=True
    )
    channel = types.InputPeerChannel(group.id, group.access_hash)

    async def run():
        client = await logged_in(standin, updates=True)
        arrived = asyncio.Event()
        seen = []

        async def on_update(update):
            seen.append(update)
            arrived.set()

        client.add_event_handler(on_update, events.Raw(types.UpdateNewChannelMessage))
        await client(functions.updates.GetStateRequest())
        standin.run(standin.world.send, standin.bob.id, ("channel", group.id), "hello club")
        await asyncio.wait_for(arrived.wait(), 10)
        history = await client(functions.messages.GetHistoryRequest(channel, 0, None, 0, 10, 0, 0, 0))
        await client.disconnect()
        return seen[0].message, history

    pushed, history = asyncio.run(run())
    assert pushed.message == "hello club" and pushed.peer_id == types.PeerChannel(group.id)
    assert isinstance(history, types.messages.ChannelMessages)
    assert [m.message for m in history.messages] == ["hello club"]


def test_messages_sent_while_away_come_back_through_get_difference(standin):
    async def run():
        client = await logged_in(standin)
        state = await client(functions.updates.GetStateRequest())
        dm = standin.world.dm_key(standin.ann.id, standin.bob.id)
        standin.run(standin.world.send, standin.bob.id, dm, "while you were away")
        diff = await client(functions.updates.GetDifferenceRequest(pts=state.pts, date=state.date, qts=0))
        again = await client(
            functions.updates.GetDifferenceRequest(pts=diff.state.pts, date=diff.state.date, qts=0)
        )
        await client.disconnect()
        return state, diff, again

    state, diff, again = asyncio.run(run())
    assert [m.message for m in diff.new_messages] == ["while you were away"]
    assert diff.new_messages[0].peer_id == types.PeerUser(standin.bob.id) and not diff.new_messages[0].out
    assert diff.state.pts == state.pts + 1
    assert isinstance(again, types.updates.DifferenceEmpty)


def test_muting_and_blocking_are_kept_and_answered_as_telegram_does(standin):
    async def run():
        client = await logged_in(standin)
        bob = types.InputPeerUser(standin.bob.id, standin.bob.access_hash)
        until = int(time.time()) + 3600
        await client(
            functions.account.UpdateNotifySettingsRequest(
                peer=types.InputNotifyPeer(bob), settings=types.InputPeerNotifySettings(mute_until=until)
            )
        )
        muted = await client(functions.account.GetNotifySettingsRequest(peer=types.InputNotifyPeer(bob)))
        await client(functions.contacts.BlockRequest(id=bob))
        blocked = await client(functions.contacts.GetBlockedRequest(offset=0, limit=10))
        with pytest.raises(errors.YouBlockedUserError):
            await client(functions.messages.SendMessageRequest(peer=bob, message="hi", random_id=5))
        await client(functions.contacts.UnblockRequest(id=bob))
        full = await client(
            functions.users.GetFullUserRequest(id=types.InputUser(bob.user_id, bob.access_hash))
        )
        await client.disconnect()
        return until, muted, blocked, full

    until, muted, blocked, full = asyncio.run(run())
    assert int(muted.mute_until.timestamp()) == until
    assert [b.peer_id for b in blocked.blocked] == [types.PeerUser(standin.bob.id)]
    assert not full.full_user.blocked


def test_a_user_who_blocked_the_agent_never_receives_its_messages(standin):
    carol = standin.run(standin.world.create_user, phone="+9996691111", first_name="Carol")
    standin.run(standin.world.user(carol.id).blocked.add, standin.ann.id)

    async def run():
        client = await logged_in(standin)
        peer = types.InputPeerUser(carol.id, carol.access_hash)
        await client(functions.messages.SendMessageRequest(peer=peer, message="are you there?", random_id=6))
        await client.disconnect()

    asyncio.run(run())
    assert [e for e in carol.log if e[1] == "new"] == []  # Ann sees it sent; Carol never gets it


def post(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_control_interface_acts_as_the_other_side_and_names_bad_fields(standin):
    httpd = serve_control(standin)
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        status, dave = post(f"{base}/users", {"first_name": "Dave", "username": "dave"})
        assert status == 200 and dave["phone"].startswith("+99966")
        status, sent = post(
            f"{base}/send",
            {"from": dave["id"], "to": standin.ann.id, "text": "hey", "mention": standin.ann.id},
        )
        assert status == 200
        with urllib.request.urlopen(
            f"{base}/messages?user={dave['id']}&peer={standin.ann.id}", timeout=10
        ) as r:
            listed = json.loads(r.read())["messages"]
        assert [(m["id"], m["text"], m["random_id"]) for m in listed] == [
            (sent["message_id"], "hey @ann", None)
        ]
        assert post(f"{base}/send", {"from": "x"}) == (400, {"error": "field 'from' must be int, not 'x'"})
        assert post(f"{base}/react", {"from": dave["id"]})[0] == 400
        assert post(f"{base}/flood_wait", {"method": "messages.getDialogs", "seconds": 7}) == (200, {})
        assert standin.flood["messages.getDialogs"] == [7]
    finally:
        standin.flood.clear()
        httpd.shutdown()


def test_updates_missed_during_a_dropped_connection_are_fetched_after_telethon_reconnects(standin):
    async def run():
        client = await logged_in(standin, updates=True)
        arrived = asyncio.Event()
        seen = []

        async def on_update(update):
            seen.append(update.message.message)
            arrived.set()

        client.add_event_handler(on_update, events.Raw(types.UpdateNewMessage))
        await client(functions.updates.GetStateRequest())
        before = len(standin.calls)
        assert standin.run(standin.drop_connections) == 1
        dm = standin.world.dm_key(standin.ann.id, standin.bob.id)
        standin.run(standin.world.send, standin.bob.id, dm, "sent while you were offline")
        await asyncio.wait_for(arrived.wait(), 20)  # Telethon reconnects, is told it fell behind, asks
        await client.disconnect()
        return seen, [c.method for c in standin.calls[before:]]

    seen, methods = asyncio.run(run())
    assert seen == ["sent while you were offline"]
    assert "updates.getDifference" in methods


def test_the_control_interface_pushes_typing_and_messages_from_telegram_and_from_a_bot(standin):
    httpd = serve_control(standin)
    base = f"http://127.0.0.1:{httpd.server_address[1]}"

    async def run():
        client = await logged_in(standin, updates=True)
        seen: list = []
        arrived = asyncio.Event()

        async def on_update(update):
            seen.append(update)
            if len([u for u in seen if isinstance(u, types.UpdateNewMessage)]) == 2:
                arrived.set()

        client.add_event_handler(on_update, events.Raw((types.UpdateNewMessage, types.UpdateUserTyping)))
        await client(functions.updates.GetStateRequest())
        status, service = post(f"{base}/users", {"first_name": "Telegram", "id": 777000})
        assert (status, service["id"]) == (200, 777000)
        status, bot = post(f"{base}/users", {"first_name": "Digest", "username": "digestbot", "bot": True})
        assert status == 200 and bot["bot"] is True
        assert post(f"{base}/typing", {"from": standin.bob.id, "to": standin.ann.id}) == (200, {})
        assert (
            post(f"{base}/send", {"from": 777000, "to": standin.ann.id, "text": "Login code: 12345"})[0]
            == 200
        )
        assert (
            post(f"{base}/send", {"from": bot["id"], "to": standin.ann.id, "text": "3 new posts"})[0] == 200
        )
        await asyncio.wait_for(arrived.wait(), 10)
        senders = {u.id: u for u in (await client.get_entity([777000, bot["id"]]))}
        await client.disconnect()
        return seen, senders, bot["id"]

    try:
        seen, senders, bot_id = asyncio.run(run())
        assert post(f"{base}/users", {"first_name": "Again", "id": 777000}) == (
            400,
            {"error": "a user with id 777000 exists already"},
        )
        assert post(f"{base}/typing", {"from": standin.bob.id}) == (400, {"error": "missing field 'to'"})
    finally:
        httpd.shutdown()
    typing = [u for u in seen if isinstance(u, types.UpdateUserTyping)]
    assert [(u.user_id, type(u.action)) for u in typing] == [(standin.bob.id, types.SendMessageTypingAction)]
    messages = [u.message for u in seen if isinstance(u, types.UpdateNewMessage)]
    assert [(m.peer_id, m.message) for m in messages] == [
        (types.PeerUser(777000), "Login code: 12345"),
        (types.PeerUser(bot_id), "3 new posts"),
    ]
    assert senders[bot_id].bot and not senders[777000].bot
