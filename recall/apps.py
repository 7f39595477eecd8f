import os

from django.apps import AppConfig

#: numpy's BLAS (OpenBLAS) runs single-threaded in Cindy's processes unless the environment says
#: otherwise: a search multiplies at most a few thousand vectors of 256 values by one, which a pool
#: of a thread per core only spins on (on 2 cores: 23 ms of CPU for 10,000 vectors against 10 ms
#: single-threaded, and slower by the wall clock too; docs/recall.md, "Performance"). OpenBLAS
#: reads this when numpy first loads it, which in Cindy is after setup (`recall.embedding`).
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "1")


class RecallConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "recall"

    def ready(self) -> None:
        from recall import receivers  # noqa: F401 (connects the signal receivers)

        os.environ.setdefault(*BLAS_THREADS)
