"""Stored auth keys are Fernet tokens; the gateway makes and reads them without `cryptography`
(agents/session_cipher.py): tokens must pass both ways between the two."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from agents.session_cipher import InvalidToken, SessionCipher, hkdf_sha256
from agents.telethon_session import SessionKeyError, decrypt_auth_key, encrypt_auth_key

ROOT = Path(__file__).resolve().parents[2]
SECRET = b"test-session-key-not-for-production"


def _key() -> bytes:
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"cindy-telegram-session", info=b"auth-key")
    return base64.urlsafe_b64encode(derived.derive(SECRET))


def test_the_key_is_derived_as_cryptography_derives_it():
    ours = hkdf_sha256(SECRET, salt=b"cindy-telegram-session", info=b"auth-key")
    assert base64.urlsafe_b64encode(ours) == _key()


@pytest.mark.parametrize("size", [0, 1, 15, 16, 17, 256])
def test_tokens_pass_both_ways(size):
    data = os.urandom(size)
    ours, theirs = SessionCipher(_key()), Fernet(_key())
    assert theirs.decrypt(ours.encrypt(data)) == data
    assert ours.decrypt(theirs.encrypt(data)) == data


def test_an_altered_token_or_another_key_is_refused():
    token = bytearray(base64.urlsafe_b64decode(SessionCipher(_key()).encrypt(os.urandom(256))))
    token[40] ^= 1
    with pytest.raises(InvalidToken):
        SessionCipher(_key()).decrypt(base64.urlsafe_b64encode(bytes(token)))
    with pytest.raises(InvalidToken):
        SessionCipher(Fernet.generate_key()).decrypt(Fernet(_key()).encrypt(b"auth key"))
    with pytest.raises(InvalidToken):
        SessionCipher(_key()).decrypt(b"not a token at all")


def test_a_key_stored_by_the_earlier_gateway_still_reads(telegram_settings):
    raw = bytes(range(256))
    stored = Fernet(_key()).encrypt(raw)  # what the gateway wrote with cryptography's Fernet
    assert decrypt_auth_key(stored, agent_name="Heidi") == raw
    assert Fernet(_key()).decrypt(encrypt_auth_key(raw)) == raw
    telegram_settings.CINDY_SESSION_KEY = "another key"
    with pytest.raises(
        SessionKeyError, match="agents/Heidi: the stored Telegram session cannot be decrypted"
    ):
        decrypt_auth_key(stored, agent_name="Heidi")


def test_the_gateways_telegram_modules_do_not_load_cryptography():
    code = (
        "import os, sys, django; sys.argv = ['manage.py', 'runagents']; "
        "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'cindy_site.settings'); django.setup(); "
        "import agents.telethon_session, telegram.transport, engine.gateway; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'cryptography'))"
    )
    env = {**os.environ, "SECRET_KEY": "x", "CINDY_ENV_FILE": os.devnull}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
