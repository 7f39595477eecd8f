"""Planning tasks that kill their worker: counted, and failed after CINDY_TASK_MAX_DEATHS.

A task that crashes its worker process (a native crash in a decoder, SIGKILL by the OOM killer, a
django-q2 timeout) never returns, so nothing in the task records it. Each run of `run_received`
therefore writes a mark on its node before it does any work (`params["task_run"]`: the worker, when)
and removes it when it returns, whatever the outcome. When the sentinel (engine/cluster.py) sees a worker die
alone inside its task (busy, holding none of the queues' locks), it respawns that worker only, closes
its LLM calls and counts a death on the node its mark names (`params["task_deaths"]`): the node goes
back to pending at once, to be queued again, and at CINDY_TASK_MAX_DEATHS deaths it fails for good
with a reason naming the conversation, the message and its media, shown once in the activity stream
(a `node_failed` event) and as one ERROR log line; the graph closes and the next message is planned as
usual. Deaths of the whole pool (the gateway killed, a pool replaced) are not the task's doing and do
not count: the next run overwrites their mark.
"""

from __future__ import annotations

import logging
import uuid

from django.conf import settings
from django.db import connections, router, transaction

from cindy_site import rows
from cindy_site.clock import now
from conversations.models import Message, NodeStatus, TaskNode
from conversations.services.nodes import node_fail, node_release
from llm.usage import worker_name

logger = logging.getLogger("engine.workers")

RUN_KEY = "task_run"
DEATHS_KEY = "task_deaths"


def _mark_sql(vendor: str) -> tuple[str, str]:
    """The two plain UPDATEs of the mark: set it on a node held under an owner, remove it when its
    token matches. Each is one statement (with the ORM, a locked read and a save in a savepoint: four
    statements and two query compiles per task, on the way to the planning request). SQLite and
    MariaDB/MySQL share `json_set`, `json_object` and `json_remove`; they differ in reading a string
    out unquoted (`json_extract` on SQLite, `JSON_VALUE` on MariaDB/MySQL)."""
    table = rows.table(TaskNode)
    params, pk, status, owner = (rows.quote(c) for c in ("params", "id", "status", "lease_owner"))
    read = "json_extract" if vendor == "sqlite" else "JSON_VALUE"
    start = (
        f"UPDATE {table} SET {params} = json_set(COALESCE({params}, '{{}}'), '$.{RUN_KEY}', "  # noqa: S608
        f"json_object('token', %s, 'worker', %s, 'started', %s)) "
        f"WHERE {pk} = %s AND {status} = %s AND {owner} = %s"
    )
    end = (
        f"UPDATE {table} SET {params} = json_remove({params}, '$.{RUN_KEY}') "  # noqa: S608
        f"WHERE {pk} = %s AND {read}({params}, '$.{RUN_KEY}.token') = %s"
    )
    return start, end


def task_run_start(*, node_id: int, owner: str) -> str:
    """Mark the node's task as started by this worker. Returns the run's token, or "" when the node
    is no longer held under `owner`. A mark left by a run whose whole pool was killed (the gateway died,
    the pool was replaced) is overwritten: that death was not the task's doing."""
    token = uuid.uuid4().hex
    connection = connections[router.db_for_write(TaskNode)]
    sql, _ = _mark_sql(connection.vendor)
    with connection.cursor() as cursor:
        cursor.execute(
            sql, [token, worker_name(), now().isoformat(), node_id, NodeStatus.RUNNING.value, owner]
        )
        return token if cursor.rowcount == 1 else ""


def task_run_end(*, node_id: int, token: str) -> None:
    """Remove this run's mark: the task returned, its worker did not die in it."""
    connection = connections[router.db_for_write(TaskNode)]
    _, sql = _mark_sql(connection.vendor)
    with connection.cursor() as cursor:
        cursor.execute(sql, [node_id, token])


def death_reason(*, node: TaskNode, deaths: int, last_worker: str) -> str:
    """The failure an operator reads: which chat, which message, which media killed the workers."""
    conversation = node.conversation
    chat = f"conversation {conversation.pk} ({conversation.title or conversation.peer_id})"
    message_id = node.graph.target_message_id
    what = f"{chat}, message {message_id}" if message_id is not None else chat
    media = ""
    if message_id is not None:
        parts = (
            Message.objects.filter(conversation_id=conversation.pk, message_id=message_id)
            .values_list("media", flat=True)
            .first()
        )
        named = [
            f"{part.get('media_kind', 'media')} {part.get('unique_id', '?')}"
            for part in parts or []
            if isinstance(part, dict)
        ]
        if named:
            media = f" with media {', '.join(named)}"
    return (
        f"planning for {what}{media} killed its task worker {deaths} times (last {last_worker}); "
        f"not run again (CINDY_TASK_MAX_DEATHS={settings.CINDY_TASK_MAX_DEATHS}). The next message "
        "in the chat is planned as usual; if the media crashes a decoder, report it with its id."
    )


def task_runs_release(*, pid: int) -> tuple[int, int]:
    """The task worker `pid` of this host died alone inside its task: count a death on the planning
    it was running, and return that planning to pending at once under a new claim (the gateway queues
    it again), or fail it at CINDY_TASK_MAX_DEATHS. Returns (queued again, failed)."""
    worker = worker_name(pid)
    running = TaskNode.objects.filter(
        status=NodeStatus.RUNNING, **{f"params__{RUN_KEY}__worker": worker}
    ).values_list("pk", "lease_owner")
    released = failed = 0
    for pk, owner in list(running):
        with transaction.atomic():
            node = (
                TaskNode.objects.select_for_update()
                .filter(pk=pk, status=NodeStatus.RUNNING, lease_owner=owner)
                .first()
            )
            if node is None or (node.params or {}).get(RUN_KEY, {}).get("worker") != worker:
                continue
            params = dict(node.params)
            params.pop(RUN_KEY)
            deaths = params[DEATHS_KEY] = int(params.get(DEATHS_KEY, 0)) + 1
            node.params = params
            node.save(update_fields=["params"])
            # Still under the row's lock: the gateway's watchdog, which returns planning whose call
            # was interrupted to pending, cannot take the node in between and lose the count.
            limit = settings.CINDY_TASK_MAX_DEATHS
            if deaths >= limit:
                reason = death_reason(node=node, deaths=deaths, last_worker=worker)
                logger.error("node %s (%s) of agent %s: %s", node.pk, node.kind, node.agent_id, reason)
                failed += node_fail(node_id=pk, owner=owner, error=reason, permanent=True) == "deleted"
            else:
                why = f"its task worker (pid {pid}) died running it (death {deaths} of {limit}); queued again"
                released += node_release(node_id=pk, owner=owner, reason=why)
    return released, failed
