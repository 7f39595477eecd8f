from cwimport.tests.cw_source import cw_source  # noqa: F401
from cwimport.tests.sessions import state_dir  # noqa: F401
from engine.tests.processes import child, child_template  # noqa: F401  (the real-process fixtures)
