"""Signals other apps listen to, so that `conversations` needs to know nothing about them.

The mirror's writes go through plain SQL and `QuerySet.update()` (`conversations/services/ingest.py`),
which send no `post_save`; these say what changed instead. Each is sent inside the writer's
transaction, so a receiver's writes commit or roll back with the message.
"""

from __future__ import annotations

from django.dispatch import Signal

#: Sent after a message was stored for the first time, or its text or media changed (an edit, a
#: re-delivery that differs, a media part the gateway filled in). Arguments: `conversation`,
#: `message` (the row as stored), `created`.
message_stored = Signal()

#: Sent after messages were marked deleted (a deletion on Telegram, a cleared conversation).
#: Arguments: `agent_id`, `message_pks` (the rows' primary keys; empty with `conversation_id`),
#: `conversation_id` (every message of that conversation, or None).
messages_deleted = Signal()
