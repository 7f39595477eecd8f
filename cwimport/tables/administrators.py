"""`administrators`, `admin_role_names`, `administrator_roles`, `administrator_resource_grants`: the
original's admin-console staff -> Django staff users, groups (roles) and per-agent grants.

Users are created without a password (the original signed them in with Google, Cindy with a password
and a one-time code): a superuser sets one for each in the admin, or they use "forgotten password".
The `superuser` role makes a Django superuser (an owner: agents/roles.py); every role becomes a group
of the same name, which has no permissions until an owner gives it some.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import Group

from cwimport.base import TableImporter, upsert
from cwimport.report import Outcome, RowError, SkipRow

SUPERUSER_ROLE = "superuser"


def _username(email) -> str:
    email = (email or "").strip()
    if not email or len(email) > 150:
        raise RowError(f"email {email!r} is empty or longer than 150 characters (Django's username limit)")
    return email


class AdministratorsImporter(TableImporter):
    table = "administrators"
    order_by = "email"
    per_agent = False

    def row_id(self, row) -> str:
        return str(row.get("email"))

    def import_row(self, row, agent) -> Outcome:
        username = _username(row.get("email"))
        return upsert(
            get_user_model(),
            lookup={"username": username},
            values={"email": username[:254], "first_name": (row.get("name") or "")[:150], "is_staff": True},
            create_only={"password": make_password(None), "is_active": True},
        )


class AdminRoleNamesImporter(TableImporter):
    table = "admin_role_names"
    order_by = "role_name"
    per_agent = False

    def row_id(self, row) -> str:
        return str(row.get("role_name"))

    def import_row(self, row, agent) -> Outcome:
        name = (row.get("role_name") or "").strip()
        if not name:
            raise RowError("role_name is empty")
        return upsert(Group, lookup={"name": name[:150]}, values={})


class AdministratorRolesImporter(TableImporter):
    table = "administrator_roles"
    order_by = "email, role_name"
    per_agent = False

    def row_id(self, row) -> str:
        return f"{row.get('email')}/{row.get('role_name')}"

    def import_row(self, row, agent) -> Outcome:
        username = _username(row.get("email"))
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise RowError(f"no administrator {username!r} (the administrators row is missing)")
        role = (row.get("role_name") or "").strip()[:150]
        group, _ = Group.objects.get_or_create(name=role)
        outcome = Outcome.UNCHANGED
        if not user.groups.filter(pk=group.pk).exists():
            user.groups.add(group)
            outcome = Outcome.CREATED
        if role == SUPERUSER_ROLE and not user.is_superuser:
            user.is_superuser = True
            user.save(update_fields=["is_superuser"])
            outcome = Outcome.CREATED
        return outcome


class AdministratorResourceGrantsImporter(TableImporter):
    """`administrator_resource_grants` -> per-agent access grants (`AgentGrant`).

    The original limited an administrator who is not a superuser to the agents granted to them, and
    let them operate those agents: each such administrator joins the Operator role, and each grant of
    resource type "agent" (resource_id: the agent's Telegram id) becomes a grant of that agent.
    """

    table = "administrator_resource_grants"
    order_by = "email, resource_type, resource_id"
    per_agent = False

    def row_id(self, row) -> str:
        return f"{row.get('email')}/{row.get('resource_type')}/{row.get('resource_id')}"

    def import_row(self, row, agent) -> Outcome:
        from agents.models import AgentGrant
        from agents.roles import OPERATOR

        kind = (row.get("resource_type") or "").strip()
        if kind != "agent":
            raise SkipRow(f'resource_type "{kind}": Cindy grants access to agents only')
        username = _username(row.get("email"))
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise RowError(f"no administrator {username!r} (the administrators row is missing)")
        try:
            telegram_id = int(str(row.get("resource_id") or "").strip())
        except ValueError:
            raise RowError(
                f"resource_id {row.get('resource_id')!r} is not an agent's Telegram id (a number)"
            ) from None
        found = self.matcher.match(telegram_id)
        if found is None:
            self.report.unknown_agents[telegram_id] += 1
            raise SkipRow("the granted agent is not in Cindy (import it first, then run the import again)")
        _, created = AgentGrant.objects.get_or_create(user=user, agent=found.agent)
        if not user.is_superuser:
            user.groups.add(Group.objects.get_or_create(name=OPERATOR)[0])
        return Outcome.CREATED if created else Outcome.UNCHANGED
