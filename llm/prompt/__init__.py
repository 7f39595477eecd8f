"""Prompt assembly for planning turns (see llm.prompt.builder for the order and why)."""

from __future__ import annotations

from llm.prompt.builder import (
    PromptOutline,
    RetrievedPage,
    build_plan_request,
    prompt_outline,
    system_instruction,
)
from llm.prompt.instructions import TurnContext, specific_instructions

__all__ = [
    "PromptOutline",
    "RetrievedPage",
    "TurnContext",
    "build_plan_request",
    "prompt_outline",
    "specific_instructions",
    "system_instruction",
]
