from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "conversations"

    def ready(self) -> None:
        from conversations import receivers  # noqa: F401 (connects the signal receivers)
