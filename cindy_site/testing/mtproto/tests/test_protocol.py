"""The stand-in's framing, key exchange and message layer, checked with the real Telethon client."""

from __future__ import annotations

import asyncio
import struct

import pytest
from telethon import TelegramClient, errors
from telethon.network.mtprotostate import MTProtoState
from telethon.sessions import MemorySession
from telethon.tl import functions, types

from cindy_site.testing.mtproto import StandIn, register_public_key
from cindy_site.testing.mtproto.crypto import decrypt_message, encrypt_message
from cindy_site.testing.mtproto.framing import FramingError, decode_packet, encode_packet

PHONE = "+9996651234"  # code 55555


@pytest.fixture(scope="module")
def standin():
    server = StandIn().start()
    register_public_key(server.key.public_pem)
    server.run(server.world.create_user, phone=PHONE, first_name="Ann", username="ann")
    yield server
    server.stop()


def client_for(server: StandIn, session: MemorySession | None = None) -> TelegramClient:
    if session is None:
        session = MemorySession()
        session.set_dc(2, "127.0.0.1", server.port)
    return TelegramClient(session, 1, "test", receive_updates=False, flood_sleep_threshold=0)


async def logged_in(server: StandIn) -> TelegramClient:
    client = client_for(server)
    await client.connect()
    await client.send_code_request(PHONE)
    await client.sign_in(phone=PHONE, code="55555")
    return client


def test_a_packet_round_trips_through_the_full_transport_framing():
    packet = encode_packet(b"\x01\x02\x03\x04", 7)
    assert struct.unpack("<ii", packet[:8]) == (16, 7)
    assert decode_packet(packet) == (7, b"\x01\x02\x03\x04")


def test_a_packet_with_a_wrong_checksum_is_refused():
    packet = bytearray(encode_packet(b"abcd", 0))
    packet[9] ^= 0xFF
    with pytest.raises(FramingError, match="crc32"):
        decode_packet(bytes(packet))


def test_a_packet_whose_length_disagrees_is_refused():
    with pytest.raises(FramingError, match="says 16 bytes"):
        decode_packet(encode_packet(b"abcd", 0) + b"x")


def test_the_telethon_client_makes_an_auth_key_the_server_shares(standin):
    async def run():
        client = client_for(standin)
        await client.connect()
        key_id = client.session.auth_key.key_id
        await client.disconnect()
        return key_id

    key_id = asyncio.run(run())
    assert standin.keys[key_id].auth_key.key_id == key_id
    assert standin.calls[0].method == "help.getConfig"  # sent inside invokeWithLayer(initConnection(...))


def test_a_server_message_decrypts_with_the_clients_mtproto_state(standin):
    state = next(iter(standin.keys.values()))
    client_state = MTProtoState(
        state.auth_key, loggers=__import__("collections").defaultdict(__import__("logging").getLogger)
    )
    body = bytes(types.Pong(msg_id=4, ping_id=9))
    msg_id = (int(__import__("time").time()) << 32) | 1
    packet = encrypt_message(
        state.auth_key, salt=5, session_id=client_state.id, msg_id=msg_id, seqno=0, body=body
    )
    message = client_state.decrypt_message_data(packet)
    assert message.obj == types.Pong(msg_id=4, ping_id=9)
    sent = client_state.encrypt_message_data(struct.pack("<qii", msg_id - 1, 1, len(body)) + body)
    envelope = decrypt_message(state.auth_key, sent)
    assert (envelope.session_id, envelope.body) == (client_state.id, body)


def test_a_repeated_random_id_returns_the_first_message(standin):
    async def run():
        client = await logged_in(standin)
        peer = types.InputPeerSelf()
        first = await client(functions.messages.SendMessageRequest(peer=peer, message="once", random_id=77))
        again = await client(functions.messages.SendMessageRequest(peer=peer, message="once", random_id=77))
        await client.disconnect()
        ids = [[u.id for u in r.updates if isinstance(u, types.UpdateMessageID)] for r in (first, again)]
        return ids

    first, again = asyncio.run(run())
    assert first == again
    me = standin.world.user_by_phone(PHONE)
    assert [m.text for m in standin.world.history(standin.world.dm_key(me.id, me.id))] == ["once"]


def test_an_unknown_method_answers_an_rpc_error_and_a_flood_wait_is_injected(standin):
    standin.inject_flood_wait("messages.setTyping", 3)

    async def run():
        client = await logged_in(standin)
        with pytest.raises(errors.RPCError, match="method does not exist"):
            await client(functions.messages.GetAllStickersRequest(hash=0))
        typing = functions.messages.SetTypingRequest(
            peer=types.InputPeerSelf(), action=types.SendMessageTypingAction()
        )
        with pytest.raises(errors.FloodWaitError) as flood:
            await client(typing)
        assert await client(typing) is True
        await client.disconnect()
        return flood.value.seconds

    assert asyncio.run(run()) == 3
    assert [c.error for c in standin.calls_of("messages.setTyping")] == ["FLOOD_WAIT_3", ""]
    assert standin.calls_of("messages.getAllStickers")[-1].error == "INPUT_METHOD_INVALID"


def test_one_auth_key_on_two_connections_at_once_is_revoked(standin):
    async def run():
        first = await logged_in(standin)
        session = MemorySession()
        session.set_dc(2, "127.0.0.1", standin.port)
        session.auth_key = first.session.auth_key
        second = client_for(standin, session)
        with pytest.raises(errors.AuthKeyDuplicatedError):
            await second.connect()
            await second(functions.updates.GetStateRequest())
        with pytest.raises(errors.AuthKeyDuplicatedError):
            await first(functions.updates.GetStateRequest())
        await second.disconnect()
        await first.disconnect()

    asyncio.run(run())
