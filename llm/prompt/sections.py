"""The sections of the system instruction, each read from the DB (agents, memory, media catalog)."""

from __future__ import annotations

import datetime as dt
import json
import logging
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Q

from agents.models import Agent, RolePrompt
from agents.selectors import role_prompts_named
from conversations.models import Conversation
from llm.policy_inputs import partner_is_operator
from llm.prompt.response_format import DEFAULT_INSTRUCTIONS
from llm.task_schema import INSTRUCTIONS_PROMPT, prompt_teaches, taught_kinds
from media_catalog.models import MediaDescription, Sticker
from media_catalog.selectors import library_items_of, sticker_access_of
from memory.models import Memory
from memory.services.stored_prompt import stored_prompt_entries
from memory.stored_kinds import StoreContext, stored_kinds

logger = logging.getLogger(__name__)

RETRIEVE_PROMPT = "Retrieve"
#: Role prompts about retrieval, left out of a turn whose retrieval is suppressed (the last round,
#: a summarization): the original system's name and an older shared prompt's.
RETRIEVE_PROMPTS = frozenset({RETRIEVE_PROMPT, "Task-Retrieve"})


def can_retrieve(agent: Agent) -> bool:
    """Whether the agent's prompts teach `retrieve` (a SCHEMA_TASKS marker naming it, e.g. Task-Retrieve's)."""
    return turn_prompts(agent)[1]


def turn_prompts(agent: Agent) -> tuple[list[tuple[str, str]], bool]:
    """The prompts a planning turn includes (`included_prompts`, with retrieval where the agent may
    retrieve) and whether it may (`can_retrieve`). Read once when they are the same either way:
    retrieval allowed, or no retrieval prompt among them."""
    prompts = included_prompts(agent, include_retrieve=True)
    allowed = "retrieve" in taught_kinds(prompts)
    if not allowed and RETRIEVE_PROMPTS & {name for name, _text in prompts}:
        prompts = included_prompts(agent, include_retrieve=False)
    return prompts, allowed


def teaching_advice(agent: Agent, kind: str) -> str:
    """How to let the agent use `kind`: the imported role prompts whose markers teach it, by name."""
    rows = RolePrompt.objects.filter(scope_key__in=[0, agent.pk]).exclude(name=INSTRUCTIONS_PROMPT)
    names = sorted(
        {name for name, text in rows.values_list("name", "text") if kind in prompt_teaches(name, text)}
    )
    if len(names) == 1:
        return f'add role prompt {names[0]}, which teaches "{kind}", to agent {agent.name}'
    if names:
        return f'add one of the role prompts {", ".join(names)}, which teach "{kind}", to agent {agent.name}'
    return (
        f'no imported role prompt teaches "{kind}": import one whose SCHEMA_TASKS marker names it '
        "(the shipped configdir/prompts do) and add it to the agent's role prompts"
    )


_DESCRIBED = (MediaDescription.Status.OK, MediaDescription.Status.CURATED)


def role_prompt_texts(agent: Agent, names: list[str]) -> dict[str, str]:
    """Prompt texts by name; an agent-specific prompt beats the global one of the same name."""
    found: dict[str, str] = {}
    if not names:
        return found
    # Global (scope 0) first, so the agent's own overwrites it.
    for name, text in role_prompts_named(names=[str(n) for n in names], agent_id=agent.pk):
        found[name] = text
    return found


def included_prompts(agent: Agent, *, include_retrieve: bool) -> list[tuple[str, str]]:
    """(name, text) of the prompts a turn includes: the response-format instructions (always), then
    the agent's role prompts that are imported (their SCHEMA_TASKS markers shape the reply schema).

    Without an imported `Instructions` prompt the built-in one stands in; its line about `retrieve`
    stays only when a role prompt teaches retrieval.
    """
    names = [n for n in agent.role_prompt_names or [] if include_retrieve or n not in RETRIEVE_PROMPTS]
    texts = role_prompt_texts(agent, [INSTRUCTIONS_PROMPT, *names])
    prompts: list[tuple[str, str]] = []
    for name in names:
        if name == INSTRUCTIONS_PROMPT:
            continue
        if name not in texts:
            logger.warning('agent %s lists role prompt "%s", which is not imported', agent.name, name)
            continue
        prompts.append((name, texts[name]))
    instructions = texts.get(INSTRUCTIONS_PROMPT)
    if instructions is None:
        allow_retrieve = include_retrieve and "retrieve" in taught_kinds(prompts)
        lines = DEFAULT_INSTRUCTIONS.splitlines()
        instructions = "\n".join(line for line in lines if allow_retrieve or '"retrieve"' not in line)
    return [(INSTRUCTIONS_PROMPT, instructions), *prompts]


def base_prompt(agent: Agent, *, include_retrieve: bool, prompts: list[tuple[str, str]] | None = None) -> str:
    """Shared response-format instructions, the agent's instructions, then its role prompts."""
    if prompts is None:
        prompts = included_prompts(agent, include_retrieve=include_retrieve)
    blocks = [prompts[0][1].strip()]
    blocks.append("# Agent Instructions\n\n" + (agent.instructions or "").strip())
    if (agent.daily_schedule or "").strip():
        blocks.append("# Daily Schedule\n\n" + agent.daily_schedule.strip())
    blocks += [text.strip() for _name, text in prompts[1:]]
    return "\n\n".join(b for b in blocks if b)


def substitute(text: str, values: dict[str, str]) -> str:
    """Replace `{name}` placeholders we know; other braces (JSON examples) stay as they are."""
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


#: What `{user}` reads in a turn with no partner: the agent's own Saved Messages, where its daily
#: schedule-planning turn runs. Persona text is written about whoever the agent talks to.
NO_PARTNER_USER = "the people who write to you"


def template_values(agent: Agent, conversation: Conversation) -> dict[str, str]:
    """The placeholders' values: `{user}` is the partner's name, or NO_PARTNER_USER in the agent's
    own Saved Messages; `{channel}` is the chat's title."""
    chat = conversation.title or conversation.username or str(conversation.peer_id)
    own_chat = agent.telegram_user_id is not None and conversation.peer_id == agent.telegram_user_id
    partner = NO_PARTNER_USER if own_chat else chat
    return {
        "agent": agent.name,
        "agent_name": agent.name,
        "character": agent.name,
        "user": partner,
        "user_name": partner,
        "channel": chat,
        "timezone": agent.timezone or "UTC",
    }


def sticker_section(agent: Agent) -> str:
    """`# Stickers` with one `- SET :: NAME - ‹description›` line per sticker the agent may send: its
    sets' stickers (premium ones only for a Telegram Premium account), its explicit stickers and the
    stickers in its account's Saved Messages."""
    entries: list[tuple[str, str, str]] = []  # (set, name, unique_id)
    access = sticker_access_of(agent_id=agent.pk)
    premium = access is not None and access.premium
    saved = [e for e in (access.saved_stickers if access else []) if isinstance(e, dict)]
    set_names = [s for s in agent.sticker_set_names or [] if s]
    wanted_sets = set(set_names) | {str(e.get("set") or "") for e in saved}
    premium_ids: set[str] = set()
    if wanted_sets:
        stickers = Sticker.objects.filter(sticker_set__short_name__in=wanted_sets).values_list(
            "sticker_set__short_name", "name", "unique_id", "premium"
        )
        by_set: dict[str, list[tuple[str, str, str]]] = {}
        for set_name, name, unique_id, is_premium in stickers:
            if is_premium and not premium:
                premium_ids.add(unique_id)  # the account cannot send it: not offered
                continue
            by_set.setdefault(set_name, []).append((set_name, name, unique_id))
        for set_name in set_names:
            entries += by_set.get(set_name, [])
    seen = {(s, n) for s, n, _ in entries}
    for item in saved:
        set_name, name, unique_id = (str(item.get(k) or "") for k in ("set", "name", "unique_id"))
        if set_name and name and (set_name, name) not in seen and unique_id not in premium_ids:
            entries.append((set_name, name, unique_id))
            seen.add((set_name, name))
    for item in agent.explicit_stickers or []:
        set_name, _, name = str(item).partition("::")
        set_name, name = set_name.strip(), name.strip()
        if set_name and name and (set_name, name) not in seen:
            entries.append((set_name, name, ""))
            seen.add((set_name, name))
    if not entries:
        return ""
    by_uid, by_name = _sticker_descriptions(entries)
    lines = []
    for set_name, name, unique_id in entries:
        description = by_uid.get(unique_id) or by_name.get((set_name, name))
        lines.append(f"- {set_name} :: {name}" + (f" - ‹{description}›" if description else ""))
    return (
        "# Stickers\n\nYou can send these stickers with a sticker task (give both the set and the name):\n\n"
        + "\n".join(lines)
        + "\n\nYou may also send a sticker you have seen in this chat by giving its set and name."
    )


def media_library_section(agent: Agent) -> str:
    """`# Media Library`: the items `send_media` may send, by unique id, with their curated descriptions.

    Items without a description of their own use the catalog's curated or AI description of the media.
    """
    items = library_items_of(agent_id=agent.pk)
    if not items:
        return ""
    missing = [i.unique_id for i in items if not i.description.strip()]
    catalog = dict(
        MediaDescription.objects.filter(unique_id__in=missing).values_list("unique_id", "description")
    )
    lines = []
    for item in items:
        description = _one_line(item.description.strip() or catalog.get(item.unique_id))
        lines.append(f"- {item.unique_id} ({item.kind})" + (f" - ‹{description}›" if description else ""))
    return (
        "# Media Library\n\nYou can send these from your own collection with a send_media task "
        "(give the unique_id):\n\n" + "\n".join(lines)
    )


def _sticker_descriptions(
    entries: list[tuple[str, str, str]],
) -> tuple[dict[str, str], dict[tuple[str, str], str]]:
    """Descriptions by sticker unique id and by (set, name), from one query in the catalog's order."""
    uids = {u for _, _, u in entries if u}
    sets = {s for s, _, _ in entries}
    rows = (
        MediaDescription.objects.filter(status__in=_DESCRIBED)
        .exclude(description=None)
        .filter(Q(unique_id__in=uids) | Q(sticker_set_name__in=sets))
        .values_list("unique_id", "sticker_set_name", "sticker_name", "description")
    )
    by_uid: dict[str, str] = {}
    by_name: dict[tuple[str, str], str] = {}
    for unique_id, set_name, name, description in rows:
        if unique_id in uids:
            by_uid[unique_id] = _one_line(description)
        if set_name in sets:
            by_name[(set_name, name)] = _one_line(description)
    return by_uid, by_name


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split())


def _json_block(items: list[dict[str, Any]]) -> str:
    return "```json\n" + json.dumps(items, ensure_ascii=False, indent=2) + "\n```"


def memory_section(agent: Agent, *, partner_id: int) -> str:
    """Curated memories about this partner (the agent's own memories are a stored kind, see below)."""
    curated = [
        _memory_json(m)
        for m in Memory.objects.filter(agent=agent, kind=Memory.Kind.CURATED, partner_id=partner_id)
    ]
    return "# Curated Memories\n\n" + _json_block(curated) if curated else ""


def _memory_json(memory: Memory) -> dict[str, Any]:
    item: dict[str, Any] = {"content": memory.content}
    created = memory.created_raw or (
        memory.created.strftime("%Y-%m-%d %H:%M:%S %Z") if memory.created else ""
    )
    if created:
        item["created"] = created
    if memory.creation_channel:
        item["creation_channel"] = memory.creation_channel
    return item


def stored_section(title: str, entries: list[dict[str, Any]], *, left_out: int = 0) -> str:
    """`# <title>` and the entries as a JSON list ("" without entries), and a line saying how many
    more the prompt budget for stored entries left out (CINDY_STORED_ENTRIES_BUDGET_CHARS)."""
    if not entries and not left_out:
        return ""
    parts = [f"# {title}", _json_block(entries)] if entries else [f"# {title}"]
    if left_out:
        parts.append(left_out_line(left_out))
    return "\n\n".join(parts)


def left_out_line(count: int) -> str:
    """What the agent reads about the entries of a section that the prompt budget left out."""
    entries = "entry is" if count == 1 else "entries are"
    return (
        f"{count:,} more {entries} stored but not shown here: only the most recently used fit in the prompt."
    )


@dataclass(frozen=True)
class PromptSection:
    """One section of a planning request: `key` says where it comes from ("instructions", "stickers",
    "media_library", "channel_details", "curated_memories", or "stored:<kind>"), `text` is what the
    model reads (its `# <title>` heading included)."""

    key: str
    title: str
    text: str


@dataclass(frozen=True)
class StoredSections:
    """The stored kinds' sections of one request: those in the system instruction and those after the
    history (see `memory.stored_kinds.StoredKind.prompt_place`)."""

    system_parts: tuple[PromptSection, ...]
    late_parts: tuple[PromptSection, ...]
    #: Whether the agent has any memory row, its own or curated (without one, no memory is read).
    memories: bool = True

    @property
    def system(self) -> str:
        return "\n\n".join(part.text for part in self.system_parts)

    @property
    def late(self) -> str:
        return "\n\n".join(part.text for part in self.late_parts)


def stored_sections(
    agent: Agent, *, conversation: Conversation, history_began: dt.datetime | None
) -> StoredSections:
    """One `# <title>` section per stored kind with entries, ids included, in the kinds' `section_order`:
    global memories, conversation notes, channel plan, intentions, events, and last the conversation
    summaries (always in the system instruction, right before the history, which starts where they end).

    Entries dated up to `history_began` (the first history message's date) go into the system
    instruction, the ones written since into sections of the same titles after the history: writing or
    changing one of those leaves everything before the history as it was, so the next request still
    shares the cached prefix. Each kind declares its title, entries and place in `memory.stored_kinds`;
    the agent names an entry's id to update it, or gives it empty content to delete it.
    """
    context = StoreContext(agent_id=agent.pk, channel_id=conversation.peer_id, topic_id=conversation.topic_id)
    # Entries another chat stored are shown without their ids: only that chat may change them (an
    # operator's direct messages may change any, and see every id).
    hide = not partner_is_operator(conversation)
    system: list[PromptSection] = []
    late: list[PromptSection] = []
    specs = [spec for spec in stored_kinds() if spec.in_prompt]
    present = _kinds_with_rows(specs, agent_id=agent.pk)
    for spec in specs:
        if spec.kind not in present:  # the agent has no entry of this kind anywhere: no section
            continue
        boundary = history_began if spec.prompt_place == "split" else None  # None: all in the system
        shown = stored_prompt_entries(
            kind=spec.kind, context=context, boundary=boundary, hide_foreign_ids=hide
        )
        for entries, left_out, target in (
            (shown.older, shown.older_left_out, system),
            (shown.newer, shown.newer_left_out, late),
        ):
            if entries or left_out:
                text = stored_section(spec.section_title, entries, left_out=left_out)
                target.append(PromptSection(f"stored:{spec.kind}", spec.section_title, text))
    return StoredSections(tuple(system), tuple(late), memories="remember" in present)


def _kinds_with_rows(specs: list, *, agent_id: int) -> set[str]:
    """The stored kinds of which the agent has any row, in any chat: one query for all of them (each
    kind's own scope narrows it further). A turn reads only these kinds' entries; most agents use a
    few of them."""
    if not specs:
        return set()
    quote = connection.ops.quote_name
    checks = [
        f"EXISTS (SELECT 1 FROM {quote(spec.model._meta.db_table)} "  # noqa: S608
        f"WHERE {quote(spec.model._meta.get_field('agent_id').column)} = %s)"
        for spec in specs
    ]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(checks)}", [agent_id] * len(specs))
        row = cursor.fetchone()
    return {spec.kind for spec, present in zip(specs, row, strict=True) if present}


_DETAIL_LABELS = {
    "about": "Bio",
    "bio": "Bio",
    "birthday": "Birthday",
    "phone": "Phone",
    "description": "Description",
    "participants_count": "Participants",
    "admins_count": "Admins",
    "slow_mode": "Slow mode",
    "linked_chat": "Linked chat",
    "forum": "Forum",
    "profile_photo": "Profile photo",
}


def channel_details_section(conversation: Conversation) -> str:
    details = conversation.details or {}
    kind = {"dm": "User", "group": "Group", "channel": "Channel"}.get(conversation.kind, conversation.kind)
    lines = [f"- Type: {kind}", f"- ID: {conversation.peer_id}"]
    label = "Name" if conversation.kind == Conversation.Kind.DM else "Title"
    if conversation.title:
        lines.append(f"- {label}: {conversation.title}")
    if conversation.username:
        lines.append(f"- Username: @{conversation.username}")
    if conversation.topic_id:  # a forum topic: this conversation is that topic only
        lines.append(
            f"- Topic: {conversation.topic_title or conversation.topic_id} (topic id {conversation.topic_id})"
        )
    for key, title in _DETAIL_LABELS.items():
        value = details.get(key)
        if value not in (None, "", [], {}):
            lines.append(f"- {title}: {value}")
    participants = details.get("participants")
    if isinstance(participants, list) and participants:
        lines.append("- Members: " + ", ".join(str(p) for p in participants))
    return "# Channel Details\n\n" + "\n".join(lines)
