"""What each long-running process last said about itself (`engine/health.py` reads it)."""

from __future__ import annotations

from django.db import models


class ProcessHeartbeat(models.Model):
    """One row per running gateway or task worker pool, written by the process every
    CINDY_LEASE_SECONDS / 3 and deleted when it stops cleanly.

    A row whose `beat_at` is older than CINDY_LEASE_SECONDS belongs to a process that is stopped,
    hung or cut off from the database. Rows of processes that died are removed by the next process of
    the same kind on the same host, or by `manage.py health --forget NAME`.
    """

    class Kind(models.TextChoices):
        GATEWAY = "gateway", "Gateway"
        WORKERS = "workers", "Task worker pool"

    #: The gateway id (`runagents`), or `workers:<host>:<pid>` (`runworkers`).
    name = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    host = models.CharField(max_length=200)
    pid = models.IntegerField()
    #: For a worker pool started by a gateway: that gateway's id.
    serves = models.CharField(max_length=200, blank=True)
    started_at = models.DateTimeField()
    beat_at = models.DateTimeField()
    #: Gateway: when its loop last finished a pass over its steps (the tick).
    pass_at = models.DateTimeField(null=True, blank=True)
    #: Gateway: when it last renewed its agent leases.
    renewed_at = models.DateTimeField(null=True, blank=True)
    #: Gateway: the agents it holds.
    held = models.IntegerField(default=0)
    #: Gateway: since when its planning watchdog sees planning that no task worker starts.
    stalled_since = models.DateTimeField(null=True, blank=True)
    #: Worker pool: its live worker processes.
    workers = models.IntegerField(default=0)
    #: What the process found wrong itself (Redis unreachable), empty when nothing.
    problem = models.TextField(blank=True)
    #: Gateway started with `runagents --auto`: how many agents it takes at most (0: not placing itself).
    capacity = models.IntegerField(default=0)
    #: Gateway: when `manage.py drain` asked it to hand back its agents (None: not draining).
    drain_requested_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["kind", "name"]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.name}"
