"""The scenario harness itself: the file format's errors, the log scan, the shipped files."""

from __future__ import annotations

import re

import pytest

from engine.tests.scenarios.health import Health, unexpected_log_lines, without_expected_refusals
from engine.tests.scenarios.play import Player
from engine.tests.scenarios.spec import SCENARIO_DIR, ScenarioError, all_scenarios, load


def scenario(tmp_path, text: str):
    path = tmp_path / "orla_x.toml"
    path.write_text(text, encoding="utf-8")
    return load(path)


GOOD_TURN = '[[turn]]\nsay = "hi"\nreply = [{kind = "send", text = "hello"}]\n'


def test_every_shipped_scenario_file_loads_and_names_its_kinds():
    scenarios = all_scenarios()
    assert {s.persona for s in scenarios} == {"Wendy", "Bramble", "Orla"}
    assert all(s.kinds for s in scenarios)
    assert len(scenarios) == len(list(SCENARIO_DIR.glob("*.toml")))


def test_a_turn_reads_the_media_a_person_sends_and_the_description_check(tmp_path):
    loaded = scenario(
        tmp_path,
        'persona = "Orla"\npeople = ["Ada"]\nsaved_stickers = ["KeptSet::🦔"]\n'
        + GOOD_TURN
        + 'media = {kind = "video_note", seconds = 75}\ndescribe = "none"\n',
    )
    turn = loaded.turns[0]
    assert turn.media_spec == {"kind": "video_note", "seconds": 75} and turn.describe == "none"
    assert loaded.saved_stickers == (("KeptSet", "🦔"),)


def test_a_scenario_reads_its_turns_people_and_kinds(tmp_path):
    loaded = scenario(tmp_path, 'persona = "Orla"\npeople = ["Ada", "Ben"]\n' + GOOD_TURN)
    assert loaded.kinds == {"send"}
    assert loaded.user("Ben") == "Ben orla_x"
    assert loaded.turns[0].person == "Ada" and loaded.turns[0].trigger == "message"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'persona = "Olga"\npeople = ["Ada"]\n' + GOOD_TURN,
            "persona is 'Olga': use one of Wendy, Bramble, Orla",
        ),
        ('persona = "Orla"\npeople = ["Ada"]\ncolour = 1\n' + GOOD_TURN, "unknown key(s) ['colour']"),
        ('persona = "Orla"\npeople = ["A d"]\n' + GOOD_TURN, "list one or more first names"),
        ('persona = "Orla"\npeople = ["Ada"]\n', "no [[turn]]: add at least one"),
        (
            'persona = "Orla"\npeople = ["Ada"]\n[[turn]]\ntrigger = "xsend"\nsay = "hi"\nreply = []\n',
            "a turn either says something",
        ),
        (
            'persona = "Orla"\npeople = ["Ada"]\n[[turn]]\nsay = "hi"\nreply = [{text = "no kind"}]\n',
            "turn 1: reply must be a list of tasks, each with a kind",
        ),
        (
            'persona = "Orla"\npeople = ["Ada"]\noperators = ["Bo"]\n' + GOOD_TURN,
            "operators ['Bo'] are not in people",
        ),
        ('persona = "Orla"\npeople = ["Ada"]\n[[turn]\n', "not valid TOML"),
        (
            'persona = "Orla"\npeople = ["Ada"]\n[[turn]]\nsay = "hi"\nanswered = false\nreply = []\n',
            "turn 1: answered = false is a message that starts no LLM call: remove reply",
        ),
        (
            'persona = "Orla"\npeople = ["Ada"]\n[[turn]]\nsay = "hi"\ntyping = {seconds = 30}\n'
            'reply = [{kind = "send", text = "x"}]\n',
            "turn 1: typing seconds is 30: give more than 0 and at most 6",
        ),
        (
            'persona = "Orla"\npeople = ["Ada"]\nuser_ids = {Tg = 777000}\n' + GOOD_TURN,
            "user_ids ['Tg'] are not in people",
        ),
        ('persona = "Orla"\npeople = ["Ada"]\nbots = ["Bo"]\n' + GOOD_TURN, "bots ['Bo'] are not in people"),
        (
            'persona = "Orla"\npeople = ["Ada"]\ngroup = {title = "Club", agents = ["Orla"]}\n' + GOOD_TURN,
            "group agents ['Orla']: name other personas than Orla",
        ),
        (
            'persona = "Orla"\npeople = ["Ada"]\ngroup = {title = "Club", agents = ["Wendy"]}\n'
            + GOOD_TURN
            + 'chain = [{agent = "Bramble", reply = []}]\n',
            "turn 1: chain entry",
        ),
        (
            'persona = "Orla"\npeople = ["Ada"]\n[[turn]]\noperator = {llm = "x"}\nsay = "hi"\nreply = []\n',
            "operator is {'llm': 'x'}: set one or more of daily_spend_cap",
        ),
        (
            'persona = "Orla"\npeople = ["Ada"]\n[[turn]]\ntrigger = "operator"\nreply = []\n',
            'trigger = "operator" needs an operator change',
        ),
        (
            'persona = "Orla"\npeople = ["Ada"]\n[[turn]]\nparameters = {OPENAI_API_KEY = "x"}\nsay = "hi"\nreply = []\n',
            "parameters is {'OPENAI_API_KEY': 'x'}: set one or more of DEFAULT_AGENT_LLM",
        ),
        (
            'persona = "Orla"\npeople = ["Ada"]\n[[turn]]\nparameters = {CINDY_HISTORY_SIZE = "2"}\nsay = "hi"\n'
            "reply = []\n",
            "turn 1 sets the parameter CINDY_HISTORY_SIZE and no later turn resets it",
        ),
        (
            'persona = "Orla"\npeople = ["Ada"]\n[[turn]]\nsay = "hi"\nbraked = true\nreply = []\n',
            "a braked turn is a message the brake holds: it has a say and no reply",
        ),
        (
            'persona = "Orla"\npeople = ["Ada"]\n[[turn]]\nsay = "hi"\nreply = []\nusage = {tokens = 5}\n',
            "usage is {'tokens': 5}: use token counts of input_tokens",
        ),
        (
            'persona = "Orla"\npeople = ["Ada"]\n' + GOOD_TURN + 'media = {kind = "gif", seconds = 3}\n',
            "turn 1: media is {'kind': 'gif', 'seconds': 3}: kind must be one of animated_sticker",
        ),
        (
            'persona = "Orla"\npeople = ["Ada"]\n'
            + GOOD_TURN
            + 'media = {kind = "animated_sticker", name = "🐸"}\n',
            "an animated sticker names one of",
        ),
        (
            'persona = "Orla"\npeople = ["Ada"]\n' + GOOD_TURN + 'media = {kind = "video", seconds = 7.5}\n',
            "a video gives its length in whole seconds",
        ),
        (
            'persona = "Orla"\npeople = ["Ada"]\n' + GOOD_TURN + 'describe = "video"\n',
            'turn 1: describe is \'video\': use "images" or "none"',
        ),
        (
            'persona = "Orla"\npeople = ["Ada"]\nsaved_stickers = ["KeptSet::🐸"]\n' + GOOD_TURN,
            "saved_stickers has 'KeptSet::🐸': name one of",
        ),
        (
            'persona = "Orla"\npeople = ["Ada"]\n' + GOOD_TURN + "pause = 600\n",
            "turn 1: pause is 600: give the seconds to wait first, 0 to 60",
        ),
        (
            'persona = "Orla"\npeople = ["Ada"]\n[[turn]]\nsay = "hi"\nreply = [{kind = "react", emoji = "x"}]\n'
            "start_delay = true\n",
            "turn 1: start_delay is about the turn's first send",
        ),
        (
            'persona = "Orla"\npeople = ["Ada"]\n' + GOOD_TURN + 'contacts = ["Bo"]\n',
            "turn 1: contacts ['Bo'] are not in people",
        ),
        (
            'persona = "Orla"\npeople = ["Ada"]\n' + GOOD_TURN + 'rights = "restricted"\n',
            "turn 1: rights is 'restricted': in a group scenario",
        ),
        (
            'persona = "Orla"\npeople = ["Ada"]\ngroup = {title = "Club"}\n'
            + GOOD_TURN
            + 'rights = "mute"\n',
            "turn 1: rights is 'mute': in a group scenario, use one of 'read_only'",
        ),
        (
            'persona = "Orla"\npeople = ["Ada"]\ntelegram = true\ngroup = {title = "Club", agents = ["Wendy"]}\n'
            + GOOD_TURN,
            "a group scenario with other agents plays on the sandbox only",
        ),
        ('persona = "Orla"\npeople = ["Ada"]\n' + GOOD_TURN + 'online = "yes"\n', "turn 1: online is 'yes'"),
        (
            'persona = "Orla"\npeople = ["Ada"]\ngroup = {title = "Club"}\n'
            + GOOD_TURN
            + 'topic = "Seeds"\n',
            'a turn has a topic, but the group has none: set group = {title = "...", forum = true}',
        ),
        (
            'persona = "Orla"\npeople = ["Ada"]\ngroup = {title = "Club", forum = "yes"}\n' + GOOD_TURN,
            "group forum is 'yes': use true or false",
        ),
        (
            'persona = "Orla"\npeople = ["Ada"]\ngroup = {title = "Club", forum = true}\n'
            + GOOD_TURN
            + 'topic = ""\n',
            "topic ['']: give each a title of 1 to 128 characters",
        ),
        ('persona = "Orla"\npeople = ["Ada"]\nthrough_api = "yes"\n' + GOOD_TURN, "through_api is 'yes'"),
        (
            'persona = "Orla"\npeople = ["Ada"]\nthrough_api = true\ntelegram = true\n' + GOOD_TURN,
            "the REST API speaks as sandbox people only: remove telegram, bots and user_ids",
        ),
    ],
)
def test_a_bad_scenario_file_is_refused_naming_the_file_and_the_fix(tmp_path, text, message):
    with pytest.raises(ScenarioError) as error:
        scenario(tmp_path, text)
    assert "orla_x.toml" in str(error.value) and message in str(error.value)


def test_a_scenario_reads_the_person_like_keys(tmp_path):
    loaded = scenario(
        tmp_path,
        'persona = "Orla"\npeople = ["Ada", "Tg", "Bo"]\nuser_ids = {Tg = 777000}\nbots = ["Bo"]\n'
        'group = {title = "Club", agents = ["Wendy"]}\n'
        '[[turn]]\nas = "Tg"\nsay = "code 12345"\nanswered = false\nstored_lacks = ["12345"]\n'
        '[[turn]]\nsay = "hi"\ntyping = {seconds = 6, then = "and"}\nreply = [{kind = "send", text = "a"}]\n'
        'chain = [{agent = "Wendy", reply = [{kind = "send", text = "b"}]}]\nloop_guard = true\n',
    )
    assert (loaded.user_ids, loaded.bots, loaded.group_agents) == ({"Tg": 777000}, ("Bo",), ("Wendy",))
    assert loaded.group_title == "Club orla_x"
    silent, typed = loaded.turns
    assert (silent.answered, silent.replies, silent.stored_lacks) == (False, (), ("12345",))
    assert (typed.typing_seconds, typed.typing_then, typed.chain, len(typed.replies)) == (
        6.0,
        "and",
        ("Wendy",),
        2,
    )
    assert typed.loop_guard is True


def test_a_scenario_reads_the_presence_and_permission_keys(tmp_path):
    loaded = scenario(
        tmp_path,
        'persona = "Orla"\npeople = ["Ada"]\ntelegram = true\ngroup = {title = "Desk"}\n'
        + GOOD_TURN
        + "pause = 16\nstart_delay = false\ncontacts = []\nonline = true\nonline_before = false\n"
        + 'rights = "read_only"\n',
    )
    assert loaded.telegram and loaded.group == "Desk" and loaded.group_agents == ()
    (turn,) = loaded.turns
    assert (turn.pause, turn.start_delay, turn.contacts, turn.online, turn.online_before, turn.rights) == (
        16.0,
        False,
        (),
        True,
        False,
        "read_only",
    )
    assert scenario(tmp_path, 'persona = "Orla"\npeople = ["Ada"]\n' + GOOD_TURN).turns[0].rights is None


def test_a_scenario_may_speak_through_the_rest_api(tmp_path):
    assert scenario(
        tmp_path, 'persona = "Orla"\npeople = ["Ada"]\nthrough_api = true\n' + GOOD_TURN
    ).through_api
    assert not scenario(tmp_path, 'persona = "Orla"\npeople = ["Ada"]\n' + GOOD_TURN).through_api


def test_the_log_scan_reports_warnings_errors_and_tracebacks_not_expected_by_name():
    log = (
        "2026-01-01 10:00:00,000 INFO engine.gateway: holding agent Orla\n"
        "2026-01-01 10:00:01,000 WARNING engine.runner: node 9 (xsend) of agent 3 failed: boom\n"
        "2026-01-01 10:00:02,000 ERROR engine.media: download failed\n"
        "Traceback (most recent call last):\n"
        "2026-01-01 10:00:03,000 WARNING engine.stickers: set ForestFriends is stale\n"
    )
    assert unexpected_log_lines(log, expected=["engine.stickers: set ForestFriends"]) == [
        "2026-01-01 10:00:01,000 WARNING engine.runner: node 9 (xsend) of agent 3 failed: boom",
        "2026-01-01 10:00:02,000 ERROR engine.media: download failed",
        "Traceback (most recent call last):",
    ]
    assert unexpected_log_lines("2026-01-01 10:00:00,000 INFO x: a WARNING in the text\n") == []


VOICE = 'persona = "Orla"\npeople = ["Ada"]\n'
VOICE_REPLY = 'reply = [{kind = "send", text = "hello"}]\n'


def test_a_voice_turn_says_a_note_and_the_same_note_again(tmp_path):
    loaded = scenario(
        tmp_path,
        VOICE
        + '[[turn]]\nvoice = {name = "hi", seconds = 2.5, transcript = "Hello there"}\n'
        + VOICE_REPLY
        + '[[turn]]\nvoice = {name = "hi"}\n'
        + VOICE_REPLY,
    )
    first, again = loaded.turns
    assert (first.trigger, first.say, first.voice, first.voice_seconds) == ("message", "", "hi", 2.5)
    assert first.voice_transcript == "Hello there"
    assert (again.voice, again.voice_seconds, again.voice_transcript) == ("hi", 0.0, "")


@pytest.mark.parametrize(
    ("turns", "message"),
    [
        (
            '[[turn]]\nsay = "hi"\nvoice = {seconds = 2, transcript = "x"}\n',
            "turn 1: a turn says text or a voice note, not both",
        ),
        ('[[turn]]\nvoice = {seconds = 61, transcript = "x"}\n', "voice seconds is 61: give more than 0"),
        ('[[turn]]\nvoice = {seconds = 2, words = "x"}\n', "voice is {'seconds': 2, 'words': 'x'}"),
        ('[[turn]]\nvoice = {name = "a b", seconds = 2, transcript = "x"}\n', "voice name is 'a b'"),
        (
            '[[turn]]\nvoice = {name = "n"}\n',
            "turn 1: voice 'n' is said for the first time: give its seconds",
        ),
        (
            '[[turn]]\nvoice = {seconds = 2, transcript = "x"}\n'
            + VOICE_REPLY
            + '[[turn]]\nvoice = {seconds = 2, transcript = "x"}\n',
            "turn 2: voice 'voice' was said before: the same note again has no seconds or transcript",
        ),
        (
            '[[turn]]\nvoice = {seconds = 2, transcript = "x"}\ntyping = {seconds = 2}\n',
            "typing follows a text message",
        ),
    ],
)
def test_a_bad_voice_turn_is_refused_with_the_fix(tmp_path, turns, message):
    with pytest.raises(ScenarioError, match=re.escape(message)):
        scenario(tmp_path, VOICE + turns + ("" if turns.endswith(VOICE_REPLY) else VOICE_REPLY))


def test_a_bot_cannot_say_a_voice_note(tmp_path):
    with pytest.raises(ScenarioError, match="Ada says a voice note as a person: a bot"):
        scenario(
            tmp_path,
            VOICE + 'bots = ["Ada"]\n[[turn]]\nvoice = {seconds = 2, transcript = "x"}\n' + VOICE_REPLY,
        )


def test_a_refusal_a_turn_expects_in_its_activity_is_not_trouble_and_others_still_are():
    report = Health(
        events={"policy_refused": 2},
        refusals=[
            "policy_refused: Refused image: CINDY_IMAGES_PER_DAY allows 2",
            "policy_refused: Refused block: only in direct messages",
        ],
    )
    kept = without_expected_refusals(report, ["CINDY_IMAGES_PER_DAY allows 2"])
    assert kept.problems == [
        "1 policy_refused event(s)",
        "policy_refused: Refused block: only in direct messages",
    ]
    assert without_expected_refusals(kept, ["only in direct messages"]).problems == []


def test_a_scenario_reads_the_picture_keys(tmp_path):
    loaded = scenario(
        tmp_path,
        'persona = "Orla"\npeople = ["Ada"]\n[[turn]]\nsay = "draw"\n'
        'reply = [{kind = "image", description = "A gull"}]\npicture = "A gull"\npictures = 1\n',
    )
    assert loaded.kinds == {"image"}
    assert (loaded.turns[0].picture, loaded.turns[0].pictures) == ("A gull", 1)
    with pytest.raises(ScenarioError, match="turn 1: pictures is -1: give how many pictures the turn makes"):
        scenario(tmp_path, 'persona = "Orla"\npeople = ["Ada"]\n' + GOOD_TURN + "pictures = -1\n")


def test_a_scenario_reads_the_attention_keys(tmp_path):
    loaded = scenario(
        tmp_path,
        'persona = "Orla"\npeople = ["Ada"]\n'
        + GOOD_TURN
        + '[[turn]]\nmute = true\nsay = "psst"\nunseen = true\nanswered = false\n'
        + '[[turn]]\ntrigger = "mark_unread"\nreply = [{kind = "send", text = "back"}]\n',
    )
    first, second, third = loaded.turns
    assert (first.mute, first.unseen) == (False, False)
    assert (second.mute, second.unseen, second.answered) == (True, True, False)
    assert (third.trigger, third.say) == ("mark_unread", "")


@pytest.mark.parametrize(
    ("turn", "message"),
    [
        ('trigger = "mark_unread"\nunseen = true\nreply = []\n', "unseen is a message whose update is lost"),
        ('say = "hi"\nunseen = true\ntyping = {seconds = 3}\nreply = []\n', "no typing or braked"),
        ('say = "hi"\nmute = "yes"\nreply = []\n', "mute is 'yes': use true or false"),
        ('trigger = "mark_unread"\nsay = "hi"\nreply = []\n', '"operator" or "mark_unread"'),
    ],
)
def test_bad_attention_keys_are_refused_with_the_fix(tmp_path, turn, message):
    with pytest.raises(ScenarioError, match="turn 1") as refused:
        scenario(tmp_path, 'persona = "Orla"\npeople = ["Ada"]\n[[turn]]\n' + turn)
    assert message in str(refused.value)


def test_a_forum_scenario_reads_its_topics_and_may_play_on_telegram(tmp_path):
    loaded = scenario(
        tmp_path,
        'persona = "Orla"\npeople = ["Ada"]\ntelegram = true\ngroup = {title = "Allotment", forum = true}\n'
        + GOOD_TURN
        + 'topic = "Seeds"\n'
        + GOOD_TURN,
    )
    assert (loaded.forum, loaded.telegram, loaded.group_title) == (True, True, "Allotment orla_x")
    assert [t.topic for t in loaded.turns] == ["Seeds", ""]


class _TopicStage:
    """Just what the player's topic check reads: each message's topic title ("": General)."""

    def __init__(self, topics: dict[int, str]) -> None:
        self.topics = topics

    def message_topics(self, scenario) -> dict[int, str]:
        return self.topics


def test_a_forum_turn_fails_for_an_agent_line_in_another_topic_or_in_general(tmp_path):
    loaded = scenario(
        tmp_path,
        'persona = "Orla"\npeople = ["Ada"]\ngroup = {title = "Allotment", forum = true}\n'
        + GOOD_TURN
        + 'topic = "Seeds"\n',
    )
    player = Player(_TopicStage({1: "Seeds", 2: "Tools"}), loaded)
    new = [(1, True, "Orla: peas", [], []), (2, True, "Orla: spade", [], []), (3, True, "Orla: hi", [], [])]

    kept = player._in_topic(loaded.turns[0], "turn 1", new)

    assert [m[0] for m in kept] == [1]
    assert player.failures == [
        "turn 1: the agent wrote #2 in 'Tools', not in 'Seeds'",
        "turn 1: the agent wrote #3 in General, not in 'Seeds'",
    ]


def _note(seconds: float) -> bytes:
    import math
    import struct

    from conversations.voice_encoding import encode_voice_note

    count = round(seconds * 24_000)
    pcm = struct.pack(f"<{count}h", *(int(6000 * math.sin(i / 9)) for i in range(count)))
    return encode_voice_note(pcm, sample_rate=24_000).data


def test_a_voice_note_is_shown_by_its_decoded_length_and_checked_against_what_it_states():
    from engine.tests.scenarios.play import render
    from engine.tests.scenarios.voice import voice_part, voice_problems

    data = _note(2.1)
    sandbox = voice_part(data, stated=2.1, whole_seconds=False)
    telegram = voice_part(data, stated=3, whole_seconds=True)
    assert render((1, True, "", [sandbox], [])) == "(voice 2.1 s)"
    assert voice_problems(sandbox) == [] and voice_problems(telegram) == []
    assert voice_problems(voice_part(data, stated=4.0, whole_seconds=False)) == [
        "a voice note of 2.10 s that states 4.00 s"
    ]
    assert voice_problems(voice_part(data, stated=2, whole_seconds=True)) == [
        "a voice note of 2.10 s that states 2 s"
    ]
    assert voice_problems(voice_part(None, stated=2.1, whole_seconds=False)) == [
        "a voice note without its file"
    ]
    broken = voice_part(b"OggS not really", stated=1.0, whole_seconds=False)
    assert voice_problems(broken)[0].startswith("a voice note that does not decode")
    assert render((1, True, "", [broken], [])) == "(voice undecodable)"


def test_a_scenario_reads_a_photo_and_the_operator_saving_it(tmp_path):
    loaded = scenario(
        tmp_path,
        'persona = "Orla"\npeople = ["Ada"]\n'
        + GOOD_TURN
        + 'media = {kind = "photo", text = "kite"}\n'
        + '[[turn]]\nsave_media = " A red kite "\nsay = "back?"\n'
        + 'reply = [{kind = "send_media", unique_id = "$saved:2"}]\n',
    )
    first, second = loaded.turns
    assert (first.media_spec, first.save_media) == ({"kind": "photo", "text": "kite"}, "")
    assert second.save_media == "A red kite" and second.media == ()


@pytest.mark.parametrize(
    ("turn", "message"),
    [
        ('say = "hi"\nsave_media = ""\nreply = []\n', "save_media is '': give the description"),
        ('say = "hi"\nsave_media = true\nreply = []\n', "save_media is True: give the description"),
        ('say = "hi"\nmedia = {kind = "photo"}\nreply = []\n', "a photo names the text it shows"),
        (
            'say = "hi"\nmedia = {kind = "photo", text = "a", seconds = 3}\nreply = []\n',
            "a photo names the text",
        ),
    ],
)
def test_bad_save_media_and_photo_keys_are_refused_with_the_fix(tmp_path, turn, message):
    with pytest.raises(ScenarioError, match="turn 1") as refused:
        scenario(tmp_path, 'persona = "Orla"\npeople = ["Ada"]\n[[turn]]\n' + turn)
    assert message in str(refused.value)


ROUTES_TURN = (
    GOOD_TURN
    + '[turn.routes]\nfail = {model = "gemini-2.5-flash", times = 2}\ncooled = "gemini/gemini-2.5-flash"\n'
    + 'tried = ["gemini/gemini-2.5-flash", "openai/gpt-5-mini"]\n'
    + 'answered_by = "openai/gpt-5-mini (fallback after gemini/gemini-2.5-flash failed)"\n'
    + 'breakers = {"gemini/gemini-2.5-flash" = "open"}\n'
)


def test_a_turn_reads_its_routes_an_outage_of_one_model_and_what_the_planning_did(tmp_path):
    routes = scenario(tmp_path, 'persona = "Bramble"\npeople = ["Ada"]\n' + ROUTES_TURN).turns[0].routes

    assert (routes.fail.model, routes.fail.status, routes.fail.times) == ("gemini-2.5-flash", 503, 2)
    assert routes.cooled == "gemini/gemini-2.5-flash"
    assert routes.tried == ("gemini/gemini-2.5-flash", "openai/gpt-5-mini")
    assert routes.answered_by.startswith("openai/gpt-5-mini (fallback after")
    assert routes.breakers == (("gemini/gemini-2.5-flash", "open"),)
    assert scenario(tmp_path, 'persona = "Bramble"\npeople = ["Ada"]\n' + GOOD_TURN).turns[0].routes is None


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('tries = ["gemini/x"]', "routes is {'tries': ['gemini/x']}: use the keys fail, cooled, tried"),
        (
            'tried = ["gemini-2.5-flash"]',
            "routes tried is ['gemini-2.5-flash']: list routes as provider/model",
        ),
        ('fail = {model = "gemini-2.5-flash"}', "routes fail times is None: how many requests fail, 1 to 20"),
        (
            'fail = {model = "gemini-2.5-flash", times = 2, status = 400}',
            "routes fail status is 400: a status",
        ),
        ('fail = {model = "", times = 1}', "routes fail model is '': the model's name as requested"),
        (
            'breakers = {"gemini/x" = "half"}',
            "routes breakers is {'gemini/x': 'half'}: map provider/model to",
        ),
        ('cooled = "gemini"', "routes cooled is 'gemini': name the route whose cool-down to wait out"),
        ('answered_by = "gpt-5-mini"', "routes answered_by is 'gpt-5-mini': the activity line's words"),
    ],
)
def test_bad_routes_tables_are_refused_with_the_fix(tmp_path, table, message):
    with pytest.raises(ScenarioError, match=re.escape(f"orla_x.toml: turn 1: {message}")):
        scenario(tmp_path, 'persona = "Orla"\npeople = ["Ada"]\n' + GOOD_TURN + f"[turn.routes]\n{table}\n")


def test_an_outage_not_fully_requested_fails_the_scenario_and_ends_there(tmp_path):
    from cindy_site.testing.fake_llm import FakeLLMServer
    from engine.tests.scenarios.route_checks import leftover

    loaded = scenario(tmp_path, 'persona = "Bramble"\npeople = ["Ada"]\n' + ROUTES_TURN)
    with FakeLLMServer() as server:
        server.fail_model("gemini-2.5-flash", 503, times=2)

        assert leftover(server, loaded) == [
            "2 failure(s) of gemini-2.5-flash were never requested: fewer requests reached it"
        ]
        assert server.model_failures_left("gemini-2.5-flash") == 0
        assert leftover(server, loaded) == []


def test_a_scenario_reads_its_backlog(tmp_path):
    read = scenario(
        tmp_path,
        'persona = "Orla"\npeople = ["Ada"]\n'
        '[backlog]\ncount = 5\nlines = ["one", "two"]\nplanted = [{at = 4, text = "the fact"}]\n' + GOOD_TURN,
    )

    assert [read.backlog.text(n) for n in range(1, 6)] == ["one", "two", "one", "the fact", "one"]
    assert scenario(tmp_path, 'persona = "Orla"\npeople = ["Ada"]\n' + GOOD_TURN).backlog is None


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("count = 5\nlines = []\n", "lines is []: give one or more non-empty lines"),
        ('count = 0\nlines = ["x"]\n', "count is 0: give a number of messages from 1 to 5000"),
        (
            'count = 5\nlines = ["x"]\nsize = 3\n',
            "unknown key(s) ['size']: use ['count', 'lines', 'planted']",
        ),
        (
            'count = 5\nlines = ["x"]\nplanted = [{at = 9, text = "y"}]\n',
            "planted has {'at': 9, 'text': 'y'}: give each as {at = N, text = \"...\"} with N from 1 to 5",
        ),
    ],
)
def test_a_bad_backlog_is_refused_with_the_fix(tmp_path, table, message):
    with pytest.raises(ScenarioError, match=re.escape(message)):
        scenario(tmp_path, 'persona = "Orla"\npeople = ["Ada"]\n[backlog]\n' + table + GOOD_TURN)


def test_a_backlog_is_seeded_in_a_dm_on_either_transport(tmp_path):
    backlog = '[backlog]\ncount = 5\nlines = ["x"]\n'
    read = scenario(tmp_path, 'persona = "Orla"\npeople = ["Ada"]\ntelegram = true\n' + backlog + GOOD_TURN)
    assert read.telegram and read.backlog.count == 5
    with pytest.raises(
        ScenarioError, match=re.escape("a backlog is seeded in a DM with the first person: remove group")
    ):
        scenario(
            tmp_path,
            'persona = "Orla"\npeople = ["Ada"]\ngroup = {title = "Club"}\n' + backlog + GOOD_TURN,
        )


def test_a_recall_turn_reads_what_the_answer_after_it_must_lack_and_history_plays_on_telegram(tmp_path):
    read = scenario(
        tmp_path,
        'persona = "Orla"\npeople = ["Ada"]\ntelegram = true\n[[turn]]\nsay = "hi"\n'
        'history = [{text = "Remember the jam?"}, {text = "Of course", agent = true}]\n'
        'reply = [{kind = "recall", query = "key"}]\nafter_retrieve = [{kind = "send", text = "No."}]\n'
        'retrieved_lacks = ["brass otter"]\n',
    )
    [turn] = read.turns
    assert read.telegram and turn.retrieved_lacks == ("brass otter",)
    assert turn.history == (("Remember the jam?", False), ("Of course", True))
    with pytest.raises(
        ScenarioError, match=re.escape("a turn imports history: an imported export lands in a DM")
    ):
        scenario(
            tmp_path,
            'persona = "Orla"\npeople = ["Ada"]\ngroup = {title = "Club"}\n[[turn]]\nsay = "hi"\n'
            'history = [{text = "Remember?"}]\nreply = [{kind = "send", text = "Yes."}]\n',
        )


ENDPOINT_SCENARIO = (
    'persona = "Wendy"\nllm = "ollama:llama3.1"\npeople = ["Ada"]\n[[turn]]\nsay = "hi"\n'
    'reply = [{kind = "think", text = "be kind"}, {kind = "send", text = "hello"}]\n'
    '[turn.routes]\nrefuse_response_format = 400\nformats = ["response_format", "prompt"]\nmarkdown = true\n'
    'note = "ollama refused response_format (400"\ntried = ["ollama/llama3.1"]\n'
)


def test_a_scenario_puts_its_persona_on_an_endpoint_and_a_turn_reads_the_endpoint_keys(tmp_path):
    loaded = scenario(tmp_path, ENDPOINT_SCENARIO)
    routes = loaded.turns[0].routes

    assert loaded.llm == "ollama:llama3.1"
    assert routes.refuse_response_format == 400
    assert routes.formats == ("response_format", "prompt")
    assert routes.markdown is True
    assert routes.note == "ollama refused response_format (400"
    assert routes.tried == ("ollama/llama3.1",)
    assert scenario(tmp_path, 'persona = "Wendy"\npeople = ["Ada"]\n' + GOOD_TURN).llm == ""


def test_a_markdown_reply_is_the_original_blocks_the_legacy_parser_reads_back():
    from engine.tests.scenarios.routes import markdown_reply
    from llm.parsing import parse_reply

    tasks = [{"kind": "think", "text": "be kind"}, {"kind": "send", "text": "Hello there.\n\nTwo lines."}]
    text = markdown_reply(tasks)
    parsed = parse_reply(text)

    assert text.startswith("# «think»\nbe kind\n\n# «send»\n")
    assert [(t.kind, t.params["text"]) for t in parsed.tasks] == [
        ("think", "be kind"),
        ("send", "Hello there.\n\nTwo lines."),
    ]
    assert not parsed.errors


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('llm = ""\n' + GOOD_TURN, "llm is '': the LLM name the persona's `# LLM` would hold"),
        ("llm = 3\n" + GOOD_TURN, "llm is 3: the LLM name"),
        (
            GOOD_TURN + "[turn.routes]\nrefuse_response_format = 503\n",
            "turn 1: routes refuse_response_format is 503: the status a server without structured output",
        ),
        (
            GOOD_TURN + '[turn.routes]\nformats = ["json"]\n',
            "turn 1: routes formats is ['json']: list the endpoint's requests in order",
        ),
        (GOOD_TURN + '[turn.routes]\nmarkdown = "yes"\n', "turn 1: routes markdown is 'yes': true or false"),
        (GOOD_TURN + '[turn.routes]\nnote = " "\n', "turn 1: routes note is ' ': text the answering call's"),
        (
            '[[turn]]\nsay = "hi"\nreply = [{kind = "react", emoji = "👍", message_id = "$last"}]\n'
            "[turn.routes]\nmarkdown = true\n",
            "turn 1: a markdown reply holds {'kind': 'react'",
        ),
    ],
)
def test_bad_endpoint_keys_are_refused_with_the_fix(tmp_path, text, message):
    with pytest.raises(ScenarioError, match=re.escape(f"orla_x.toml: {message}")):
        scenario(tmp_path, 'persona = "Wendy"\npeople = ["Ada"]\n' + text)


def test_a_refusal_of_response_format_no_request_met_fails_the_scenario_and_ends_there(tmp_path):
    from cindy_site.testing.fake_llm import FakeLLMServer
    from engine.tests.scenarios.route_checks import leftover

    loaded = scenario(tmp_path, ENDPOINT_SCENARIO)
    with FakeLLMServer() as server:
        server.refuse_response_format(400, times=1)

        assert leftover(server, loaded) == [
            "1 refusal(s) of response_format were never requested: no request to the endpoint carried it"
        ]
        assert server.response_format_refusals_left() == 0
        assert leftover(server, loaded) == []


def test_a_counted_refusal_of_response_format_refuses_that_many_requests_then_accepts_it():
    import json
    import urllib.error
    import urllib.request

    from cindy_site.testing.fake_llm import FakeLLMServer

    body = {"model": "llama3.1", "messages": [{"role": "user", "content": "hi"}]}
    structured = body | {"response_format": {"type": "json_schema", "json_schema": {"name": "reply"}}}

    def post(server, payload) -> int:
        request = urllib.request.Request(
            server.url + "/ollama/v1/chat/completions",
            data=json.dumps(payload).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status
        except urllib.error.HTTPError as exc:
            return exc.code

    with FakeLLMServer() as server:
        server.refuse_response_format(400, times=1)

        assert [post(server, body), post(server, structured), post(server, structured)] == [200, 400, 200]
        assert server.response_format_refusals_left() == 0


def test_a_scenario_names_the_scenario_it_builds_on(tmp_path):
    (tmp_path / "earlier.toml").write_text('persona = "Orla"\npeople = ["Ada"]\n' + GOOD_TURN)
    later = tmp_path / "later.toml"
    later.write_text('persona = "Orla"\npeople = ["Ben"]\nafter = "earlier"\n' + GOOD_TURN)
    assert load(later).after == "earlier"
    later.write_text('persona = "Orla"\npeople = ["Ben"]\nafter = "earliest"\n' + GOOD_TURN)
    with pytest.raises(ScenarioError, match=re.escape("after is 'earliest': name another scenario file")):
        load(later)
    later.write_text('persona = "Orla"\npeople = ["Ben"]\ntelegram = true\nafter = "earlier"\n' + GOOD_TURN)
    with pytest.raises(ScenarioError, match="this scenario plays on Telegram, that one does not"):
        load(later)


def test_a_scenario_run_alone_plays_the_one_it_builds_on_first_and_none_twice(monkeypatch):
    from engine.tests.scenarios import play

    shipped = {s.name: s for s in all_scenarios()}
    played = []
    monkeypatch.setattr(play.Player, "play", lambda self: played.append(self.scenario.name))

    class Played:
        played: set[str] = set()

    stage = Played()
    play.play_on(stage, shipped["bramble_across_group"], list(shipped.values()))
    assert played == ["bramble_across", "bramble_across_group"]
    play.play_on(stage, shipped["bramble_across"], list(shipped.values()))
    assert played == ["bramble_across", "bramble_across_group"]
