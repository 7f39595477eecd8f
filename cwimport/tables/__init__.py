"""The per-table importers, in the order they run. Adding a table: one module here, one line below."""

from __future__ import annotations

from cwimport.base import TableImporter
from cwimport.tables.administrators import (
    AdministratorResourceGrantsImporter,
    AdministratorRolesImporter,
    AdministratorsImporter,
    AdminRoleNamesImporter,
)
from cwimport.tables.agent_activity import AgentActivityImporter
from cwimport.tables.conversation_gagged import ConversationGaggedImporter
from cwimport.tables.conversation_llm_overrides import ConversationLLMOverridesImporter
from cwimport.tables.events import EventsImporter
from cwimport.tables.intentions import IntentionsImporter
from cwimport.tables.media_metadata import MediaMetadataImporter
from cwimport.tables.memories import MemoriesImporter
from cwimport.tables.notes import CuratedMemoriesImporter, NotesImporter
from cwimport.tables.plans import PlansImporter
from cwimport.tables.schedules import SchedulesImporter
from cwimport.tables.summaries import SummariesImporter
from cwimport.tables.task_execution_log import TaskExecutionLogImporter

IMPORTERS: list[type[TableImporter]] = [
    MemoriesImporter,
    NotesImporter,
    CuratedMemoriesImporter,
    PlansImporter,
    SummariesImporter,
    IntentionsImporter,
    EventsImporter,
    SchedulesImporter,
    MediaMetadataImporter,
    ConversationLLMOverridesImporter,
    ConversationGaggedImporter,
    AgentActivityImporter,
    TaskExecutionLogImporter,
    AdministratorsImporter,
    AdminRoleNamesImporter,
    AdministratorRolesImporter,
    AdministratorResourceGrantsImporter,
]

# Tables of the original that Cindy does not import, with the reason shown in the report.
NOT_IMPORTED: dict[str, str] = {
    "translations": (
        "dropped: the original keys each translation by a hash of the message text and keeps neither the "
        "text nor the language, so it cannot be matched to a message; Cindy translates again on demand"
    ),
    "available_llms": "dropped: Cindy's LLM names and prices live in settings and the ModelPrice table",
    "agent_profile_photos": (
        "not imported: the profile photos themselves are on each Telegram account, and Cindy's account "
        "page reads them from Telegram; the original's link from a photo to the Saved Messages media "
        "it came from has no place in Cindy"
    ),
}
