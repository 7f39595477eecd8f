from __future__ import annotations

from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.db import models

from cindy_site.llm_endpoints import endpoint_name_problem


def validate_endpoint_name(value: str) -> None:
    problem = endpoint_name_problem(value)
    if problem:
        raise ValidationError(problem)


def validate_endpoint_url(value: str) -> None:
    # Not Django's URLValidator: it refuses the bare host names a LAN or Docker gives a model server
    # (http://ollama:11434/v1, http://gpu:8000/v1).
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018  (raises ValueError on a port that is not a number)
    except ValueError:
        parts = None
    if (
        parts is None
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or any(c.isspace() for c in value)
    ):
        raise ValidationError(
            f'"{value}" is not an http or https URL: write the server\'s OpenAI-compatible base URL, '
            "e.g. http://localhost:11434/v1 for Ollama"
        )


class LLMEndpoint(models.Model):
    """An OpenAI-compatible endpoint that LLM names address as `NAME:MODEL` (`ollama:llama3.1`),
    beside those of CINDY_LLM_ENDPOINTS; the setting wins when both use a name
    (`cindy_site/llm_endpoints.py`)."""

    name = models.CharField(
        max_length=32,
        unique=True,
        validators=[validate_endpoint_name],
        help_text="The NAME in NAME:MODEL: lowercase letters, digits, - or _, starting with a letter",
    )
    base_url = models.CharField(
        "base URL",
        max_length=500,
        validators=[validate_endpoint_url],
        help_text="The server's OpenAI-compatible API, e.g. http://localhost:11434/v1",
    )
    #: Sent only to this server; shown masked in the admin and never logged.
    api_key = models.CharField("API key", max_length=500, blank=True)
    enabled = models.BooleanField(default=True)
    structured = models.CharField(
        "structured output",
        max_length=4,
        choices=[
            ("auto", "Auto: send the reply schema until the server refuses it"),
            ("on", "On: always send the reply schema"),
            ("off", "Off: the prompt alone"),
        ],
        default="auto",
        help_text=(
            "Whether requests carry the reply schema as response_format (json_schema). Auto falls back "
            "to the prompt alone, for this process's lifetime, when the server refuses or ignores it"
        ),
    )

    class Meta:
        ordering = ["name"]
        verbose_name = "LLM endpoint"

    def __str__(self) -> str:
        return self.name
