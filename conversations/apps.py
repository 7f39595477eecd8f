from django.apps import AppConfig
from django.conf import settings


class ConversationsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "conversations"

    def ready(self) -> None:
        from conversations import receivers  # noqa: F401 (connects the signal receivers)

        if settings.REDIS_URL:
            # Loaded now, on the thread that starts the process, before any other runs: redis-py's
            # package imports itself in a circle, and two threads importing it first at once (a
            # gateway's wake-up listener on its loop, a wake-up or health check on a database
            # thread) can each get the other's half-initialised module ("ImportError: cannot
            # import name ... from partially initialized module").
            import redis.asyncio  # noqa: F401
