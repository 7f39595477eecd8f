import pytest

from engine.tests.cast import agent, other_agent  # noqa: F401
from engine.tests.harness import Harness
from engine.tests.processes import child, child_template  # noqa: F401  (the real-process fixtures)


@pytest.fixture
def harness(agent, clock, fake_llm):  # noqa: F811
    """A started gateway on the sandbox; test modules may override it."""
    h = Harness(clock)
    h.start()
    return h
