"""Loaded by every process of a `bench/tree_trace.py` run (PYTHONPATH): counts each SQL statement the
process runs, by thread, and (with CINDY_TRACE_SQL) records when it ran and the thread's CPU time
then; SIGUSR2 writes both to CINDY_TRACE_DIR/sql-PID.json. Installed through Django's public
`execute_wrappers` of each new connection; a diagnostic, never loaded by the product."""

import os

if os.environ.get("CINDY_TRACE_DIR"):
    import collections
    import json
    import re
    import signal
    import threading
    import time

    from django.db.backends.signals import connection_created

    _counts: collections.Counter = collections.Counter()
    _trace: list = []
    _timed = bool(os.environ.get("CINDY_TRACE_SQL"))
    _table = re.compile(r'(?:FROM|INTO|UPDATE)\s+[`"]?(\w+)')

    def _wrapper(execute, sql, params, many, context):
        name = threading.current_thread().name
        text = ("MANY " if many else "") + " ".join(str(sql).split())
        _counts[(name[:24], text[:140])] += 1
        if _timed:
            table = _table.search(text)
            shape = f"{text.split()[0]} {table.group(1).split('_', 1)[-1] if table else ''}"
            _trace.append((time.monotonic(), time.thread_time(), name[:12], text[:110], shape))
        return execute(sql, params, many, context)

    def _install(sender, connection, **kwargs):
        if _wrapper not in connection.execute_wrappers:
            connection.execute_wrappers.append(_wrapper)

    def _dump(*_):
        path = os.path.join(os.environ["CINDY_TRACE_DIR"], f"sql-{os.getpid()}.json")
        with open(path + ".tmp", "w") as f:
            json.dump(
                {
                    "pid": os.getpid(),
                    "threads": {t.native_id: t.name for t in threading.enumerate()},
                    "counts": [[k[0], k[1], v] for k, v in _counts.items()],
                    "trace": _trace[-20000:],
                },
                f,
            )
        os.replace(path + ".tmp", path)

    connection_created.connect(_install, weak=False)
    signal.signal(signal.SIGUSR2, _dump)
