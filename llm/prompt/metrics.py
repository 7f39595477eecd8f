"""How cache-friendly prompts are: the serialized request and the prefix two requests share."""

from __future__ import annotations

import json

from llm.request import LLMRequest


def serialize_request(request: LLMRequest) -> str:
    """The system instruction and contents in order, the way providers read them for prefix caching."""
    turns = [{"role": t.role, "parts": [p.text for p in t.parts]} for t in request.turns]
    return json.dumps({"system": request.system, "turns": turns}, ensure_ascii=False)


def shared_prefix_ratio(first: str, second: str) -> float:
    """Length of the common prefix over the length of the longer string (1.0 for identical strings)."""
    longest = max(len(first), len(second))
    if not longest:
        return 1.0
    limit = min(len(first), len(second))
    low, high = 0, limit
    while low < high:  # binary search on prefix equality; fast for 100k+ character prompts
        mid = (low + high + 1) // 2
        if first[:mid] == second[:mid]:
            low = mid
        else:
            high = mid - 1
    return low / longest
