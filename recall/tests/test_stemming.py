"""The stemmer MariaDB's index relies on stems as SQLite's FTS5 porter tokenizer does."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from django.conf import settings

from recall.stemming import stem, terms, words

DOCS = Path(settings.BASE_DIR) / "docs"


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("weddings", "wed"),
        ("wedding", "wed"),
        ("caresses", "caress"),
        ("ponies", "poni"),
        ("agreed", "agre"),
        ("hopping", "hop"),
        ("filing", "file"),
        ("happy", "happi"),
        ("relational", "relat"),
        ("generalizations", "gener"),
        ("electrical", "electr"),
        ("adjustment", "adjust"),
        ("adoption", "adopt"),
        ("controll", "control"),
        ("go", "go"),  # too short to stem
        ("x2y", "x2y"),
        ("99966xyyyy", "99966xyyyi"),  # digits count as consonants, as in FTS5
    ],
)
def test_porter_stems(word, expected):
    assert stem(word) == expected


def test_words_are_folded_to_lower_case_without_accents():
    assert words("Café NAÏVE_façade l'été 2026") == ["cafe", "naive", "facade", "l", "ete", "2026"]
    assert terms("Weddings, in Zürich!") == "wed in zurich"


def test_every_word_of_the_documentation_stems_as_fts5_stems_it():
    text = " ".join(path.read_text(encoding="utf-8") for path in sorted(DOCS.glob("*.md")))
    text += " свадьбы свадьба Hochzeiten mariées 東京 x" + "ing" * 30  # other scripts, a long word
    vocabulary = sorted(set(words(text)))
    assert len(vocabulary) > 3000
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61 remove_diacritics 2')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    db.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", enumerate(vocabulary, start=1))
    fts5 = {row: term for row, term in db.execute("SELECT doc, term FROM v")}
    differ = [(w, fts5[n], stem(w)) for n, w in enumerate(vocabulary, start=1) if fts5[n] != stem(w)]
    assert differ == []
