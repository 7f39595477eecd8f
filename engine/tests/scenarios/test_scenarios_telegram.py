"""The scenarios marked `telegram = true` on the MTProto stand-in: the kinds that reach Telegram (send,
sticker, react, xsend between two DMs, block and unblock, a library photo uploaded with the send) through
Telethon and the wire protocol; recall of a long past (a `[backlog]` in the DM's history there), an
imported export, a consolidation turn, and a chat that finds nothing of another's."""

from __future__ import annotations

import pytest

from engine.tests.scenarios.play import play_on
from engine.tests.scenarios.spec import all_scenarios
from engine.tests.scenarios.telegram import TelegramStage

pytestmark = pytest.mark.slow

SCENARIOS = [s for s in all_scenarios() if s.telegram]


@pytest.fixture(scope="module")
def telegram_stage(tmp_path_factory, child_template):
    stage = TelegramStage(tmp_path_factory.mktemp("scenarios-telegram"), child_template, SCENARIOS)
    stage.start()
    try:
        yield stage
    finally:
        stage.stop()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_scenario_on_telegram(telegram_stage, scenario):
    play_on(telegram_stage, scenario, SCENARIOS)
