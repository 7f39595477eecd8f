"""Which Cindy agent an original `agent_telegram_id` belongs to, and by which rule.

Rules, in order:
1. **telegram id**: the agent's Telegram user id (recorded at login) or its persona's "Agent Telegram ID".
2. **phone**: the original's session file for the agent (found by config name) holds a user with this id
   whose phone is the agent's phone: that user is the account itself.
Session files themselves are matched by **config name**: `<state dir>/<persona file stem>/telegram.session`.
An id no rule matches is reported, never guessed.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from agents.models import Agent
from cwimport.session_file import SessionFile, only_digits, read_session_file, session_path


@dataclasses.dataclass
class Match:
    agent: Agent
    rule: str


@dataclasses.dataclass
class AgentMatcher:
    agents: list[Agent]  # the agents to import (all, or those named with --agent)
    state_dir: Path | None
    known: list[Agent] = dataclasses.field(default_factory=list)  # every agent, for matching
    sessions: dict[int, SessionFile] = dataclasses.field(default_factory=dict)  # agent pk -> file
    session_errors: dict[int, str] = dataclasses.field(default_factory=dict)
    _cache: dict[int, Match | None] = dataclasses.field(default_factory=dict)

    @classmethod
    def build(cls, *, names: list[str], state_dir: Path | None) -> AgentMatcher:
        known = agents = list(Agent.objects.order_by("name"))
        if names:
            wanted = set(names)
            unknown = wanted - {a.name for a in agents} - {a.config_name for a in agents}
            if unknown:
                raise ValueError(
                    f"--agent {', '.join(sorted(unknown))}: no such agent in Cindy: run importagents first, "
                    f"or give a name from the admin's agent list"
                )
            agents = [a for a in agents if a.name in wanted or a.config_name in wanted]
        matcher = cls(agents=agents, state_dir=state_dir, known=known)
        matcher._read_sessions()
        return matcher

    def config_name(self, agent: Agent) -> str:
        return agent.config_name or agent.name

    def session_path(self, agent: Agent) -> Path | None:
        return session_path(self.state_dir, self.config_name(agent)) if self.state_dir else None

    def is_selected(self, agent: Agent) -> bool:
        return any(a.pk == agent.pk for a in self.agents)

    def _read_sessions(self) -> None:
        for agent in self.known:
            path = self.session_path(agent)
            if path is None or not path.exists():
                continue
            try:
                self.sessions[agent.pk] = read_session_file(path)
            except (ValueError, OSError) as exc:
                self.session_errors[agent.pk] = str(exc)
            except Exception as exc:  # sqlite3.DatabaseError: not an SQLite file
                self.session_errors[agent.pk] = f"{path}: cannot be read as a Telethon session: {exc}"

    def match(self, telegram_id: int) -> Match | None:
        if telegram_id not in self._cache:
            self._cache[telegram_id] = self._match(telegram_id)
        return self._cache[telegram_id]

    def _match(self, telegram_id: int) -> Match | None:
        for agent in self.known:
            if telegram_id in (agent.telegram_user_id, agent.telegram_id):
                return Match(agent, "telegram id")
        for agent in self.known:
            session = self.sessions.get(agent.pk)
            digits = only_digits(agent.phone or "")
            if session and digits and session.entity_with_phone(digits) == telegram_id:
                return Match(agent, f"phone (in {self.config_name(agent)}/telegram.session)")
        return None

    def own_id(self, agent: Agent) -> int | None:
        """The account's Telegram user id, as known to Cindy or found by phone in its session file."""
        if agent.telegram_user_id:
            return agent.telegram_user_id
        session = self.sessions.get(agent.pk)
        digits = only_digits(agent.phone or "")
        found = session.entity_with_phone(digits) if session and digits else None
        return found or agent.telegram_id
