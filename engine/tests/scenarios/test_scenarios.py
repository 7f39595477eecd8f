"""The scenario suite on the sandbox: every sample persona, driven through real processes by the
scenario files in files/ (docs/scenarios.md, "Scenarios")."""

from __future__ import annotations

import pytest

from engine.tests.scenarios.play import play_on
from engine.tests.scenarios.spec import PERSONAS, all_scenarios
from engine.tests.scenarios.stage import Stage

pytestmark = pytest.mark.slow

SCENARIOS = all_scenarios()


@pytest.fixture(scope="module")
def stage(tmp_path_factory, child_template):
    """One gateway with its workers and every sample persona, shared by the scenarios of this module."""
    stage = Stage(tmp_path_factory.mktemp("scenarios"), child_template, SCENARIOS)
    stage.start()
    try:
        yield stage
    finally:
        stage.stop()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_scenario(stage, scenario):
    play_on(stage, scenario, SCENARIOS)


@pytest.mark.parametrize("persona", PERSONAS)
def test_the_scenarios_use_every_kind_the_personas_prompts_teach(stage, persona):
    used = set().union(*(s.kinds for s in SCENARIOS if s.persona == persona))
    taught = stage.taught[persona]
    assert used == taught, (
        f"{persona}: kinds taught but in no scenario: {sorted(taught - used)}; kinds in a scenario but not "
        f"taught: {sorted(used - taught)} (add a scenario file in engine/tests/scenarios/files/)"
    )
