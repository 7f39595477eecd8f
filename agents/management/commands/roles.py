"""`manage.py roles`: create the staff role groups (Owner, Operator, Curator) and reset their permissions."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from agents.roles import ROLES, roles_sync


class Command(BaseCommand):
    help = (
        "Create the groups Owner, Operator and Curator and set each one's permissions to the list in "
        "agents/roles.py (docs/dashboard.md, 'Access'). Runs after every migrate too."
    )

    def handle(self, *args, **options):
        try:
            counts = roles_sync()
        except LookupError as exc:
            raise CommandError(str(exc)) from exc
        for role in ROLES:
            self.stdout.write(f"{role}: {counts[role]} permissions")
