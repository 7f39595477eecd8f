from django.apps import AppConfig, apps
from django.db.models.signals import post_migrate


def _sync_roles_after_migrate(sender, using="default", **kwargs) -> None:
    """Create or re-sync the staff roles once per `migrate`, after the last app's permissions exist."""
    last = [config for config in apps.get_app_configs() if config.models_module is not None][-1]
    if sender is not last:
        return
    from agents.roles import roles_sync

    roles_sync()


class AgentsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "agents"

    def ready(self) -> None:
        post_migrate.connect(_sync_roles_after_migrate, dispatch_uid="agents.roles_sync")
