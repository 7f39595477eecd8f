"""A logging filter that takes credentials out of every line before a handler writes it.

Installed on every handler in settings LOGGING, so it sees records from every logger, libraries
included: django-ninja, for one, logs a whole unexpected `Authorization` header in DEBUG
("Unexpected auth - 'Basic cindy_…'"). What it removes:
- Cindy's API tokens (`cindy_` and the random part) wherever they appear;
- what follows an HTTP authentication scheme (`Bearer …`, `Basic …`, `Token …`, `Digest …`, …);
- the value of an `Authorization` header, however it is written (`Authorization: …`,
  `'HTTP_AUTHORIZATION': '…'`), and whatever django-ninja quotes as an unexpected header, since an
  unknown scheme or a bare value may be a credential too.
The message is formatted first, so arguments are covered; a traceback is formatted and redacted once
here, and handlers then write that text.
"""

from __future__ import annotations

import logging
import re

REDACTED = "[redacted]"

_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    # django-ninja's line quotes the whole header value, scheme or not.
    (re.compile(r"(Unexpected auth - ')[^']*(')"), rf"\g<1>{REDACTED}\g<2>"),
    # A header's value, in "Authorization: x", "authorization=x" or a META dump's "'HTTP_AUTHORIZATION': 'x'".
    (
        re.compile(r"((?:HTTP_)?(?:PROXY_)?AUTHORIZATION['\"]?\s*[:=]\s*)(['\"]?)[^'\"\r\n]*", re.IGNORECASE),
        rf"\g<1>\g<2>{REDACTED}",
    ),
    # A scheme and its credentials (RFC 7235's token68: base64 and the like). At least 12 characters,
    # so that prose such as "token count" keeps its words.
    (
        re.compile(
            r"\b(Bearer|Basic|Token|Digest|Negotiate|NTLM|ApiKey|Api-Key|HOBA|Mutual)(\s+)[A-Za-z0-9._~+/=-]{12,}",
            re.IGNORECASE,
        ),
        rf"\g<1>\g<2>{REDACTED}",
    ),
    # Cindy's API tokens: the prefix and 43 characters of token_urlsafe(32). Module names such as
    # cindy_site stop at a dot well before 20 characters.
    (re.compile(r"cindy_[A-Za-z0-9_-]{20,}"), f"cindy_{REDACTED}"),
]


def redact(text: str) -> str:
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


class RedactCredentials(logging.Filter):
    """Rewrites a record's message (and its traceback text) without credentials; drops nothing."""

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: let the handler report it as it would
            return True
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True
