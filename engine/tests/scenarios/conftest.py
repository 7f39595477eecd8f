import pytest

from engine.tests.processes import child_template  # noqa: F401  (the migrated database the stage copies)
from engine.tests.scenarios.spec import all_scenarios
from engine.tests.scenarios.stage import Stage


@pytest.fixture(scope="session")
def stage(tmp_path_factory, child_template):  # noqa: F811
    """One gateway with its workers and every sample persona, shared by all scenarios of the run."""
    stage = Stage(tmp_path_factory.mktemp("scenarios"), child_template, all_scenarios())
    stage.start()
    try:
        yield stage
    finally:
        stage.stop()
