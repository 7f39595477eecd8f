"""The real `telegram_login` and `runagents` processes against the loopback Telegram stand-in.

The stand-in runs in this process (a thread) and the children reach it through
CINDY_TELEGRAM_SERVER; the LLM is the fake server. Waiting for the children is bounded polling.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from telethon.tl import types

from cindy_site.testing.mtproto import StandIn
from engine.tests.processes import (
    MANAGE,
    ChildDatabase,
    child_on,
    child_settings,
    child_template,  # noqa: F401 - the migrated database Tess's template copies
    manage,
    plan,
    start_gateway,
    wait_for,
)

pytestmark = pytest.mark.slow

PHONE = "+9996621234"  # test number: the login code is 22222
PASSWORD = "correct horse"


#: The Telegram agent, as an operator adds it before `telegram_login`.
CREATE_TESS = (
    f"from agents.models import Agent; Agent.objects.create(name='Tess', phone='{PHONE}', "
    "instructions='You are Tess.', transport='telegram', llm='gemini', start_typing_delay=1, "
    "typing_speed=1000)"
)


@pytest.fixture(scope="session")
def tess_template(tmp_path_factory, child_template):  # noqa: F811 - the fixture imported above
    """The child template with the Telegram agent Tess added, once: each test's database is a copy."""
    db = ChildDatabase(tmp_path_factory.mktemp("tess-template"), suffix=f"_tess_{secrets.token_hex(3)}")
    try:
        db.copy_from(child_template)
        manage(child_settings(db), "shell", "-c", CREATE_TESS)
        yield db
    finally:
        db.drop()


@pytest.fixture
def telegram(tmp_path, tess_template):
    """The gateway test's child database (with the Telegram agent Tess) and fake LLM, plus the
    stand-in."""
    with child_on(tmp_path, tess_template) as (base_env, db, llm, _tmp):
        standin = StandIn().start()
        key_path = tmp_path / "standin.pub.pem"
        key_path.write_bytes(standin.key.public_pem)
        env = base_env | {
            "TELEGRAM_API_ID": "1",
            "TELEGRAM_API_HASH": "standin",
            "CINDY_TELEGRAM_SERVER": standin.address,
            "CINDY_TELEGRAM_SERVER_KEY": str(key_path),
            "CINDY_MEDIA_ROOT": str(tmp_path / "media"),
        }
        try:
            agent = standin.run(
                standin.world.create_user, phone=PHONE, first_name="Tess", username="tess", password=PASSWORD
            )
            bob = standin.run(
                standin.world.create_user, phone="+9996631111", first_name="Bob", username="bob"
            )
            yield env, db, llm, standin, agent, bob, tmp_path
        finally:
            standin.stop()


def login(env: dict[str, str], answers: str) -> subprocess.CompletedProcess:
    # No controlling terminal, so the password prompt reads stdin like the code prompt.
    return subprocess.run(
        [sys.executable, MANAGE, "telegram_login", "Tess"],
        env=env,
        input=answers,
        capture_output=True,
        text=True,
        timeout=120,
        start_new_session=True,
    )


def texts_from(standin: StandIn, key: tuple, sender: int) -> list[str]:
    return standin.run(lambda: [m.text for m in standin.world.history(key) if m.sender == sender])


def test_login_with_code_and_password_then_callouts_are_answered_and_a_flood_wait_is_kept(telegram):
    env, db, llm, standin, agent, bob, tmp = telegram
    wrong = login(env, "22222\nnot it\n")
    assert wrong.returncode != 0 and "password is wrong" in wrong.stderr
    done = login(env, f"22222\n{PASSWORD}\n")
    assert done.returncode == 0, done.stderr
    assert f"logged in as @tess (user id {agent.id})" in done.stdout
    assert db.query("SELECT telegram_user_id FROM agents_agent WHERE name = 'Tess'") == [(agent.id,)]
    assert [c.method for c in standin.calls if c.method.startswith("auth.")][-2:] == [
        "auth.signIn",
        "auth.checkPassword",
    ]

    llm.set_default_reply(plan("hello Bob"))
    log = tmp / "gateway.log"
    process = start_gateway(env, log)
    try:
        dm = standin.world.dm_key(agent.id, bob.id)
        standin.run(standin.world.send, bob.id, dm, "hi Tess, are you there?")
        wait_for(lambda: texts_from(standin, dm, agent.id) == ["hello Bob"], "the DM answer", log)

        group = standin.run(standin.world.create_group, title="Friends", member_ids=[agent.id, bob.id])
        gkey = ("chat", group.id)
        llm.set_default_reply(plan("yes, I am here"))
        standin.run(standin.world.send, bob.id, gkey, "what do you think @tess", mentions=(agent.id,))
        wait_for(lambda: texts_from(standin, gkey, agent.id) == ["yes, I am here"], "the group answer", log)

        club = standin.run(
            standin.world.create_group, title="Club", member_ids=[agent.id, bob.id], supergroup=True
        )
        ckey = ("channel", club.id)
        llm.set_default_reply(plan("count me in"))
        standin.inject_flood_wait("messages.sendMessage", 3)  # by wall time: the account waits 3 s
        standin.run(standin.world.send, bob.id, ckey, "who is coming, @tess?", mentions=(agent.id,))
        wait_for(lambda: texts_from(standin, ckey, agent.id) == ["count me in"], "the supergroup answer", log)
        sends = standin.calls_of("messages.sendMessage")
        assert [c.error for c in sends] == ["", "", "FLOOD_WAIT_3", ""]
        assert sends[3].time - sends[2].time >= 3
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=20)


def logged_in_gateway(env, tmp, name: str = "gateway.log") -> tuple[subprocess.Popen, Path]:
    done = login(env, f"22222\n{PASSWORD}\n")
    assert done.returncode == 0, done.stderr
    log = tmp / name
    return start_gateway(env, log), log


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=20)


def test_a_gateway_killed_mid_send_sends_once_and_catches_up_after_restart_and_reconnect(telegram):
    env, db, llm, standin, agent, bob, tmp = telegram
    dm = standin.world.dm_key(agent.id, bob.id)
    llm.set_default_reply(plan("hello Bob"))
    standin.hold_answer("messages.sendMessage", 60)  # the message is made; the answer never arrives
    process, log = logged_in_gateway(env, tmp)
    try:
        standin.run(standin.world.send, bob.id, dm, "hi Tess")
        wait_for(
            lambda: texts_from(standin, dm, agent.id) == ["hello Bob"], "the send to reach the server", log
        )
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=20)
        standin.run(standin.world.send, bob.id, dm, "are you back?")
        llm.set_default_reply(plan("I am back"))
        before = len(standin.calls)
        process = start_gateway(env, log)
        wait_for(
            lambda: texts_from(standin, dm, agent.id) == ["hello Bob", "I am back"],
            "the answer after restart",
            log,
        )
        messages = standin.run(lambda: [m for m in standin.world.history(dm) if m.sender == agent.id])
        random_ids = [m.random_id for m in messages]
        assert len(set(random_ids)) == len(random_ids) == 2
        # A retried send carries its first random_id, which the server answers with the first message.
        sent_ids = [c.request.random_id for c in standin.calls_of("messages.sendMessage")]
        assert set(sent_ids) == set(random_ids)
        after = [c.method for c in standin.calls[before:]]
        assert "updates.getDifference" in after

        # The connection drops (not the process): Telethon reconnects on its own and catches up.
        connections = {c.connection for c in standin.calls}
        assert standin.run(standin.drop_connections) >= 1
        standin.run(standin.world.send, bob.id, dm, "still there?")
        llm.set_default_reply(plan("still here"))
        wait_for(
            lambda: texts_from(standin, dm, agent.id) == ["hello Bob", "I am back", "still here"],
            "the answer after the connection dropped",
            log,
        )
        assert {c.connection for c in standin.calls} - connections and process.poll() is None
        assert not any(state.revoked for state in standin.keys.values())
    finally:
        stop(process)


def test_a_second_gateway_never_connects_while_the_first_holds_the_lease(telegram):
    env, db, llm, standin, agent, bob, tmp = telegram
    first, log = logged_in_gateway(env, tmp)
    second = None
    try:
        # The login's connection, then the gateway's own.
        wait_for(lambda: len({c.connection for c in standin.calls}) == 2, "the first gateway to connect", log)
        connections = {c.connection for c in standin.calls}
        second_log = tmp / "second.log"
        second = start_gateway(env, second_log)
        wait_for(
            lambda: "nothing to do: every agent this gateway may drive is held" in second_log.read_text(),
            "the second gateway to run",
            second_log,
        )
        # Watch for three lease periods: the second gateway keeps trying for the lease, never connecting.
        deadline = time.monotonic() + 9
        while time.monotonic() < deadline:
            assert {c.connection for c in standin.calls} <= connections, (
                "a second connection reached the server"
            )
            time.sleep(0.2)
        assert not any(state.revoked for state in standin.keys.values())
        assert first.poll() is None and second.poll() is None
    finally:
        stop(first)
        if second is not None:
            stop(second)


def test_a_photo_is_downloaded_and_described_and_answered_with_a_sticker_and_a_reaction(telegram):
    env, db, llm, standin, agent, bob, tmp = telegram
    manage(
        env,
        "shell",
        "-c",
        "from agents.models import Agent; Agent.objects.filter(name='Tess').update(sticker_set_names=['CindyStandIn'])",
    )
    dm = standin.world.dm_key(agent.id, bob.id)
    photo = types.MessageMediaPhoto(photo=standin.world.photo)
    sent, _pts, _new = standin.run(standin.world.send, bob.id, dm, "look at this", media=photo)
    llm.set_default_reply(
        json.dumps(
            [
                {"kind": "sticker", "sticker_set": "CindyStandIn", "name": "😀"},
                {"kind": "react", "emoji": "👍", "message_id": sent.id},
            ]
        )
    )
    process, log = logged_in_gateway(env, tmp)
    try:
        wait_for(lambda: standin.run(lambda: sent.reactions.get(agent.id)) == "👍", "the reaction", log)
        wait_for(
            lambda: standin.run(
                lambda: [m for m in standin.world.history(dm) if m.sender == agent.id and m.media is not None]
            ),
            "the sticker",
            log,
        )
        wait_for(lambda: standin.calls_of("upload.getFile"), "the photo download", log)
        assert not any(c.error for c in standin.calls_of("upload.getFile"))
        wait_for(
            lambda: db.query("SELECT kind, status FROM media_catalog_mediadescription WHERE kind = 'photo'"),
            "the description",
            log,
        )
    finally:
        stop(process)
