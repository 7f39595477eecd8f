from engine.tests.cast import agent, other_agent  # noqa: F401
