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
from llm.selectors import enabled_endpoints


def endpoints_refresh() -> None:
    """Read the enabled rows again (one plain query over a handful of rows: `llm.selectors`)."""
    stored_endpoints_install(
        [
            Endpoint(name, base_url, api_key, "admin", structured)
            for name, base_url, api_key, structured in enabled_endpoints()
        ]
    )


def overridden_by_setting(name: str) -> bool:
    """Whether CINDY_LLM_ENDPOINTS uses `name` too, so the setting's URL and key are the ones used."""
    return name in configured_endpoints()
