"""The original's MySQL schema, built in a throwaway MariaDB database for the import tests.

Every table and column as cw-telegram-agent's `src/db` creates them (`schema.py`, newest form, with its
indexes and foreign keys, and `agent_profile_photos.py`), written out here; tests that stand for an
older installation alter it (e.g. the `metadata` JSON column `memories` once had).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

#: One database per test process: two xdist processes running import tests at once must not drop
#: each other's source (they did, when a run handed the two import files out at the same time).
SOURCE_DB = os.environ.get("CINDY_CW_SOURCE_DB", "cw_source_cwstate") + (
    f"_{os.environ['PYTEST_XDIST_WORKER']}" if os.environ.get("PYTEST_XDIST_WORKER") else ""
)
HOST, PORT = "127.0.0.1", 3306

TAIL = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci"
SCHEMA = [
    f"""CREATE TABLE memories (id VARCHAR(255) NOT NULL, agent_telegram_id BIGINT NOT NULL,
        content TEXT NOT NULL, created DATETIME, creation_channel VARCHAR(255), creation_channel_id BIGINT,
        creation_channel_username VARCHAR(255), PRIMARY KEY (id, agent_telegram_id),
        INDEX idx_agent (agent_telegram_id), INDEX idx_created (created)) {TAIL}""",
    f"""CREATE TABLE intentions (id VARCHAR(255) NOT NULL, agent_telegram_id BIGINT NOT NULL,
        content TEXT NOT NULL, created DATETIME, PRIMARY KEY (id, agent_telegram_id),
        INDEX idx_agent (agent_telegram_id), INDEX idx_created (created)) {TAIL}""",
    f"""CREATE TABLE plans (id VARCHAR(255) NOT NULL, agent_telegram_id BIGINT NOT NULL, channel_id BIGINT NOT NULL,
        content TEXT NOT NULL, created DATETIME, PRIMARY KEY (id, agent_telegram_id, channel_id),
        INDEX idx_agent_channel (agent_telegram_id, channel_id), INDEX idx_created (created)) {TAIL}""",
    f"""CREATE TABLE summaries (id VARCHAR(255) NOT NULL, agent_telegram_id BIGINT NOT NULL,
        channel_id BIGINT NOT NULL, content TEXT NOT NULL, min_message_id BIGINT, max_message_id BIGINT,
        first_message_date DATETIME, last_message_date DATETIME, created DATETIME,
        PRIMARY KEY (id, agent_telegram_id, channel_id), INDEX idx_agent_channel (agent_telegram_id, channel_id),
        INDEX idx_message_range (agent_telegram_id, channel_id, min_message_id, max_message_id),
        INDEX idx_created (created)) {TAIL}""",
    f"""CREATE TABLE schedules (agent_telegram_id BIGINT PRIMARY KEY, timezone VARCHAR(255),
        last_extended DATETIME, activities JSON NOT NULL,
        updated_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
        INDEX idx_last_extended (last_extended)) {TAIL}""",
    f"""CREATE TABLE translations (message_hash BINARY(16) PRIMARY KEY, translation TEXT,
        last_used DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
        INDEX idx_last_used (last_used)) {TAIL}""",
    f"""CREATE TABLE media_metadata (unique_id VARCHAR(255) PRIMARY KEY, kind VARCHAR(50), description TEXT,
        status VARCHAR(50), duration INTEGER, mime_type VARCHAR(255), media_file VARCHAR(255),
        sticker_set_name VARCHAR(255), sticker_name VARCHAR(255), is_emoji_set BOOLEAN,
        sticker_set_title VARCHAR(255), description_retry_count INT NOT NULL DEFAULT 0, last_used_at DATETIME NULL,
        updated_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
        INDEX idx_kind (kind), INDEX idx_sticker_set (sticker_set_name), INDEX idx_last_used_at (last_used_at))
        {TAIL}""",
    f"""CREATE TABLE agent_activity (id BIGINT AUTO_INCREMENT PRIMARY KEY, agent_telegram_id BIGINT NOT NULL,
        channel_telegram_id BIGINT NOT NULL, last_send_time DATETIME NOT NULL,
        UNIQUE KEY uk_agent_channel (agent_telegram_id, channel_telegram_id),
        INDEX idx_last_send_time (last_send_time DESC)) {TAIL}""",
    f"""CREATE TABLE notes (id VARCHAR(255) NOT NULL, agent_telegram_id BIGINT NOT NULL, channel_id BIGINT NOT NULL,
        content TEXT NOT NULL, created DATETIME, PRIMARY KEY (id, agent_telegram_id, channel_id),
        INDEX idx_agent_channel (agent_telegram_id, channel_id), INDEX idx_created (created)) {TAIL}""",
    f"""CREATE TABLE conversation_llm_overrides (agent_telegram_id BIGINT NOT NULL, channel_id BIGINT NOT NULL,
        llm_model VARCHAR(255) NOT NULL, PRIMARY KEY (agent_telegram_id, channel_id),
        INDEX idx_agent_channel (agent_telegram_id, channel_id)) {TAIL}""",
    f"""CREATE TABLE conversation_gagged (agent_telegram_id BIGINT NOT NULL, channel_id BIGINT NOT NULL,
        is_gagged BOOLEAN NOT NULL, PRIMARY KEY (agent_telegram_id, channel_id),
        INDEX idx_agent_channel (agent_telegram_id, channel_id)) {TAIL}""",
    f"""CREATE TABLE available_llms (id INT AUTO_INCREMENT PRIMARY KEY, model_id VARCHAR(255) NOT NULL UNIQUE,
        name VARCHAR(255) NOT NULL, description TEXT, prompt_price DECIMAL(10, 6) NOT NULL DEFAULT 0.0,
        completion_price DECIMAL(10, 6) NOT NULL DEFAULT 0.0, display_order INT NOT NULL DEFAULT 0,
        provider VARCHAR(50) NOT NULL, created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
        updated_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
        INDEX idx_display_order (display_order), INDEX idx_provider (provider)) {TAIL}""",
    f"""CREATE TABLE task_execution_log (id BIGINT AUTO_INCREMENT PRIMARY KEY, timestamp DATETIME NOT NULL,
        agent_telegram_id BIGINT NOT NULL, channel_telegram_id BIGINT NOT NULL, action_kind VARCHAR(50) NOT NULL,
        task_identifier VARCHAR(100), action_details TEXT, failure_message TEXT,
        INDEX idx_agent_channel_time (agent_telegram_id, channel_telegram_id, timestamp DESC),
        INDEX idx_timestamp (timestamp)) {TAIL}""",
    f"""CREATE TABLE events (id VARCHAR(255) NOT NULL, agent_telegram_id BIGINT NOT NULL, channel_id BIGINT NOT NULL,
        time_utc DATETIME NOT NULL, intent TEXT NOT NULL, interval_value VARCHAR(63) NULL, occurrences INT NULL,
        PRIMARY KEY (id, agent_telegram_id, channel_id), INDEX idx_agent_channel (agent_telegram_id, channel_id),
        INDEX idx_time_utc (time_utc)) {TAIL}""",
    f"""CREATE TABLE administrators (email VARCHAR(255) NOT NULL PRIMARY KEY, name VARCHAR(255), avatar TEXT,
        last_login_attempt DATETIME NULL, INDEX idx_last_login_attempt (last_login_attempt)) {TAIL}""",
    f"""CREATE TABLE admin_role_names (role_name VARCHAR(63) NOT NULL PRIMARY KEY, description VARCHAR(255) NULL)
        {TAIL}""",
    f"""CREATE TABLE administrator_roles (email VARCHAR(255) NOT NULL, role_name VARCHAR(63) NOT NULL,
        PRIMARY KEY (email, role_name), INDEX idx_email (email),
        FOREIGN KEY (email) REFERENCES administrators(email) ON DELETE CASCADE,
        FOREIGN KEY (role_name) REFERENCES admin_role_names(role_name) ON DELETE CASCADE) {TAIL}""",
    f"""CREATE TABLE administrator_resource_grants (email VARCHAR(255) NOT NULL, resource_type VARCHAR(63) NOT NULL,
        resource_id VARCHAR(255) NOT NULL, PRIMARY KEY (email, resource_type, resource_id),
        INDEX idx_email_resource_type (email, resource_type), INDEX idx_resource_type_id (resource_type, resource_id),
        FOREIGN KEY (email) REFERENCES administrators(email) ON DELETE CASCADE) {TAIL}""",
    # Created by the original's profile-photo module on first use, with the server's default table options.
    """CREATE TABLE agent_profile_photos (agent_telegram_id BIGINT NOT NULL,
        profile_photo_unique_id VARCHAR(255) NOT NULL, source_media_unique_id VARCHAR(255) NOT NULL,
        created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, PRIMARY KEY (agent_telegram_id, profile_photo_unique_id),
        INDEX idx_source (agent_telegram_id, source_media_unique_id))""",
    # The original seeds its one built-in role.
    "INSERT INTO admin_role_names (role_name, description) VALUES ('superuser', 'Full access to admin console')",
]

#: The tables above, for "every table is named in the report".
SCHEMA_TABLES = (
    "memories", "intentions", "plans", "summaries", "schedules", "translations", "media_metadata",
    "agent_activity", "notes", "conversation_llm_overrides", "conversation_gagged", "available_llms",
    "task_execution_log", "events", "administrators", "admin_role_names", "administrator_roles",
    "administrator_resource_grants", "agent_profile_photos",
)  # fmt: skip


class Source:
    """A cursor on the throwaway source database, and its URL for `--mysql`."""

    def __init__(self, conn) -> None:
        self.conn = conn
        self.url = f"mysql://root@{HOST}:{PORT}/{SOURCE_DB}"

    def insert(self, table: str, **values) -> None:
        columns = ", ".join(f"`{c}`" for c in values)
        marks = ", ".join(["%s"] * len(values))
        self.conn.cursor().execute(
            f"INSERT INTO `{table}` ({columns}) VALUES ({marks})", list(values.values())
        )
        self.conn.commit()

    def execute(self, sql: str, *args) -> None:
        self.conn.cursor().execute(sql, args)
        self.conn.commit()


@pytest.fixture
def cw_source() -> Iterator[Source]:
    """A fresh database with the original's empty schema on the local MariaDB (the import's source)."""
    MySQLdb = pytest.importorskip("MySQLdb")
    try:
        conn = MySQLdb.connect(host=HOST, port=PORT, user="root", charset="utf8mb4")
    except MySQLdb.OperationalError as exc:
        pytest.skip(f"no MariaDB answers on {HOST}:{PORT} to hold the original's database: {exc}")
    cursor = conn.cursor()
    cursor.execute(f"DROP DATABASE IF EXISTS `{SOURCE_DB}`")
    cursor.execute(f"CREATE DATABASE `{SOURCE_DB}` CHARACTER SET utf8mb4")
    cursor.execute(f"USE `{SOURCE_DB}`")
    # Old installations hold zero dates; allow writing them as the original's MySQL did.
    cursor.execute("SET SESSION sql_mode = ''")
    cursor.execute("SET time_zone = '+00:00'")
    for statement in SCHEMA:
        cursor.execute(statement)
    try:
        yield Source(conn)
    finally:
        conn.cursor().execute(f"DROP DATABASE IF EXISTS `{SOURCE_DB}`")
        conn.close()
