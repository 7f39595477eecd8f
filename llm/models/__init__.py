from llm.models.caches import ExplicitCache
from llm.models.calls import LLMCall, LLMUsageDaily, ModelPrice
from llm.models.console import OfferedModel, SiteParameter, Translation, text_digest

__all__ = [
    "ExplicitCache",
    "LLMCall",
    "LLMUsageDaily",
    "ModelPrice",
    "OfferedModel",
    "SiteParameter",
    "Translation",
    "text_digest",
]
