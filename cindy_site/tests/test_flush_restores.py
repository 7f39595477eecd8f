"""A transactional test's flush puts back the rows the migrated test database starts with
(cindy_site/testing/fixtures.py, `MigratedRows`) instead of sending `post_migrate`: the same rows, with
their ids, whatever the test wrote or deleted."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command

from llm.models import ModelPrice

pytestmark = pytest.mark.django_db(transaction=True)


def _rows() -> dict[str, list[tuple]]:
    return {
        "content types": list(ContentType.objects.order_by("pk").values_list("pk", "app_label", "model")),
        "permissions": list(
            Permission.objects.order_by("pk").values_list("pk", "codename", "content_type_id")
        ),
        "roles": [
            (group.pk, group.name, sorted(group.permissions.values_list("pk", flat=True)))
            for group in Group.objects.order_by("pk")
        ],
        "prices": list(ModelPrice.objects.order_by("pk").values_list("pk", "provider", "model_prefix")),
    }


def test_a_flush_puts_the_migrated_rows_back_with_their_ids():
    before = _rows()
    assert all(before.values()), before  # the migrations seed each of these
    Permission.objects.filter(codename__startswith="view_").delete()
    Group.objects.create(name="made by the test")
    ModelPrice.objects.all().delete()

    call_command("flush", verbosity=0, interactive=False)

    assert _rows() == before
