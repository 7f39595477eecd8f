"""Every SDK client of a process shares one TLS context (llm/providers/base.py, `tls_context`)."""

from __future__ import annotations

import ssl

from llm.providers import anthropic, gemini, openai_compat
from llm.providers.base import tls_context


def test_new_endpoints_cost_no_second_load_of_the_ca_bundle(monkeypatch):
    loads: list[tuple] = []
    load = ssl.SSLContext.load_verify_locations

    def counted(self, *args, **kwargs):
        loads.append(args)
        return load(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    shared = tls_context()  # made at most once per process
    before = len(loads)
    for n in range(3):  # an endpoint and key of its own each: a client of its own each
        base = f"https://llm-{n}.example.invalid"
        gemini._client(f"key-{n}", base, 30.0)
        openai_compat._client(f"key-{n}", base + "/v1", 30.0)
        anthropic._client(f"key-{n}", base, 30.0)
    assert len(loads) == before, f"the CA bundle was loaded {len(loads) - before} more times"
    # httpx's defaults, as each SDK had them: certificates and host names checked.
    assert shared.verify_mode == ssl.CERT_REQUIRED and shared.check_hostname
    assert tls_context() is shared
