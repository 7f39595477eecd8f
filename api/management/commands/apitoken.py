"""`manage.py apitoken USERNAME [--name NAME] [--days N]`: print a new API token for a staff user, once."""

from __future__ import annotations

import datetime as dt

from django.core.management.base import BaseCommand, CommandError

from api.services.tokens import TokenError, api_token_create_for
from cindy_site.clock import now


class Command(BaseCommand):
    help = (
        "Create an API token for a staff user and print it. Only its digest is stored: copy it now. "
        "Scripts send it as `Authorization: Bearer TOKEN` to /api/v1/."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="What the token is for (shown in the admin)")
        parser.add_argument("--days", type=int, default=None, help="Expire the token after this many days")

    def handle(self, *args, username: str, name: str, days: int | None, **options):
        if days is not None and days < 1:
            raise CommandError(f"--days is {days}: give a whole number of days from 1, or leave it out")
        expires = now() + dt.timedelta(days=days) if days else None
        try:
            token, raw = api_token_create_for(username=username, name=name, expires=expires)
        except TokenError as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(f"API token {token.prefix}… for {token.user.get_username()} (shown once):")
        self.stdout.write(raw)
