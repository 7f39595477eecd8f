"""Recall inside a turn: the older things an agent has seen that bear on what the turn answers.

A planning turn's query is its new messages, each judged on its own: the partner messages after the
agent's last message in the history (and the turn's target message), or the intent of an xsend, nudge
or due event. The recall index (`recall.selectors.recall_search`) is searched within the
conversation's scope (its own entries and the agent's global ones, never another chat's), leaving out
the messages the history shows; hits the prompt shows already (a stored entry in its sections, a page
retrieved this turn) are dropped too. What is left must pass the relevance line, and fits in a
character budget: a short `# Recalled` section in the volatile end of the request, after the
cacheable prefix.

When the persona's "Recall Across Chats" is `DMs`, a direct chat's recall (automatic and `recall`
tasks) also searches the agent's other direct chats (`recall.selectors.reaches_other_dms`); each of
their hits names the chat it came from, so the agent knows it is another conversation's content.

The relevance line is counted in words, so it means the same on SQLite (bm25) and MariaDB (InnoDB's
relevance), whose scores have different scales: a query's informative words are its stems of three
letters or more that are neither stopwords nor chat filler ("ok", "lol", "thanks"); a hit must hold at
least CINDY_RECALL_AUTO_MIN_SHARE of one message's (or intent's) informative words (rounded up), and
never more than MAX_WORDS_NEEDED. A message without informative words ("hi", "ok", "lol") searches
nothing.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings

from conversations.models import Conversation, Message
from llm.conversation import ChatMessage, agent_timezone
from recall.selectors import MAX_QUERY_WORDS, Hit, reaches_other_dms, recall_search
from recall.stemming import STOPWORDS, stem, words

if TYPE_CHECKING:
    from llm.prompt.instructions import TurnContext

RECALLED_TITLE = "# Recalled"
RECALLED_NOTE = (
    "Older things you remember that may bear on this turn: messages from before the history shown "
    "above, and your stored records and documents. Use them only where they help."
)
#: Added to the note when a line comes from another chat.
OTHER_CHATS_NOTE = (
    'A line marked "from your chat with ..." was said in another conversation, not this one: '
    "the person here may not know it."
)
#: Hits read from the index before the relevance line and the budget choose among them.
CANDIDATES = 40
#: A hit never needs more than this many of the query's informative words, however long the query.
MAX_WORDS_NEEDED = 2
#: The most characters of one hit shown (a long document section is cut, marked with "…").
HIT_CHARS = 600
#: The most partner messages of the turn read for the query (a busy group's newest).
QUERY_MESSAGES = 8

#: Chat filler and talk about talking: words that carry no subject ("do you remember what I told
#: you?"), so a message of only these recalls nothing.
FILLER = frozenset(
    """
    ok okay okey kk hi hey hello hiya yo lol lmao rofl haha hahaha hehe heh hmm hm umm uh oh ah aw wow
    omg yes yeah yep yup nope nah sure thanks thank thx ty cool nice great good fine right well really
    bye cya see please pls sorry yay ugh meh xd remember recall know knew tell told say said ask asked
    think thought mean meant thing things something anything like want get got still ever never again
    """.split()
)
_UNINFORMATIVE = frozenset(stem(w) for w in STOPWORDS | FILLER) | STOPWORDS | FILLER


def informative_words(text: str) -> list[str]:
    """The stems of `text` a recall looks for, each once, in order: three letters or more, neither a
    stopword nor filler."""
    found: dict[str, None] = {}
    for word in words(text):
        if word in _UNINFORMATIVE:
            continue
        stemmed = stem(word)
        if len(stemmed) >= 3 and stemmed not in _UNINFORMATIVE:
            found.setdefault(stemmed, None)
    return list(found)


def turn_query(history: Sequence[ChatMessage], turn: TurnContext) -> tuple[str, ...]:
    """What the turn answers, one text each, newest first: the intents of an xsend, nudge or event (its
    own and those it carries), then the partner messages after the agent's last message in the
    history and the turn's target message."""
    texts = [
        intent
        for context in (turn, *turn.carried)
        for intent in (context.xsend_intent, context.event_intent)
        if intent
    ]
    targets = {c.target_message_id for c in (turn, *turn.carried) if c.target_message_id is not None}
    newest: list[ChatMessage] = []
    for message in reversed(history):
        if message.is_agent:
            break
        newest.append(message)
    newest += [m for m in history if m.message_id in targets and not m.is_agent and m not in newest]
    texts += [_said(message) for message in newest[:QUERY_MESSAGES]]
    return tuple(text for text in texts if text.strip())


def _said(message: ChatMessage) -> str:
    """A message's own words (its text and what its media show), without its header."""
    return "\n".join(
        part.get("rendered_text", "") if part.get("kind") == "media" else part.get("text", "")
        for part in message.parts
        if part.get("kind") in ("text", "media")
    )


@dataclass(frozen=True)
class RecallLimits:
    chars: int
    hits: int
    share: float

    @classmethod
    def from_settings(cls) -> RecallLimits | None:
        """The limits, or None when automatic recall is off (CINDY_RECALL_AUTO, or a budget of 0)."""
        if not getattr(settings, "CINDY_RECALL_AUTO", True):
            return None
        limits = cls(
            chars=int(getattr(settings, "CINDY_RECALL_AUTO_CHARS", 1500)),
            hits=int(getattr(settings, "CINDY_RECALL_AUTO_HITS", 5)),
            share=float(getattr(settings, "CINDY_RECALL_AUTO_MIN_SHARE", 0.5)),
        )
        return limits if limits.chars > 0 and limits.hits > 0 else None


def words_needed(informative: int, share: float) -> int:
    """How many of a query's `informative` words a hit must hold to be recalled."""
    return max(1, min(math.ceil(share * informative - 1e-9), MAX_WORDS_NEEDED))


def recalled_hits(
    conversation: Conversation,
    *,
    query: Sequence[str],
    history: Sequence[ChatMessage],
    shown: str,
    limits: RecallLimits,
    memo: dict | None = None,
) -> list[Hit]:
    """The hits the `# Recalled` section shows, best first: in the conversation's scope, older than
    the history, not in `shown` (the prompt's other text), past the relevance line of one of the
    query's texts (each message is judged alone, so a second message does not raise the first's bar).

    `memo` (a dict the caller keeps for one turn): the search's candidates are kept there and reused
    by the turn's later rounds (a `retrieve` or `recall` round builds the request again with the same
    query and history; only `shown` changes)."""
    lines = [
        (set(found), words_needed(len(found), limits.share))
        for found in map(informative_words, query)
        if found
    ]
    wanted = list(dict.fromkeys(word for text in query for word in informative_words(text)))[:MAX_QUERY_WORDS]
    if not wanted:
        return []
    first = min((m.message_id for m in history), default=None)
    key = (conversation.pk, tuple(wanted), first)
    found = memo.get(key) if memo is not None else None
    if found is None:
        found = recall_search(
            agent_id=conversation.agent_id,
            query=" ".join(wanted),
            conversation=conversation,
            limit=CANDIDATES,
            messages_before=first,
            # Words only: the relevance line below counts the query's words in each hit, which a hit
            # found by meaning alone may not hold. A `recall` task (below) searches by meaning as well.
            mode="fulltext",
            other_dms=reaches_other_dms(conversation),
        )
        if memo is not None:
            memo[key] = found
    kept = []
    for hit in found:
        held = set(informative_words(hit.text))
        if not any(len(words & held) >= needed for words, needed in lines):
            continue
        if hit.kind != "message" and _shown_already(hit.text, shown, document=hit.kind == "document"):
            continue
        kept.append(hit)
    return kept


def _shown_already(text: str, shown: str, *, document: bool = False) -> bool:
    """Whether the prompt shows `text` already: as it is (a retrieved page) or inside a JSON list (a
    stored entry's content). A document's first section starts with its file name on a line of its
    own (recall/sources.py), which the document retrieved as `file:NAME` does not show: the section
    without that line counts."""
    text = text.strip()
    if not text:
        return False
    if text in shown or json.dumps(text, ensure_ascii=False)[1:-1] in shown:
        return True
    if document:
        _, _, body = text.partition("\n")
        body = body.strip()
        return bool(body) and body in shown
    return False


def recalled_section(
    conversation: Conversation,
    *,
    query: Sequence[str],
    history: Sequence[ChatMessage],
    shown: str,
    memo: dict | None = None,
) -> str:
    """`# Recalled` with one line per hit (date, what it is, its text) under the budget, or "" when
    nothing passes (or automatic recall is off). `memo`: as `recalled_hits`'."""
    limits = RecallLimits.from_settings()
    if limits is None or not query:
        return ""
    hits = recalled_hits(conversation, query=query, history=history, shown=shown, limits=limits, memo=memo)
    if not hits:
        return ""
    speakers, chats = _sources(conversation, hits)
    tz = agent_timezone(conversation.agent)
    lines: list[str] = []
    used = 0
    for hit in hits:
        if len(lines) >= limits.hits:
            break
        line = _line(hit, speakers, tz, chats)
        if used + len(line) + 1 > limits.chars:
            continue
        lines.append(line)
        used += len(line) + 1
    if not lines:
        return ""
    note = RECALLED_NOTE
    if any(_OTHER_CHAT in line for line in lines):
        note += " " + OTHER_CHATS_NOTE
    return f"{RECALLED_TITLE}\n\n{note}\n\n" + "\n".join(lines)


_OTHER_CHAT = "from your chat with "


def _sources(
    conversation: Conversation, hits: Iterable[Hit]
) -> tuple[dict[tuple[int | None, int], str], dict[tuple[int, int], str]]:
    """Who wrote each message hit, by (conversation id, message id): "you" for the agent, else the
    sender; and the names of the other chats hits come from, by (peer id, topic id)."""
    hits = list(hits)
    messages = [(h.conversation_id, h.message_id) for h in hits if h.kind == "message" and h.message_id]
    speakers: dict[tuple[int | None, int], str] = {}
    if messages:
        rows = Message.objects.filter(
            conversation_id__in={c for c, _ in messages}, message_id__in={m for _, m in messages}
        ).values_list("conversation_id", "message_id", "is_agent", "sender_name")
        speakers = {(c, m): "you" if is_agent else (name or "they") for c, m, is_agent, name in rows}
    own = (conversation.peer_id, conversation.topic_id)
    others = {(h.peer_id, h.topic_id) for h in hits if h.peer_id is not None} - {own}
    chats: dict[tuple[int, int], str] = {scope: "someone" for scope in others}
    if others:
        for chat in Conversation.objects.filter(
            agent_id=conversation.agent_id, peer_id__in={p for p, _ in others}, topic_id=0
        ).select_related("agent"):
            chats[(chat.peer_id, chat.topic_id)] = chat.display_title
    return speakers, chats


_KIND_LABELS = {
    "summary": "a summary",
    "memory": "your memory",
    "note": "your note",
    "intention": "your intention",
    "plan": "your plan",
    "document": "your document",
}


def _line(
    hit: Hit, speakers: dict[tuple[int | None, int], str], tz: dt.tzinfo, chats: dict[tuple[int, int], str]
) -> str:
    when = hit.date.astimezone(tz).strftime("%Y-%m-%d %H:%M")
    if hit.kind == "message":
        who = speakers.get((hit.conversation_id, hit.message_id or 0), "someone")
        what = f"message {hit.message_id}, {who} wrote"
    else:
        what = _KIND_LABELS.get(hit.kind, hit.kind)
    chat = chats.get((hit.peer_id, hit.topic_id)) if hit.peer_id is not None else None
    if chat is not None:
        what += f", {_OTHER_CHAT}{chat}"
    text = " ".join(hit.text.split())
    if len(text) > HIT_CHARS:
        text = text[: HIT_CHARS - 1].rstrip() + "…"
    return f"- {when} ({what}): {text}"


#: A `recall` task's answer: at most this many hits and characters.
TASK_HITS = 8
TASK_CHARS = 3000


def recall_results(conversation: Conversation, *, query: str, history: Sequence[ChatMessage]) -> str:
    """A `recall` task's answer, shown in the next round: `# Recall: "QUERY"` and the best hits in the
    conversation's scope (messages the history shows left out), without the relevance line (the agent
    chose the words), or a line saying nothing was found."""
    first = min((m.message_id for m in history), default=None)
    hits = recall_search(
        agent_id=conversation.agent_id,
        query=query,
        conversation=conversation,
        limit=TASK_HITS,
        messages_before=first,
        other_dms=(across := reaches_other_dms(conversation)),
    )
    speakers, chats = _sources(conversation, hits)
    tz = agent_timezone(conversation.agent)
    lines: list[str] = []
    used = 0
    for hit in hits:
        line = _line(hit, speakers, tz, chats)
        if used + len(line) + 1 <= TASK_CHARS:
            lines.append(line)
            used += len(line) + 1
    found = "\n".join(lines) if lines else "Nothing found: nothing you have seen here matches these words."
    title = f"# Recall: {json.dumps(query, ensure_ascii=False)}"
    where = "this conversation and your other direct chats" if across else "this conversation"
    note = f" {OTHER_CHATS_NOTE}" if any(_OTHER_CHAT in line for line in lines) else ""
    return f"{title}\n\nWhat you searched for in your memory of {where}, best first.{note}\n\n{found}"
