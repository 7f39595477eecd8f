"""Words as the index compares them: folded to lower case without accents, and stemmed by Porter's
algorithm, so that "weddings", "wedding" and "wedded" are one word.

SQLite's FTS5 does this itself (`tokenize='porter unicode61 remove_diacritics 2'`); MariaDB's
FULLTEXT index does neither, so on MariaDB the index searches `RecallEntry.terms`, the text's words
as `terms()` gives them, and a query is turned into terms the same way. The stemmer is Porter's
original algorithm (M. F. Porter, "An algorithm for suffix stripping", 1980) with the two revisions
SQLite's porter tokenizer also makes (`bli` -> `ble`, `logi` -> `log`); `recall/tests/test_stemming.py`
holds the two to the same stems over a word list.
"""

from __future__ import annotations

import functools
import re
import unicodedata

#: A word: a run of letters and digits (as unicode61 splits text; the underscore separates too).
_WORD = re.compile(r"[^\W_]+")
#: Words longer than this many bytes are kept whole (FTS5's porter tokenizer passes them through too).
MAX_STEMMED = 64
#: InnoDB's default FULLTEXT stopwords (MariaDB never finds them) and common English function words:
#: words that say nothing of a subject. A turn's automatic recall never asks for them
#: (`llm.recalled`), nor does the word ranking of a fused search (`recall.selectors`).
STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before being
    below between both but by can com could de did do does doing down during each en few for from
    further had has have having he her here hers herself him himself his how i if in into is it its
    itself just la let me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them themselves
    then there these they this those through to too under und until up very was we were what when
    where which while who whom why will with would www you your yours yourself yourselves
    """.split()
)


def words(text: str) -> list[str]:
    """The words of `text`, lower case, accents removed."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    if not folded.isascii():
        folded = "".join(c for c in folded if not unicodedata.combining(c))
    return _WORD.findall(folded)


def terms(text: str) -> str:
    """`text` as the MariaDB index stores and searches it: its stemmed words, space separated."""
    return " ".join(stem(word) for word in words(text))


def _consonant(word: str, i: int) -> bool:
    c = word[i]
    if c in "aeiou":
        return False
    if c == "y":
        return i == 0 or not _consonant(word, i - 1)
    return True


def _measure(stem: str) -> int:
    """Porter's m: how many vowel-consonant sequences `stem` holds ([C](VC){m}[V])."""
    m, previous_vowel = 0, False
    for i in range(len(stem)):
        vowel = not _consonant(stem, i)
        if previous_vowel and not vowel:
            m += 1
        previous_vowel = vowel
    return m


def _has_vowel(stem: str) -> bool:
    return any(not _consonant(stem, i) for i in range(len(stem)))


def _double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _consonant(word, len(word) - 1)


def _cvc(word: str) -> bool:
    """Ends consonant-vowel-consonant, the last not w, x or y (as in hop, not in snow)."""
    n = len(word)
    return (
        n >= 3
        and _consonant(word, n - 1)
        and not _consonant(word, n - 2)
        and _consonant(word, n - 3)
        and word[-1] not in "wxy"
    )


_STEP2 = (
    ("ational", "ate"),
    ("tional", "tion"),
    ("enci", "ence"),
    ("anci", "ance"),
    ("izer", "ize"),
    ("bli", "ble"),
    ("alli", "al"),
    ("entli", "ent"),
    ("eli", "e"),
    ("ousli", "ous"),
    ("ization", "ize"),
    ("ation", "ate"),
    ("ator", "ate"),
    ("alism", "al"),
    ("iveness", "ive"),
    ("fulness", "ful"),
    ("ousness", "ous"),
    ("aliti", "al"),
    ("iviti", "ive"),
    ("biliti", "ble"),
    ("logi", "log"),
)
_STEP3 = (
    ("icate", "ic"),
    ("ative", ""),
    ("alize", "al"),
    ("iciti", "ic"),
    ("ical", "ic"),
    ("ful", ""),
    ("ness", ""),
)
_STEP4 = (
    "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent",
    "ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize",
)  # fmt: skip


def _longest(word: str, suffixes) -> str | None:
    found = None
    for suffix in suffixes:
        if word.endswith(suffix) and (found is None or len(suffix) > len(found)):
            found = suffix
    return found


def _replace(word: str, rules: tuple[tuple[str, str], ...], min_measure: int) -> str:
    """The longest rule whose suffix `word` ends with, applied when the stem's m exceeds
    `min_measure`; only that rule is tried."""
    suffix = _longest(word, [s for s, _ in rules])
    if suffix is None:
        return word
    stem = word[: -len(suffix)]
    if _measure(stem) > min_measure:
        return stem + dict(rules)[suffix]
    return word


def _step1(word: str) -> str:
    if word.endswith("sses") or word.endswith("ies"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if word.endswith("eed"):
        if _measure(word[:-3]) > 0:
            word = word[:-1]
    else:
        for suffix in ("ed", "ing"):
            if word.endswith(suffix) and _has_vowel(word[: -len(suffix)]):
                word = word[: -len(suffix)]
                if word.endswith(("at", "bl", "iz")):
                    word += "e"
                elif _double_consonant(word) and word[-1] not in "lsz":
                    word = word[:-1]
                elif _measure(word) == 1 and _cvc(word):
                    word += "e"
                break
    if word.endswith("y") and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    return word


def _step4(word: str) -> str:
    suffix = _longest(word, _STEP4)
    if suffix is None:
        return word
    stem = word[: -len(suffix)]
    if _measure(stem) > 1 and (suffix != "ion" or stem.endswith(("s", "t"))):
        return stem
    return word


def _step5(word: str) -> str:
    if word.endswith("e"):
        stem = word[:-1]
        m = _measure(stem)
        if m > 1 or (m == 1 and not _cvc(stem)):
            word = stem
    if word.endswith("ll") and _measure(word) > 1:
        word = word[:-1]
    return word


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Porter's stem of one lower-case word; words shorter than 3 or longer than MAX_STEMMED bytes
    (UTF-8) are kept as they are. As in FTS5, anything but a vowel counts as a consonant, so digits
    and other scripts take part (a Cyrillic word ends in no English suffix and stays whole)."""
    size = len(word.encode())
    if size < 3 or size > MAX_STEMMED:
        return word
    word = _step1(word)
    word = _replace(word, _STEP2, 0)
    word = _replace(word, _STEP3, 0)
    word = _step4(word)
    return _step5(word)
