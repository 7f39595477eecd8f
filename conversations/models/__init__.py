from conversations.models.activity import ActivityEvent
from conversations.models.backfill import BackfillMark
from conversations.models.chat import TELEGRAM_SERVICE_USER_ID, Conversation, Message
from conversations.models.graph import GatewayWake, NodeKind, NodeStatus, TaskGraph, TaskNode
from conversations.models.voice import VoiceNote

__all__ = [
    "ActivityEvent",
    "BackfillMark",
    "Conversation",
    "GatewayWake",
    "Message",
    "NodeKind",
    "NodeStatus",
    "TELEGRAM_SERVICE_USER_ID",
    "TaskGraph",
    "TaskNode",
    "VoiceNote",
]
