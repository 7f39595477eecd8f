"""Prompt assembly for planning turns (see llm.prompt.builder for the order and why)."""

from __future__ import annotations

from llm.prompt.builder import RetrievedPage, build_plan_request, system_instruction
from llm.prompt.instructions import TurnContext, specific_instructions

__all__ = [
    "RetrievedPage",
    "TurnContext",
    "build_plan_request",
    "specific_instructions",
    "system_instruction",
]
