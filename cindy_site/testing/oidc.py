"""A local OpenID Connect provider for the Google sign-in tests (127.0.0.1 only).

It speaks the parts of OIDC that allauth's openid_connect provider uses: the discovery document,
the JWKS (an RSA key made here with `cryptography`), the authorization endpoint of the
authorization-code flow (it answers at once for `person`, as if they had chosen their account and
consented), and the token endpoint, which checks the code, the client's credentials, the redirect
URI and the PKCE verifier, and returns an ID token signed with RS256.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

import jwt
import requests
from cryptography.hazmat.primitives.asymmetric import rsa


def _b64(number: int) -> str:
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@dataclass
class Person:
    sub: str
    email: str
    name: str = ""
    email_verified: bool = True


@dataclass
class _Grant:
    client_id: str
    redirect_uri: str
    challenge: str
    person: Person


@dataclass
class OIDCStandIn:
    client_id: str = "cindy-test-client"
    secret: str = "cindy-test-secret"
    person: Person | None = None
    #: Overrides for the next ID token's claims (e.g. a wrong audience).
    claims_override: dict[str, Any] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = secrets.token_hex(4)
        self._grants: dict[str, _Grant] = {}
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> OIDCStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # --- documents ----------------------------------------------------------------------------

    def discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.url,
            "authorization_endpoint": f"{self.url}/authorize",
            "token_endpoint": f"{self.url}/token",
            "jwks_uri": f"{self.url}/jwks",
            "userinfo_endpoint": f"{self.url}/userinfo",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
        }

    def jwks(self) -> dict[str, Any]:
        numbers = self.key.public_key().public_numbers()
        return {
            "keys": [
                {
                    "kty": "RSA",
                    "use": "sig",
                    "alg": "RS256",
                    "kid": self.kid,
                    "n": _b64(numbers.n),
                    "e": _b64(numbers.e),
                }
            ]
        }

    def id_token(self, grant: _Grant) -> str:
        issued = int(time.time())
        claims = {
            "iss": self.url,
            "aud": grant.client_id,
            "sub": grant.person.sub,
            "email": grant.person.email,
            "email_verified": grant.person.email_verified,
            "name": grant.person.name,
            "iat": issued,
            "exp": issued + 300,
            "jti": secrets.token_hex(8),
            **self.claims_override,
        }
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": self.kid})

    # --- endpoints ----------------------------------------------------------------------------

    def authorize(self, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if query.get("client_id") != self.client_id or query.get("response_type") != "code":
            return 400, {}, b"unknown client or response_type"
        if self.person is None:
            return 400, {}, b"no person signs in at the stand-in"
        code = secrets.token_urlsafe(16)
        self._grants[code] = _Grant(
            client_id=query["client_id"],
            redirect_uri=query["redirect_uri"],
            challenge=query.get("code_challenge", ""),
            person=self.person,
        )
        target = f"{query['redirect_uri']}?{urlencode({'code': code, 'state': query.get('state', '')})}"
        return 302, {"Location": target}, b""

    def token(self, form: dict[str, str], authorization: str) -> tuple[int, dict[str, Any]]:
        client_id, secret = form.get("client_id", ""), form.get("client_secret", "")
        if authorization.startswith("Basic "):
            client_id, _, secret = base64.b64decode(authorization[6:]).decode().partition(":")
        grant = self._grants.pop(form.get("code", ""), None)
        if (client_id, secret) != (self.client_id, self.secret):
            return 401, {"error": "invalid_client"}
        if grant is None or form.get("grant_type") != "authorization_code":
            return 400, {"error": "invalid_grant"}
        if form.get("redirect_uri") != grant.redirect_uri:
            return 400, {"error": "invalid_grant", "error_description": "redirect_uri differs"}
        if grant.challenge:
            digest = hashlib.sha256(form.get("code_verifier", "").encode()).digest()
            if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != grant.challenge:
                return 400, {"error": "invalid_grant", "error_description": "PKCE verifier does not match"}
        return 200, {
            "access_token": secrets.token_urlsafe(16),
            "token_type": "Bearer",
            "expires_in": 300,
            "id_token": self.id_token(grant),
        }

    def _handler(self):
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                self._send(status, json.dumps(payload).encode(), {"Content-Type": "application/json"})

            def do_GET(self) -> None:
                parsed = urlparse(self.path)
                stand_in.requests.append(f"GET {parsed.path}")
                if parsed.path == "/.well-known/openid-configuration":
                    self._json(200, stand_in.discovery())
                elif parsed.path == "/jwks":
                    self._json(200, stand_in.jwks())
                elif parsed.path == "/authorize":
                    query = {k: v[0] for k, v in parse_qs(parsed.query).items()}
                    status, headers, body = stand_in.authorize(query)
                    self._send(status, body, headers)
                else:
                    self._send(404, b"not found", {})

            def do_POST(self) -> None:
                parsed = urlparse(self.path)
                stand_in.requests.append(f"POST {parsed.path}")
                length = int(self.headers.get("Content-Length") or 0)
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                if parsed.path == "/token":
                    status, payload = stand_in.token(form, self.headers.get("Authorization", ""))
                    self._json(status, payload)
                else:
                    self._send(404, b"not found", {})

        return Handler


@contextmanager
def google_signin_configured(settings: Any) -> Iterator[OIDCStandIn]:
    """A running stand-in, with Google sign-in configured against it through pytest-django's
    `settings` fixture and the site's URLs as they are when sign-in is on."""
    import cindy_site.urls  # noqa: F401 - loaded with sign-in off first: it reads the setting once, on import
    from cindy_site.settings import google_signin_provider

    with OIDCStandIn() as stand_in:
        settings.GOOGLE_SIGNIN_ENABLED = True
        settings.ROOT_URLCONF = "cindy_site.tests.signin_urlconf"
        settings.SOCIALACCOUNT_PROVIDERS = {
            "openid_connect": {
                "APPS": [
                    google_signin_provider(
                        client_id=stand_in.client_id, secret=stand_in.secret, server_url=stand_in.url
                    )
                ],
                "SCOPE": ["openid", "email", "profile"],
            }
        }
        yield stand_in


def sign_in_with_google(client: Any, provider: OIDCStandIn, person: Person, next_url: str = "") -> Any:
    """Press "Sign in with Google" with a Django test client, let the provider answer for `person`,
    and follow its redirect back; returns the site's answer to that redirect."""
    provider.person = person
    started = client.post(
        "/accounts/oidc/google/login/", {"process": "login", **({"next": next_url} if next_url else {})}
    )
    assert started.status_code == 302, started.content[:500]
    assert started["Location"].startswith(f"{provider.url}/authorize?")
    answer = requests.get(started["Location"], allow_redirects=False, timeout=5)
    assert answer.status_code == 302, answer.text
    back = urlparse(answer.headers["Location"])
    return client.get(f"{back.path}?{back.query}")
