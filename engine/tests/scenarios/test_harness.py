"""The scenario harness itself: the file format's errors, the log scan, the shipped files."""

from __future__ import annotations

import pytest

from engine.tests.scenarios.health import unexpected_log_lines
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
            'persona = "Orla"\npeople = ["Ada"]\n[[turn]]\nsay = "hi"\nbraked = true\nreply = []\n',
            "a braked turn is a message the brake holds: it has a say and no reply",
        ),
        (
            'persona = "Orla"\npeople = ["Ada"]\n[[turn]]\nsay = "hi"\nreply = []\nusage = {tokens = 5}\n',
            "usage is {'tokens': 5}: use token counts of input_tokens",
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
