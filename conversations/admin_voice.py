"""Admin for voice notes: what each agent said aloud, read-only (the `voice` task makes them)."""

from __future__ import annotations

from django.contrib import admin

from cindy_site.admin_utils import ReadOnlyAdmin, change_link, short
from conversations.models import VoiceNote


class VoiceNoteAdmin(ReadOnlyAdmin):
    list_display = ["id", "created", "agent", "conversation_link", "seconds", "voice", "model", "said"]
    list_filter = ["agent", "provider"]
    search_fields = ["text"]
    list_select_related = ["agent", "conversation"]
    exclude = ["waveform"]

    @admin.display(description="Conversation")
    def conversation_link(self, note: VoiceNote) -> str:
        return change_link(note.conversation)

    @admin.display(description="Length")
    def seconds(self, note: VoiceNote) -> str:
        return f"{note.duration:.1f} s"

    @admin.display(description="Says")
    def said(self, note: VoiceNote) -> str:
        return short(note.text)


def register_voice_admin() -> None:
    admin.site.register(VoiceNote, VoiceNoteAdmin)
