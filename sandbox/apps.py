from django.apps import AppConfig


class SandboxConfig(AppConfig):
    """The sandbox: a stand-in for Telegram kept in the database, for trying personas and for tests."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "sandbox"
