from llm.models.breakers import RouteBreaker
from llm.models.caches import ExplicitCache
from llm.models.calls import LLMCall, LLMUsageDaily, ModelPrice
from llm.models.console import OfferedModel, SiteParameter, Translation, text_digest
from llm.models.endpoints import LLMEndpoint

__all__ = [
    "ExplicitCache",
    "LLMCall",
    "LLMEndpoint",
    "LLMUsageDaily",
    "ModelPrice",
    "OfferedModel",
    "RouteBreaker",
    "SiteParameter",
    "Translation",
    "text_digest",
]
