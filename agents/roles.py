"""The staff roles: Django groups named Owner, Operator and Curator, and the permissions of each.

`roles_sync()` creates the groups and sets their permissions to exactly what is listed here. It runs
after every `migrate` (`agents.apps`) and from `manage.py roles`; an operator who edits a role's
permissions in the admin gets the listed ones back at the next sync. docs/dashboard.md, "Access",
explains the roles to staff. Superusers are owners whatever their groups.
"""

from __future__ import annotations

from django.contrib.auth.models import Group, Permission
from django.db.models import Q

OWNER = "Owner"
OPERATOR = "Operator"
CURATOR = "Curator"

ALL = ("add", "change", "delete", "view")
READ = ("view",)

#: Curator: media descriptions and memories, and reading the conversations they are about.
CURATOR_PERMISSIONS: dict[str, tuple[str, ...]] = {
    "agents.agent": READ,
    "conversations.conversation": READ,
    "conversations.message": READ,
    "memory.memory": ALL,
    "memory.note": ALL,
    "memory.intention": ALL,
    "memory.plan": ALL,
    "memory.summary": ALL,
    "memory.curatedmemoryfile": READ,
    "media_catalog.mediadescription": ALL,
    "media_catalog.sticker": READ,
    "media_catalog.stickerset": READ,
}

#: Operator: runs agents (start, stop, restart, edit personas), talks in the sandbox, curates, and
#: reads everything the engine records, costs included. No deleting agents, no staff accounts,
#: roles, grants or access requests.
OPERATOR_PERMISSIONS: dict[str, tuple[str, ...]] = {
    **CURATOR_PERMISSIONS,
    "agents.agent": ("add", "change", "view"),
    "agents.roleprompt": ALL,
    "agents.agentdocument": ALL,
    "agents.agentlease": READ,
    "agents.gatewayrequest": READ,
    "agents.telegramentity": READ,
    "conversations.conversation": ("change", "view"),
    "conversations.message": READ,
    "conversations.taskgraph": READ,
    "conversations.tasknode": READ,
    "conversations.activityevent": READ,
    "llm.llmcall": READ,
    "llm.modelprice": READ,
    "llm.offeredmodel": READ,
    "llm.translation": ("add", "view"),
    "sandbox.sandboxmessage": ("add", "view"),
    "sandbox.sandboxuser": READ,
    "sandbox.sandboxchat": READ,
    "memory.scheduledevent": ALL,
    "memory.scheduleentry": ALL,
    "memory.schedulerefresh": READ,
    "media_catalog.libraryitem": ALL,
    "media_catalog.sticker": ("change", "view"),
    "media_catalog.stickerset": ("change", "view"),
}

ROLES: dict[str, dict[str, tuple[str, ...]] | None] = {
    OWNER: None,  # every permission there is
    OPERATOR: OPERATOR_PERMISSIONS,
    CURATOR: CURATOR_PERMISSIONS,
}


def role_permissions(role: str) -> list[Permission]:
    """The permissions `role` holds. Raises LookupError naming a listed permission that does not exist."""
    listed = ROLES[role]
    if listed is None:
        return list(Permission.objects.all())
    wanted = Q(pk__in=[])
    names: set[str] = set()
    for label, actions in listed.items():
        app_label, model = label.split(".")
        for action in actions:
            names.add(f"{app_label}.{action}_{model}")
            wanted |= Q(content_type__app_label=app_label, codename=f"{action}_{model}")
    found = list(Permission.objects.filter(wanted).select_related("content_type"))
    missing = names - {f"{p.content_type.app_label}.{p.codename}" for p in found}
    if missing:
        raise LookupError(
            f"agents/roles.py: the {role} role lists {sorted(missing)}, which no installed model has: "
            "fix the model label or the action in the role's table"
        )
    return found


def roles_sync() -> dict[str, int]:
    """Create the role groups and set each one's permissions to its table; return role -> count."""
    counts = {}
    for role in ROLES:
        group, _ = Group.objects.get_or_create(name=role)
        permissions = role_permissions(role)
        group.permissions.set(permissions)
        counts[role] = len(permissions)
    return counts
