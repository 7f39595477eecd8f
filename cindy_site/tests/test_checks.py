from __future__ import annotations

from agents.checks import check_telegram_settings


def ids(messages) -> list[str]:
    return [m.id for m in messages]


def test_telegram_api_id_without_hash_is_an_error(settings):
    settings.TELEGRAM_API_ID, settings.TELEGRAM_API_HASH = "12345", ""
    messages = check_telegram_settings(None)
    assert ids(messages) == ["cindy.E004"]
    assert "TELEGRAM_API_HASH" in messages[0].msg


def test_telegram_hash_without_id_is_an_error(settings):
    settings.TELEGRAM_API_ID, settings.TELEGRAM_API_HASH = "", "abc"
    assert ids(check_telegram_settings(None)) == ["cindy.E004"]


def test_a_non_numeric_api_id_is_an_error(settings):
    settings.TELEGRAM_API_ID, settings.TELEGRAM_API_HASH = "my-app", "abc"
    assert "cindy.E005" in ids(check_telegram_settings(None))


def test_telegram_credentials_without_a_session_key_warn(settings):
    settings.TELEGRAM_API_ID, settings.TELEGRAM_API_HASH = "12345", "abc"
    settings.CINDY_SESSION_KEY = ""
    assert ids(check_telegram_settings(None)) == ["cindy.W003"]


def test_complete_or_absent_telegram_settings_pass(settings):
    settings.TELEGRAM_API_ID, settings.TELEGRAM_API_HASH = "", ""
    assert check_telegram_settings(None) == []
    settings.TELEGRAM_API_ID, settings.TELEGRAM_API_HASH = "12345", "abc"
    settings.CINDY_SESSION_KEY = "k"
    assert check_telegram_settings(None) == []


def test_a_telegram_server_without_a_port_or_a_readable_key_is_an_error(settings, tmp_path):
    settings.TELEGRAM_API_ID, settings.TELEGRAM_API_HASH = "", ""
    settings.CINDY_TELEGRAM_SERVER, settings.CINDY_TELEGRAM_SERVER_KEY = "127.0.0.1", ""
    [bad_address] = check_telegram_settings(None)
    assert bad_address.id == "cindy.E010" and "host:port" in bad_address.msg
    settings.CINDY_TELEGRAM_SERVER = "127.0.0.1:8443"
    settings.CINDY_TELEGRAM_SERVER_KEY = str(tmp_path / "missing.pem")
    [no_key] = check_telegram_settings(None)
    assert "missing.pem" in no_key.msg and "telegram_standin" in no_key.msg
    (tmp_path / "missing.pem").write_text("-----BEGIN RSA PUBLIC KEY-----")
    assert check_telegram_settings(None) == []
