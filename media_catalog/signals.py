"""Signals other apps listen to, so that `media_catalog` needs to know nothing about them."""

from __future__ import annotations

from django.dispatch import Signal

#: Sent when an operator asks for media to be described again (the console's "Describe again"),
#: inside the request's transaction. Argument: `ids`, the AI descriptions' primary keys.
describe_again_requested = Signal()
