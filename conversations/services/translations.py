"""Asking for a conversation's translation: validated here, done by a worker (llm/translation.py)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from conversations.models import Conversation

#: The languages an operator can ask for; the names go into the LLM's instructions as they are.
LANGUAGES = (
    "English",
    "Arabic",
    "Chinese",
    "Dutch",
    "French",
    "German",
    "Hebrew",
    "Hindi",
    "Italian",
    "Japanese",
    "Korean",
    "Polish",
    "Portuguese",
    "Russian",
    "Spanish",
    "Turkish",
    "Ukrainian",
)


def conversation_translation_request(*, conversation: Conversation, language: str) -> None:
    """Queue the translation on the workers once the current transaction commits (ids only)."""
    if language not in LANGUAGES:
        raise ValidationError(f'language "{language}" is not offered: choose one of {", ".join(LANGUAGES)}')

    def enqueue() -> None:
        from django_q.tasks import async_task

        async_task("llm.translation.conversation_translate_task", conversation.pk, language)

    transaction.on_commit(enqueue)
