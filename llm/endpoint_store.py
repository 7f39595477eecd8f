"""The admin's OpenAI-compatible endpoints (`LLMEndpoint`), installed into this process's copy that
`cindy_site.llm_endpoints.endpoints()` merges with CINDY_LLM_ENDPOINTS.

Routing a name reads that copy, never the table: the copy is reloaded with the global parameters
(`llm.parameter_store.parameters_refresh`: before each task a worker runs, at each gateway pass) and
by the admin when it saves or deletes a row, so a new endpoint serves from the next turn on; a
process that has not reloaded yet reads the table when it meets a name its copy lacks
(`cindy_site.llm_endpoints.endpoint_lookup`, with this module's `endpoints_refresh` as the loader).
"""

from __future__ import annotations

from cindy_site.llm_endpoints import Endpoint, configured_endpoints, stored_endpoints_install
from llm.models import LLMEndpoint


def endpoints_refresh() -> None:
    """Read the enabled rows again (one query over a handful of rows)."""
    rows = LLMEndpoint.objects.filter(enabled=True).order_by("name")
    stored_endpoints_install(
        [Endpoint(row.name, row.base_url, row.api_key, "admin", row.structured) for row in rows]
    )


def overridden_by_setting(name: str) -> bool:
    """Whether CINDY_LLM_ENDPOINTS uses `name` too, so the setting's URL and key are the ones used."""
    return name in configured_endpoints()
