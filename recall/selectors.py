"""Searching the recall index: the best entries for a query, within a conversation's scope.

One plain statement per database (the full-text syntax has no ORM form): SQLite's FTS5 table
ranked by its `bm25()`, MariaDB/MySQL's `MATCH ... AGAINST` in natural language mode over the
stemmed `terms`. On both, a conversation's search asks for its scopes' scoped words
(`recall.fulltext`), so that the index reads only those scopes' rows. Scores are each database's
own relevance (higher is better), comparable within one answer, not across databases.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Collection
from dataclasses import dataclass

from django.db import connections, router

from cindy_site import rows
from conversations.models import Conversation
from recall.embedding import vectors_enabled
from recall.fulltext import scope_key, scoped, sqlite_scoped
from recall.models import EntryKind, RecallEntry
from recall.provider_vectors import embeddings_model, nearest_provider_entries
from recall.similar import FULLTEXT_SHARE, FUSION_DEPTH, fuse, nearest_entries
from recall.stemming import STOPWORDS, stem, words

#: The most hits one search returns.
MAX_LIMIT = 100
#: The longest query, in characters, the API and the dashboard accept.
MAX_QUERY_CHARS = 1000
#: Words of a query beyond this many are ignored (bounds the work of one search).
MAX_QUERY_WORDS = 32
FTS_TABLE = "recall_recallentry_fts"
#: SQLite: how many of the best full-text matches a search reads from the entry table before its
#: scope's SQL conditions (kinds, the history's bound) apply (`_fts_ranked`).
FTS_DEPTH = 100
#: How a search ranks: the rankings fused, words only, meaning only (the local vectors), meaning by
#: the provider's embeddings only (with CINDY_RECALL_EMBEDDINGS set).
SEARCH_MODES = ("fused", "fulltext", "vectors", "provider")

_NAMES = ("id", "kind", "conversation", "peer_id", "topic_id", "source_id", "message_id", "date", "text")

_COLUMNS = ("id", "kind", "conversation_id", *_NAMES[3:])


class RecallQueryError(ValueError):
    """A search that cannot be run: the message names the value and what to send instead."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message)


@dataclass(frozen=True)
class Hit:
    entry_id: int
    kind: str
    conversation_id: int | None
    peer_id: int | None
    topic_id: int
    source_id: int
    message_id: int | None
    date: dt.datetime
    text: str
    score: float

    def as_json(self) -> dict:
        return {
            "kind": self.kind,
            "conversation_id": self.conversation_id,
            "message_id": self.message_id,
            "date": self.date.isoformat(),
            "text": self.text,
            "score": self.score,
        }


def query_words(query: str) -> list[str]:
    """The words a search looks for; raises RecallQueryError when there are none."""
    found = words(query or "")[:MAX_QUERY_WORDS]
    if not found:
        raise RecallQueryError(
            "q", f"the query {query!r} has no words to search for: send at least one word (letters or digits)"
        )
    return found


def subject_words(found: list[str]) -> list[str]:
    """The words of a query that a fused search ranks by words: its stopwords left out, unless it
    has only those. The word ranking gives the fusion its few best hits for what vectors blur (a
    name, a number, a rare word); a stopword adds nothing there, and on SQLite it was the costliest
    part of a search (at 1M entries its list in a chat holds most of the chat's entries)."""
    return [word for word in found if word not in STOPWORDS] or found


def check_limit(limit: int) -> int:
    if not 1 <= limit <= MAX_LIMIT:
        raise RecallQueryError("limit", f"limit {limit} is out of range: ask for 1 to {MAX_LIMIT} hits")
    return limit


def recall_search(
    *,
    agent_id: int,
    query: str,
    conversation: Conversation | None = None,
    limit: int = 10,
    kinds: Collection[str] | None = None,
    mode: str | None = None,
    messages_before: int | None = None,
    other_dms: bool = False,
) -> list[Hit]:
    """The entries of the agent that best match `query`, best first.

    With `conversation`: that chat's own entries (its messages, summaries, notes, plans, and the
    curated memories of its partner) and the agent's global ones (episodic memories, intentions,
    documents), never another chat's. Without: every entry of the agent (an operator's search).
    `kinds` limits the hits to those kinds of entry (None: every kind). `messages_before`: message
    entries only with a Telegram message id below it (a turn's recall leaves out the messages its
    history shows); the other kinds are not affected. `other_dms` (with a DM `conversation`, when
    the persona's "Recall Across Chats" is `DMs`: `reaches_other_dms`): the agent's other direct
    chats' entries too (peer ids above 0, whole chats), never a group's or a channel's;
    `messages_before` then limits only the conversation's own messages.

    `mode`: "fused" (the default with CINDY_RECALL_VECTORS on) ranks by reciprocal rank fusion of
    the full-text ranking and the vectors' (`recall.similar`), and, with CINDY_RECALL_EMBEDDINGS set,
    the provider's vectors' (`recall.provider_vectors`; a provider that fails leaves the other two);
    "fulltext" (the default with it off) by words only; "vectors" by the local vectors only;
    "provider" by the provider's only. The score is the database's relevance in "fulltext", the
    fusion's sum in "fused", the cosine similarity in "vectors" and "provider"; higher is better.
    """
    found = query_words(query)
    check_limit(limit)
    if mode is None:
        mode = "fused" if vectors_enabled() else "fulltext"
    if mode not in SEARCH_MODES:
        raise RecallQueryError(
            "mode", f"search mode {mode!r} is unknown: use one of {', '.join(SEARCH_MODES)}"
        )
    if mode == "provider" and not embeddings_model():
        raise RecallQueryError(
            "mode", 'search mode "provider" needs CINDY_RECALL_EMBEDDINGS set to an embedding model'
        )
    if kinds is not None and not kinds:
        return []
    if mode == "fulltext":
        return _with_conversations(
            agent_id, _fulltext(agent_id, found, conversation, kinds, limit, messages_before, other_dms)
        )
    depth = max(limit, FUSION_DEPTH)
    scope = {
        "agent_id": agent_id,
        "conversation": conversation,
        "kinds": kinds,
        "depth": depth,
        "messages_before": messages_before,
        "other_dms": other_dms,
    }
    if mode == "provider":
        return _with_conversations(
            agent_id, _entries_as_hits((nearest_provider_entries(query=query, **scope) or [])[:limit])
        )
    nearest = nearest_entries(
        agent_id=agent_id,
        query=query,
        conversation=conversation,
        kinds=kinds,
        depth=depth,
        messages_before=messages_before,
        other_dms=other_dms,
    )
    if mode == "vectors":
        return _with_conversations(agent_id, _entries_as_hits(nearest[:limit]))
    by_text = _fulltext(
        agent_id, subject_words(found), conversation, kinds, limit, messages_before, other_dms
    )
    share = max(1, round(limit * FULLTEXT_SHARE))
    rankings = [[h.entry_id for h in by_text[:share]], [entry_id for entry_id, _ in nearest]]
    provider = nearest_provider_entries(query=query, **scope) if embeddings_model() else None
    if provider:
        rankings.append([entry_id for entry_id, _ in provider])
    ranked = fuse(rankings)[:limit]
    # Too few to fill the limit (few entries have vectors): the rest of the full-text hits follow.
    ranked += [(h.entry_id, 0.0) for h in by_text[share:] if h.entry_id not in dict(ranked)][
        : limit - len(ranked)
    ]
    known = {h.entry_id: h for h in by_text}
    missing = _entries_as_hits([(entry_id, score) for entry_id, score in ranked if entry_id not in known])
    known.update((h.entry_id, h) for h in missing)
    hits = [dataclasses.replace(known[entry_id], score=round(score, 6)) for entry_id, score in ranked]
    return _with_conversations(agent_id, hits)


def reaches_other_dms(conversation: Conversation) -> bool:
    """Whether a turn's recall in `conversation` also searches the agent's other direct chats: the
    persona's "Recall Across Chats" is `DMs` and this is a direct chat (a group's never does)."""
    return conversation.kind == Conversation.Kind.DM and conversation.agent.recall_across_chats == "dms"


def _fulltext(
    agent_id: int,
    found: list[str],
    conversation: Conversation | None,
    kinds: Collection[str] | None,
    limit: int,
    messages_before: int | None = None,
    other_dms: bool = False,
) -> list[Hit]:
    connection = connections[router.db_for_read(RecallEntry)]
    table = rows.table(RecallEntry, using=connection.alias)
    cols = ", ".join(f"e.{connection.ops.quote_name(RecallEntry._meta.get_field(n).column)}" for n in _NAMES)
    scope, scope_params = "e.agent_id = %s", [agent_id]
    other_dms = other_dms and conversation is not None
    if conversation is not None:
        # Another DM: a user's peer id (above 0; groups' and channels' are below), a whole chat.
        wider = " OR (e.peer_id > 0 AND e.topic_id = 0)" if other_dms else ""
        scope += f" AND (e.peer_id IS NULL OR (e.peer_id = %s AND e.topic_id = %s){wider})"
        scope_params += [conversation.peer_id, conversation.topic_id]
    if kinds is not None:
        scope += f" AND e.kind IN ({', '.join(['%s'] * len(kinds))})"
        scope_params += sorted(kinds)
    if messages_before is not None:
        scope += " AND (e.kind <> %s OR e.message_id < %s"
        scope_params += [EntryKind.MESSAGE.value, int(messages_before)]
        if other_dms:
            # Other chats' message ids count on their own: the history bounds only this chat's.
            scope += " OR e.peer_id <> %s OR e.topic_id <> %s"
            scope_params += [conversation.peer_id, conversation.topic_id]
        scope += ")"
    if connection.vendor == "mysql":
        stems = [stem(word) for word in found]
        if conversation is not None and not other_dms:
            # The chat's and the agent's global scoped words: InnoDB reads only these scopes' rows.
            against = " ".join(
                scoped(scope_key(agent_id, conversation.peer_id, conversation.topic_id), stems)
                + scoped(scope_key(agent_id, None, 0), stems)
            )
            if not against:  # only words InnoDB ignores (stopwords, under 3 letters): no hits
                return []
        else:
            against = " ".join(stems)
        sql = (
            f"SELECT {cols}, MATCH(e.terms) AGAINST (%s IN NATURAL LANGUAGE MODE) AS score "  # noqa: S608
            f"FROM {table} e WHERE MATCH(e.terms) AGAINST (%s IN NATURAL LANGUAGE MODE) AND {scope} "
            "ORDER BY score DESC, e.id DESC LIMIT %s"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [against, against, *scope_params, limit])
            fetched = cursor.fetchall()
    else:
        # Words hold no quotes. A conversation's search matches its scopes' scoped words in the
        # scope column alone (migration 0009, `recall.fulltext`), which the index keeps apart from
        # every other chat's, and bm25 weighs that column; any other search matches the plain words
        # of the text column AND the agent's scope word (migration 0002), and bm25 weighs the text.
        match, weights = _fts_match(agent_id, found, None if other_dms else conversation)
        fetched = _fts_ranked(connection, table, cols, match, weights, scope, scope_params, limit)
    hits = []
    for row in fetched:
        values = rows.convert(RecallEntry, row[:-1], names=_NAMES, using=connection.alias)
        hits.append(Hit(*values, score=round(float(row[-1]), 6)))
    return hits


def _fts_ranked(
    connection, table: str, cols: str, match: str, weights: str, scope: str, scope_params: list, limit: int
):
    """SQLite: the rows (`cols` of the entry table `table`, then the score) of the `limit` best FTS5
    matches of `match` that meet the SQL condition `scope`, best first.

    FTS5 ranks its matches alone first, and the entry table is read for its FTS_DEPTH best only
    (or `limit`, if more), which are then held to `scope`: joined and filtered before the ranking,
    every match cost a read of the entry table (at 1M entries, a chat's search for common words
    matches up to 16,000 rows: 48 ms of CPU a search, 26 ranked first; bench/RESULTS.md). The
    answer is the same: when fewer than `limit` of the best meet `scope` while there were more
    matches, every match is joined and filtered, as before."""
    ranked = (
        f"SELECT rowid, -bm25({FTS_TABLE}, {weights}) AS score FROM {FTS_TABLE} "  # noqa: S608
        f"WHERE {FTS_TABLE} MATCH %s ORDER BY score DESC, rowid DESC"
    )
    depth = max(limit, FTS_DEPTH)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {cols}, f.score, ({scope}) FROM ({ranked} LIMIT %s) f "  # noqa: S608
            f"JOIN {table} e ON e.id = f.rowid ORDER BY f.score DESC, e.id DESC",
            [*scope_params, match, depth],
        )
        fetched = cursor.fetchall()
        kept = [row[:-1] for row in fetched if row[-1]]
        if len(kept) >= limit or len(fetched) < depth:
            return kept[:limit]
        cursor.execute(
            f"SELECT {cols}, f.score FROM ({ranked}) f JOIN {table} e ON e.id = f.rowid "  # noqa: S608
            f"WHERE {scope} ORDER BY f.score DESC, e.id DESC LIMIT %s",
            [match, *scope_params, limit],
        )
        return cursor.fetchall()


def _entries_as_hits(scored: list[tuple[int, float]]) -> list[Hit]:
    """Hits of these entries, in the order given, with the scores given."""
    found = RecallEntry.objects.filter(pk__in=[entry_id for entry_id, _ in scored]).values_list(*_COLUMNS)
    by_id = {values[0]: values for values in found}
    return [Hit(*by_id[entry_id], score=round(score, 6)) for entry_id, score in scored if entry_id in by_id]


def _fts_match(agent_id: int, found: list[str], conversation: Conversation | None) -> tuple[str, str]:
    """(FTS5 query, bm25 column weights) of a search for the words `found`: with `conversation`,
    the scoped words of its chat and of the agent's global entries in the scope column; without
    (None: the agent's every entry, which the SQL condition narrows, as for a search across DMs),
    the plain words in the text column and the agent's scope word (`a<agent>`, migration 0002)."""
    if conversation is None:
        return "text : (" + " OR ".join(
            f'"{word}"' for word in found
        ) + f') AND scope : "a{agent_id}"', "1.0, 0.0"
    stems = list(dict.fromkeys(stem(word) for word in found))
    wanted = sqlite_scoped(scope_key(agent_id, conversation.peer_id, conversation.topic_id), stems)
    wanted += sqlite_scoped(scope_key(agent_id, None, 0), stems)
    return "scope : (" + " OR ".join(f'"{word}"' for word in wanted) + ")", "0.0, 1.0"


def _with_conversations(agent_id: int, hits: list[Hit]) -> list[Hit]:
    """Hits of a chat's records (notes, summaries, plans, curated memories) name the agent's
    conversation with that chat, when it has one; messages carry theirs already."""
    scopes = {(h.peer_id, h.topic_id) for h in hits if h.conversation_id is None and h.peer_id is not None}
    if not scopes:
        return hits
    chats = {
        (peer, topic): pk
        for peer, topic, pk in Conversation.objects.filter(
            agent_id=agent_id, peer_id__in={peer for peer, _ in scopes}
        ).values_list("peer_id", "topic_id", "pk")
    }
    return [
        dataclasses.replace(h, conversation_id=chats.get((h.peer_id, h.topic_id)))
        if h.conversation_id is None and h.peer_id is not None
        else h
        for h in hits
    ]
