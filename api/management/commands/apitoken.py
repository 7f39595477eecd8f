"""`manage.py apitoken USERNAME [--name NAME]`: print a new API token for a staff user, once."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from api.services.tokens import TokenError, api_token_create_for


class Command(BaseCommand):
    help = (
        "Create an API token for a staff user and print it. Only its digest is stored: copy it now. "
        "Scripts send it as `Authorization: Bearer TOKEN` to /api/v1/."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="What the token is for (shown in the admin)")

    def handle(self, *args, username: str, name: str, **options):
        try:
            token, raw = api_token_create_for(username=username, name=name)
        except TokenError as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(f"API token {token.prefix}… for {token.user.get_username()} (shown once):")
        self.stdout.write(raw)
