import logging

from django.apps import AppConfig, apps
from django.db.models.signals import post_migrate


def _sync_roles_after_migrate(sender, using="default", **kwargs) -> None:
    """Create or re-sync the staff roles once per `migrate`, after the last app's permissions exist."""
    last = [config for config in apps.get_app_configs() if config.models_module is not None][-1]
    if sender is not last:
        return
    from agents.roles import roles_sync

    try:
        roles_sync()
    except LookupError as exc:
        # A partial migrate (`migrate APP TARGET`) may leave some listed models without permissions
        # yet; the roles are completed by the next full migrate or by `manage.py roles`.
        logging.getLogger(__name__).warning("staff roles not synced: %s", exc)


class AgentsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "agents"

    def ready(self) -> None:
        from agents import checks  # noqa: F401  (registers the system checks)

        post_migrate.connect(_sync_roles_after_migrate, dispatch_uid="agents.roles_sync")
