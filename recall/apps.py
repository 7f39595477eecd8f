from django.apps import AppConfig


class RecallConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "recall"

    def ready(self) -> None:
        from recall import receivers  # noqa: F401 (connects the signal receivers)
