from engine.tests.processes import child_template  # noqa: F401  (the migrated database the stages copy)
