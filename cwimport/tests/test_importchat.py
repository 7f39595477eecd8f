"""`manage.py importchat`: a Telegram Desktop export brought into an agent's conversation."""

from __future__ import annotations

import datetime as dt
import io
import json

import pytest
from django.core.management import CommandError, call_command

from conversations.models import ActivityEvent, Conversation, Message
from cwimport.chatexport.chats import export_chats
from cwimport.chatexport.importing import ChatImport
from cwimport.chatexport.reading import read_export
from cwimport.tests.chat_exports import (
    AGENT_ID,
    ANN_ID,
    SKIPPED,
    at,
    every_shape,
    full_export,
    message,
    single_chat,
    stamp,
    write_export,
)
from engine.tests.cast import make_agent
from engine.tests.harness import Harness, tasks
from media_catalog.parts import media_items
from sandbox.models import SandboxChat, SandboxUser
from sandbox.services.chats import sandbox_say

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("importchat", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def telegram_agent():
    return make_agent("Wendy", transport="telegram", telegram_user_id=AGENT_ID)


def test_every_shape_lands_in_the_telegram_agents_conversation_with_the_peer(tmp_path, telegram_agent):
    path = write_export(tmp_path / "result.json", single_chat(every_shape()))
    out = run("Wendy", str(path))

    conversation = Conversation.objects.get(agent=telegram_agent)
    assert (conversation.peer_id, conversation.kind, conversation.title) == (ANN_ID, "dm", "Ann")
    messages = {m.message_id: m for m in Message.objects.filter(conversation=conversation)}
    assert sorted(messages) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 17]  # 15 unsupported, 16 empty
    assert "imported 15 (2 service lines), already there 0, skipped: empty 1, unsupported 1" in out

    first = messages[1]
    assert (first.text, first.is_agent, first.sender_id, first.sender_name) == (
        "Hi Wendy! Did the tomatoes come up?", False, ANN_ID, "Ann"
    )  # fmt: skip
    assert first.date == at(1)  # from date_unixtime, not the local `date`
    assert messages[2].text == "They did! Twelve plants, see https://example.org"
    assert (messages[2].is_agent, messages[2].sender_id) == (True, AGENT_ID)
    assert messages[3].text == "only entities"
    assert (messages[4].is_service, messages[4].text) == (True, "[PhoneCall]")
    assert messages[17].text == "[ChatEditTitle: Gardeners]"

    def part(message_id):
        (item,) = media_items(messages[message_id].media)
        return item

    assert (part(5).media_kind, part(5).file_name, messages[5].text) == ("photo", "", "the greenhouse")
    assert (part(6).media_kind, part(6).sticker_name) == ("sticker", "🍅")
    assert (part(7).media_kind, part(7).duration, part(7).file_name) == ("voice", 4.0, "audio_1.ogg")
    assert (part(8).media_kind, part(8).is_round, messages[8].is_agent) == ("video", True, True)
    assert (part(9).media_kind, part(9).mime) == ("video", "video/mp4")
    assert part(10).media_kind == "gif"
    assert (part(11).media_kind, part(11).extra) == ("audio", {"title": "Feeling Good", "performer": "Nina"})
    assert (part(12).media_kind, part(12).file_name) == ("document", "seeds.pdf")
    assert messages[13].forwarded_from == "Garden Weekly"
    assert (messages[14].reply_to_id, messages[14].edited, messages[14].edited_at) == (13, True, at(20))

    conversation.refresh_from_db()
    assert conversation.last_read_message_id == 17  # history is read: nothing imported is unread
    assert conversation.last_message_at == at(17)
    assert not ActivityEvent.objects.filter(kind__in=["message_in", "message_out", "trigger"]).exists()
    assert ActivityEvent.objects.filter(kind="info", conversation=conversation).count() == 1


def test_importing_the_same_file_again_adds_nothing(tmp_path, telegram_agent):
    path = write_export(tmp_path / "result.json", single_chat(every_shape()))
    run("Wendy", str(path))
    before = list(Message.objects.order_by("pk").values_list("pk", "message_id", "text"))
    out = run("Wendy", str(path))
    assert "imported 0, already there 15" in out
    assert list(Message.objects.order_by("pk").values_list("pk", "message_id", "text")) == before


def test_a_message_the_mirror_already_holds_is_left_as_it_is(tmp_path, telegram_agent):
    conversation = Conversation.objects.create(agent=telegram_agent, peer_id=ANN_ID, kind="dm")
    Message.objects.create(conversation=conversation, message_id=2, date=at(2), text="as the gateway saw it")
    path = write_export(tmp_path / "result.json", single_chat([message(1, text="a"), message(2, text="b")]))
    assert "imported 1, already there 1" in run("Wendy", str(path))
    assert Message.objects.get(message_id=2).text == "as the gateway saw it"


def test_me_names_the_agents_own_messages(tmp_path):
    make_agent("Wendy", transport="telegram")  # not signed in yet: no Telegram id
    chat = single_chat([message(1, text="hello"), message(2, sender=4242, name="W.", text="hi back")])
    path = write_export(tmp_path / "result.json", chat)
    run("Wendy", str(path), "--me", "user4242")
    mine = dict(Message.objects.values_list("message_id", "is_agent"))
    assert mine == {1: False, 2: True}


def test_without_me_the_sender_who_is_not_the_peer_is_the_agent(tmp_path):
    make_agent("Wendy", transport="telegram")
    chat = single_chat([message(1, text="hello"), message(2, sender=4242, name="W.", text="hi back")])
    run("Wendy", str(write_export(tmp_path / "result.json", chat)))
    assert dict(Message.objects.values_list("message_id", "is_agent")) == {1: False, 2: True}


def test_a_stranger_in_a_personal_chat_asks_for_me(tmp_path, telegram_agent):
    chat = single_chat([message(1, text="hello"), message(2, sender=4242, name="Other", text="who am I")])
    with pytest.raises(CommandError, match=r"messages from 4242, who is neither the chat \(5550001\) nor"):
        run("Wendy", str(write_export(tmp_path / "result.json", chat)))
    assert not Message.objects.exists() and not Conversation.objects.exists()


def test_a_sandbox_agent_gets_a_sandbox_person_named_as_the_chat(tmp_path):
    wendy = make_agent("Wendy")
    chat = single_chat([message(1, text="first"), message(40, sender=AGENT_ID, name="Wendy", text="forty")])
    run("Wendy", str(write_export(tmp_path / "result.json", chat)), "--me", str(AGENT_ID))

    ann = SandboxUser.objects.get(name="Ann", agent__isnull=True)
    conversation = Conversation.objects.get(agent=wendy)
    assert (conversation.peer_id, conversation.title) == (ann.user_id, "Ann")
    rows = {m.message_id: (m.is_agent, m.sender_id) for m in conversation.messages.all()}
    assert rows == {1: (False, ann.user_id), 40: (True, wendy.sandbox_user.user_id)}
    # The sandbox chat numbers its next message after the imported ones: nothing is overwritten.
    later = sandbox_say(agent=wendy, text="and now live", as_name="Ann")
    assert later.message_id == 41
    assert SandboxChat.objects.get(pk=later.chat_id).title == "Wendy & Ann"


def test_a_long_chat_name_names_the_sandbox_person_cut_short(tmp_path):
    wendy = make_agent("Wendy")
    chat = single_chat([message(1, text="hello")], name="A" * 300)
    run("Wendy", str(write_export(tmp_path / "result.json", chat)))
    assert SandboxUser.objects.get(agent__isnull=True).name == "A" * 128
    assert Conversation.objects.get(agent=wendy).title == "A" * 128


def test_a_sandbox_chat_with_messages_of_its_own_in_the_range_is_refused(tmp_path):
    wendy = make_agent("Wendy")
    sandbox_say(agent=wendy, text="written in the sandbox", as_name="Ann")  # message #1
    chat = single_chat([message(1, text="first"), message(2, text="second")])
    with pytest.raises(
        CommandError, match=r"already has messages written in the sandbox \(#1, \.\.\.\).*--name NAME"
    ):
        run("Wendy", str(write_export(tmp_path / "result.json", chat)))
    assert not Conversation.objects.exists()  # nothing written, not even the conversation
    run("Wendy", str(tmp_path / "result.json"), "--name", "Ann (old phone)")
    assert Conversation.objects.get(agent=wendy, title="Ann (old phone)").messages.count() == 2


def test_a_full_export_imports_each_personal_chat_and_knows_the_exporting_account(tmp_path):
    wendy = make_agent("Wendy", transport="telegram")
    chats = [
        single_chat([message(1, text="from Ann"), message(2, sender=AGENT_ID, text="to Ann")]),
        single_chat([message(1, sender=6660001, name="Bob", text="from Bob")], name="Bob", chat_id=6660001),
        single_chat(
            [message(1, text="group talk")], name="Garden club", chat_type="private_supergroup", chat_id=99
        ),
        single_chat(
            [message(1, text="note to self")], name=None, chat_type="saved_messages", chat_id=AGENT_ID
        ),
    ]
    path = write_export(tmp_path / "result.json", full_export(chats))
    out = run("Wendy", str(path))
    assert 'chat "Ann" (id 5550001), chat "Bob" (id 6660001)' in out
    assert sorted(Conversation.objects.filter(agent=wendy).values_list("peer_id", flat=True)) == [
        ANN_ID,
        6660001,
    ]
    assert Message.objects.get(
        conversation__peer_id=ANN_ID, message_id=2
    ).is_agent  # personal_information.user_id

    run("Wendy", str(path), "--chat", "Garden club")
    group = Conversation.objects.get(agent=wendy, title="Garden club")
    assert (group.peer_id, group.kind) == (-1_000_000_000_099, "group")


def test_a_full_export_chat_is_chosen_by_id_or_name(tmp_path):
    make_agent("Wendy", transport="telegram", telegram_user_id=AGENT_ID)
    chats = [
        single_chat([message(1, text="a")]),
        single_chat([message(1, sender=1234, text="b")], chat_id=1234),
    ]
    path = write_export(tmp_path / "result.json", full_export(chats))
    with pytest.raises(CommandError, match=r"2 chats are named 'Ann' \(ids 5550001, 1234\): give --chat ID"):
        run("Wendy", str(path), "--chat", "Ann")
    with pytest.raises(
        CommandError, match=r"no chat named or numbered 'Zed' \(chats: Ann \(5550001\), Ann \(1234\)\)"
    ):
        run("Wendy", str(path), "--chat", "Zed")
    run("Wendy", str(path), "--chat", "1234")
    assert Message.objects.get().text == "b"


def test_dates_without_unixtime_are_read_in_the_given_zone(tmp_path, telegram_agent):
    old = message(1, text="from an old export")
    del old["date_unixtime"]
    old["date"] = "2019-03-01T12:00:00"
    run(
        "Wendy", str(write_export(tmp_path / "result.json", single_chat([old]))), "--timezone", "Europe/Paris"
    )
    assert Message.objects.get().date == dt.datetime(2019, 3, 1, 11, 0, tzinfo=dt.UTC)


def test_an_older_exports_shapes(tmp_path, telegram_agent):
    """Exports from before 2021: `from_id` a bare number, no `date_unixtime`, and "never edited"
    written as the epoch in local time; and a reply to a message of another chat."""
    old = {
        "id": 7,
        "type": "message",
        "date": "2020-01-29T11:41:46",
        "edited": "1970-01-01T01:00:00",
        "from": "Ann",
        "from_id": ANN_ID,
        "text": [{"type": "link", "text": "https://www.example.com"}],
    }
    elsewhere = message(8, text="about that post", reply_to_message_id=99, reply_to_peer_id="channel42")
    run("Wendy", str(write_export(tmp_path / "result.json", single_chat([old, elsewhere]))))
    first, second = Message.objects.order_by("message_id")
    assert (first.sender_id, first.edited, first.edited_at) == (ANN_ID, False, None)
    assert first.date == dt.datetime(2020, 1, 29, 11, 41, 46, tzinfo=dt.UTC)  # the agent has no zone: UTC
    assert first.text == "https://www.example.com"
    assert second.reply_to_id is None


def test_an_import_stopped_between_batches_resumes(tmp_path, telegram_agent):
    chat = single_chat([message(n, text=f"line {n}") for n in range(1, 8)])
    path = write_export(tmp_path / "result.json", chat)
    seen = []

    def stop_after_first(done, total):
        seen.append((done, total))
        first.stop()

    first = ChatImport(
        agent=telegram_agent,
        export=export_chats(path, read_export(path), choose=None, zone=dt.UTC),
        batch=3,
        progress=stop_after_first,
    )
    summary = first.run()
    assert (summary.stopped, summary.imported, seen) == (True, 3, [(3, 7)])
    out = run("Wendy", str(path), "--batch", "3")
    assert "imported 4, already there 3" in out
    assert Message.objects.count() == 7


def test_progress_and_summary_lines_when_not_a_terminal(tmp_path, telegram_agent, clock):
    path = write_export(
        tmp_path / "result.json", single_chat([message(n, text=f"line {n}") for n in range(1, 5)])
    )
    out = run("Wendy", str(path), "--batch", "2")
    assert out.splitlines() == [
        'Wendy: importing 4 messages of chat "Ann" (id 5550001)',
        "4/4 messages read",
        f"Wendy: imported 4, already there 0, skipped: none (conversation {Conversation.objects.get().pk})",
    ]


@pytest.mark.django_db(transaction=True)  # InnoDB's FULLTEXT index sees rows once they commit
def test_recall_finds_an_imported_message(tmp_path, telegram_agent):
    chat = single_chat([message(1, text="The marmalade recipe needs Seville oranges"), message(2, text="ok")])
    run("Wendy", str(write_export(tmp_path / "result.json", chat)))
    out = io.StringIO()
    call_command("recall", "Wendy", "marmalade", stdout=out)
    assert "message #1" in out.getvalue() and "Seville oranges" in out.getvalue()


# --- hostile files: refused with the file, the place and the field, and nothing written ---------


def refused(tmp_path, content: bytes | str, pattern: str, *args: str) -> None:
    path = tmp_path / "result.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(CommandError, match=pattern):
        run("Wendy", str(path), *args)
    assert not Message.objects.exists() and not Conversation.objects.exists()


def test_a_file_over_the_cap_is_refused_before_it_is_read(tmp_path, telegram_agent, settings):
    settings.CINDY_IMPORT_MAX_CHAT_EXPORT_BYTES = 100
    refused(
        tmp_path,
        json.dumps(single_chat(every_shape())),
        r"bytes, more than the 100 bytes.*CINDY_IMPORT_MAX_CHAT_EXPORT_BYTES",
    )


def test_nesting_deeper_than_any_export_is_refused(tmp_path, telegram_agent):
    deep = single_chat([message(1, text="x", poll={"q": "[" * 40 + "]" * 40})])
    deep["messages"][0]["poll"] = json.loads("[" * 40 + "]" * 40)
    refused(tmp_path, json.dumps(deep), r"nested deeper than any export \(32 levels\)")
    refused(tmp_path, "[" * 100_000 + "]" * 100_000, r"nested deeper than any export")


@pytest.mark.parametrize(
    ("change", "pattern"),
    [
        (
            lambda d: d.update(messages={"1": {}}),
            r'chat "Ann" \(id 5550001\): field "messages" is \{"1": \{\}\}: expected a list',
        ),
        (
            lambda d: d["messages"][2].update(id="3"),
            r"""messages\[2\]: field "id" is '3': expected a positive whole number""",
        ),
        (lambda d: d.update(id="5550001"), r'field "id" is \'5550001\': expected a whole number'),
        (
            lambda d: d["messages"][1].update(date="yesterday"),
            r"""messages\[1\] \(id 2\): field "date" is 'yesterday': expected a date""",
        ),
        (
            lambda d: d["messages"][1].update(date_unixtime="-5"),
            r'messages\[1\] \(id 2\): field "date_unixtime" is \'-5\'',
        ),
        (
            lambda d: d["messages"][0].update(text=[1, 2]),
            r'messages\[0\] \(id 1\): field "text\[0\]" is 1: expected text',
        ),
        (
            lambda d: d["messages"][0].update(from_id="robot7"),
            r'field "from_id" is \'robot7\': expected "user123"',
        ),
        (
            lambda d: d["messages"][5].update(duration_seconds="long"),
            r'messages\[5\] \(id 6\): field "duration_seconds"',
        ),
        (
            lambda d: d["messages"][13].update(reply_to_message_id=True),
            r'field "reply_to_message_id" is true',
        ),
        (
            lambda d: d["messages"].append(dict(d["messages"][0])),
            r"message id 1 appears twice \(also at messages\[0\]\)",
        ),
        (lambda d: d.update(type="saved_messages"), r"is of type 'saved_messages'"),
        (
            lambda d: d["messages"][0].update(id=2**40),
            r'messages\[0\]: field "id" is 1099511627776: expected a positive whole number below 2\*\*31',
        ),
        (lambda d: d["messages"][0].update(from_id="user" + "9" * 19), r'field "from_id" is \'user9999'),
    ],
)
def test_wrong_types_are_refused_naming_the_message_and_field(tmp_path, telegram_agent, change, pattern):
    data = single_chat(every_shape())
    change(data)
    refused(tmp_path, json.dumps(data), str(tmp_path / "result.json") + ".*" + pattern)


def test_not_json_and_not_utf8_are_refused(tmp_path, telegram_agent):
    refused(
        tmp_path,
        "<html><body>Exported Data</body></html>",
        r"not JSON \(line 1, column 1: .*choose the machine-readable JSON",
    )
    refused(
        tmp_path, '{"name": "Ann", "messages": []}'.encode("utf-16"), r"not UTF-8 \(byte 0xff at offset 0\)"
    )
    refused(tmp_path, "[1, 2]", r"the top level is \[1, 2\]: expected an object")
    refused(tmp_path, '{"id": ' + "7" * 5000 + "}", r"not an export's JSON \(Exceeds the limit")


def test_an_unknown_agent_and_a_bad_me_are_refused(tmp_path, telegram_agent):
    path = write_export(tmp_path / "result.json", single_chat([message(1, text="a")]))
    with pytest.raises(CommandError, match=r"no agent named 'Nobody' \(agents: Wendy\)"):
        run("Nobody", str(path))
    with pytest.raises(CommandError, match=r"--me 'channel5': give a Telegram user id"):
        run("Wendy", str(path), "--me", "channel5")
    with pytest.raises(CommandError, match=r"--me '9{30}': give a Telegram user id"):
        run("Wendy", str(path), "--me", "9" * 30)
    with pytest.raises(CommandError, match=r"cannot be read \(No such file or directory\)"):
        run("Wendy", str(tmp_path / "missing.json"))


def test_an_export_of_the_agents_own_account_as_the_chat_is_refused(tmp_path, telegram_agent):
    chat = single_chat([message(1, sender=ANN_ID, text="hi")], chat_id=AGENT_ID, name="Wendy")
    with pytest.raises(CommandError, match=r"made from the other side's account"):
        run("Wendy", str(write_export(tmp_path / "result.json", chat)))


def test_skipped_file_stub_is_not_a_file_name():
    assert SKIPPED.startswith("(") and stamp(at(0))["date"] == "2024-05-01T18:00:00"


def test_the_next_turn_sees_the_imported_past(tmp_path, clock, fake_llm):
    """A sandbox agent's next turn with the person carries the imported messages in its history."""
    wendy = make_agent("Wendy")
    chat = single_chat(
        [
            message(1, name="You", text="Remember the allotment on Rue Oberkampf?"),
            message(2, sender=AGENT_ID, name="Wendy", text="The one with the blue shed, of course"),
        ],
        name="You",
    )
    run("Wendy", str(write_export(tmp_path / "result.json", chat)), "--me", str(AGENT_ID))
    harness = Harness(clock)
    harness.start()
    fake_llm.reply_with(tasks({"kind": "send", "text": "Good to hear from you!"}))
    live = sandbox_say(agent=wendy, text="hi, it's me again", as_name="You")
    harness.settle()
    assert live.message_id == 3
    prompt = json.dumps(fake_llm.requests[0].json, ensure_ascii=False)
    assert "Remember the allotment on Rue Oberkampf?" in prompt
    assert "The one with the blue shed, of course" in prompt
    assert Conversation.objects.get(agent=wendy).messages.count() >= 3
