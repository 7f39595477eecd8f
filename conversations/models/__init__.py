from conversations.models.activity import ActivityEvent, LLMCall, ModelPrice
from conversations.models.caches import ExplicitCache
from conversations.models.chat import TELEGRAM_SERVICE_USER_ID, Conversation, Message
from conversations.models.console import OfferedModel, SiteParameter, Translation
from conversations.models.graph import GatewayWake, NodeKind, NodeStatus, TaskGraph, TaskNode
from conversations.models.voice import VoiceNote

__all__ = [
    "ActivityEvent",
    "Conversation",
    "ExplicitCache",
    "GatewayWake",
    "LLMCall",
    "Message",
    "ModelPrice",
    "NodeKind",
    "OfferedModel",
    "SiteParameter",
    "NodeStatus",
    "TELEGRAM_SERVICE_USER_ID",
    "TaskGraph",
    "TaskNode",
    "Translation",
    "VoiceNote",
]
