"""What the full-text indexes hold of `RecallEntry.terms`, and what a conversation's search asks them.

MariaDB/MySQL (the FULLTEXT index of `terms`):

InnoDB's `MATCH ... AGAINST` reads, for every word of the query, the list of every row of the table
that holds it and scores them all before any other condition of the statement applies: a search
for a common word in one conversation costs as much as that word is common in the whole table
(at 100,000 entries, p95 178 ms by words alone; bench/RESULTS.md). So `terms` holds each word twice:

- plainly (`wed`), as `recall.stemming.terms` gives it: what a search of every entry of an agent
  (an operator's, or a turn's across direct chats) asks for;
- prefixed with the entry's scope (`c12p345t0_wed` in agent 12's chat with peer 345, topic 0;
  `g12_wed` for the agent's global entries; a minus sign as `n`): what a conversation's search asks
  for, its own chat's and the agent's global form of each word, so that InnoDB reads only the rows
  of those two scopes. The underscore is part of an InnoDB word, and never of a word of ours
  (`recall.stemming.words` splits at it), so no text can write another chat's scoped word; the
  scope is a condition of the SQL besides (`recall.selectors`).

Scoped words leave out what InnoDB would ignore as plain words (its default stopwords, words under
`innodb_ft_min_token_size`, 3), so a scoped search finds what a plain one would; a word's scoped form
keeps its first SCOPED_STEM characters, the same in the index and the query, within InnoDB's
84-character limit.

SQLite (the FTS5 table of migration 0002, whose scope column migration 0009 fills with `terms`): an
FTS5 match also reads each query word's list over the whole table (70 ms of CPU a search by words at
1M entries; bench/RESULTS.md), so `terms` holds each word of the text scoped the same way
(`sqlite_terms`), every word (FTS5 indexes every word), with the scope and the stem joined by an
`x` (FTS5's unicode61 tokenizer splits at an underscore; a scope key ends in a digit, so the first `x`
after it ends the key). The text column keeps the plain words, which searches of every entry of an
agent match.
"""

from __future__ import annotations

#: InnoDB's default FULLTEXT stopwords (INFORMATION_SCHEMA.INNODB_FT_DEFAULT_STOPWORD).
INNODB_STOPWORDS = frozenset(
    "a about an are as at be by com de en for from how i in is it la of on or that the this to was what "
    "when where who will with und www".split()
)
#: InnoDB's innodb_ft_min_token_size (the default, 3): shorter words are not indexed.
MIN_WORD = 3
#: A scoped word keeps this many characters of its stem (InnoDB ignores words over 84 characters).
SCOPED_STEM = 48


def scope_key(agent_id: int, peer_id: int | None, topic_id: int) -> str:
    """The prefix of an entry's scoped words: `g<agent>` for its global entries (no peer), else
    `c<agent>p<peer>t<topic>` (a minus sign as `n`)."""
    if peer_id is None:
        return f"g{agent_id}"
    return f"c{agent_id}p{str(peer_id).replace('-', 'n')}t{topic_id}"


def indexed(stem: str) -> bool:
    """Whether InnoDB indexes `stem` as a plain word."""
    return len(stem) >= MIN_WORD and stem not in INNODB_STOPWORDS


def scoped(key: str, stems: list[str]) -> list[str]:
    """The scoped words of `stems` under the scope `key` (those InnoDB would index plainly)."""
    return [f"{key}_{stem[:SCOPED_STEM]}" for stem in stems if indexed(stem)]


def entry_terms(stems: list[str], *, agent_id: int, peer_id: int | None, topic_id: int) -> str:
    """`RecallEntry.terms` of an entry whose text has `stems`: each word plainly, then scoped."""
    return " ".join([*stems, *scoped(scope_key(agent_id, peer_id, topic_id), stems)])


#: SQLite: the letter between a scoped word's scope key and its stem (see the module's docstring).
SQLITE_JOIN = "x"


def sqlite_scoped(key: str, stems: list[str]) -> list[str]:
    """SQLite: the scoped words of `stems` under the scope `key`, every one of them."""
    return [f"{key}{SQLITE_JOIN}{stem}" for stem in stems]


def sqlite_terms(stems: list[str], *, agent_id: int, peer_id: int | None, topic_id: int) -> str:
    """SQLite: `RecallEntry.terms` of an entry whose text has `stems`: its scoped words only (the
    FTS5 table indexes the plain words from the text itself)."""
    return " ".join(sqlite_scoped(scope_key(agent_id, peer_id, topic_id), stems))
