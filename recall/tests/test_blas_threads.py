"""numpy's BLAS starts no thread pool in Cindy's processes (recall/apps.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from django.conf import settings

PROBE = """
import json, os, django
django.setup()
import numpy
print(json.dumps({"threads": len(os.listdir("/proc/self/task")), "env": os.environ.get("OPENBLAS_NUM_THREADS")}))
"""


def _probe(**env) -> dict:
    environment = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"} | env
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=settings.BASE_DIR,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_numpy_loaded_after_setup_runs_its_blas_on_the_calling_thread_alone():
    assert _probe() == {"threads": 1, "env": "1"}


def test_an_operator_s_own_blas_setting_is_kept():
    found = _probe(OPENBLAS_NUM_THREADS="2")
    assert found["env"] == "2"
    assert found["threads"] == min(2, os.cpu_count() or 1)
