from django.apps import AppConfig


class MemoryConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "memory"

    def ready(self) -> None:
        from agents.timezone_change import local_time_records_provide
        from memory import receivers  # noqa: F401  (connects the signal receivers)
        from memory.services.timezone_move import local_time_records_described

        # A timezone change asks what the agent's events and schedule mean (agents/timezone_change.py).
        local_time_records_provide(local_time_records_described)
