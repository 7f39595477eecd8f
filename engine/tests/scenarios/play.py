"""Playing one scenario on a stage: each turn's action, the wait for its effects, the checks."""

from __future__ import annotations

import time

from engine.tests.scenarios.health import health
from engine.tests.scenarios.spec import Scenario, Turn
from engine.tests.scenarios.stage import Stage, wait
from engine.tests.scenarios.voice import render_voice, voice_problems

#: How soon after an operator's change a held turn must plan: well within the brake's own next check
#: (engine/brakes.py, BRAKE_RECHECK_SECONDS), so a raised cap visibly takes effect at once.
PROMPTLY_SECONDS = 30
#: What the prompt of a turn started by a trigger shows (llm/prompt/instructions.py).
TRIGGER_SECTIONS = {"xsend": "# Cross-channel Trigger", "event": "# Scheduled Event"}


def render(message: tuple[int, bool, str, list, list]) -> str:
    """An agent's message as a scenario's `sends` line: its text, a sticker as `(sticker NAME from SET)`,
    a voice note as `(voice 2.4 s)` (its decoded length), other media as `(KIND)`."""
    _id, _agent, text, media, _reactions = message
    pieces = []
    for part in media:
        kind = part.get("media_kind", "media")
        if kind == "sticker":
            pieces.append(f"(sticker {part.get('sticker_name')} from {part.get('sticker_set_name')})")
        elif kind == "voice":
            pieces.append(render_voice(part))
        else:
            pieces.append(f"({kind})")
    if text:
        pieces.append(text)
    return " ".join(pieces)


class Player:
    def __init__(self, stage: Stage, scenario: Scenario) -> None:
        self.stage = stage
        self.scenario = scenario
        self.seen: dict[str, int] = {}  # person -> id of the last agent message checked in their chat
        self.failures: list[str] = []
        self.stopped = False  # a turn went wrong and the scenario stopped there
        self.braked_calls: int | None = None  # the LLM calls of the scenario when a brake held a turn

    def play(self) -> None:
        stage, scenario = self.stage, self.scenario
        start = stage.log_offset()
        stage.script(scenario)
        try:
            for turn in scenario.turns:
                if not self.turn(turn):
                    break
        except Exception:
            stage.close_active(scenario)
            raise
        if self.stopped:
            stage.close_active(scenario)
        stage.clear_present(scenario.persona)
        if stage.stopped(scenario.persona):  # a shutdown: the operator starts the agent again
            stage.start_agent(scenario.persona)
        for turn in scenario.turns:
            if turn.photo:  # once more at the end: describing happens after the send, on a later turn
                self._check_curated(turn.photo, "at the end")
        report = health(
            stage.db, stage.conversation_ids(scenario), stage.log_since(start), expected=scenario.logs
        )
        self.failures += [f"health: {p}" for p in report.problems]
        self.failures += [
            f"unscripted LLM request in the chat of {s.chat} (answered [])"
            for s in stage.unscripted(scenario)
        ]
        assert not self.failures, f"{scenario.path.name}:\n- " + "\n- ".join(self.failures)

    def turn(self, turn: Turn) -> bool:
        """Play one turn and check it; False when something failed or retried (the rest would wait on
        work that will not come)."""
        stage, scenario = self.stage, self.scenario
        at = f"turn {turn.number}"
        if self.braked_calls is not None and stage.llm_calls(scenario) != self.braked_calls:
            self.failures.append(f"{at}: the LLM was called while a brake held the turn before")
        self.braked_calls = None
        if turn.answer_bots:
            stage.answer_bots(scenario, turn)
        graphs = stage.graphs(scenario, turn.person)
        started = time.time()
        if turn.operator:
            stage.operate(scenario, turn)
        if turn.trigger == "message":
            stage.say(scenario, turn, typing=turn.typing_seconds)
            if turn.typing_then:  # said once the agent holds its reply for the typing
                wait(
                    lambda: (
                        stage.typing_noted(scenario, turn.person)
                        and stage.graphs(scenario, turn.person) > graphs
                    )
                    or self._troubled(),
                    f"{scenario.name} {at}: the agent to hold its reply while {turn.person} types",
                    stage,
                )
                stage.say(scenario, turn, text=turn.typing_then)
        elif turn.trigger == "nudge":
            stage.nudge(scenario, turn)
        if not turn.answered:  # once Cindy stored the message, a turn it started would show
            wait(
                lambda: self._mirrored(turn),
                f"{scenario.name} {at}: the message in Cindy's mirror",
                stage,
            )
            if stage.graphs(scenario, turn.person) != graphs:
                self.failures.append(f"{at}: the message started a turn; it should start none")
        if turn.braked:
            return self._braked(turn, at)
        wait(
            lambda: self._consumed(turn) or self._troubled(),
            f"{scenario.name} {at}: the LLM requests of this turn",
            stage,
        )
        if turn.trigger == "operator" and time.time() - started > PROMPTLY_SECONDS:
            self.failures.append(
                f"{at}: the held turn planned {time.time() - started:.0f} s after the operator's change, "
                f"not promptly (within {PROMPTLY_SECONDS} s)"
            )
        wait(
            lambda: not stage.busy(scenario) or self._troubled(),
            f"{scenario.name} {at}: its graphs to finish",
            stage,
        )
        if self._troubled():
            self.stopped = True
            self.failures.append(f"{at}: a node failed or retried; the scenario stopped here")
        served = stage.requests_of(scenario, turn)
        if len(served) != len(turn.replies):
            self.failures.append(f"{at}: {len(served)} LLM request(s), the script has {len(turn.replies)}")
        first = served[0].text if served else ""
        if turn.typing_seconds and not turn.typing_then and served:
            typed_until = started + stage.typing_lasts(turn.typing_seconds)
            if served[0].at < typed_until:
                self.failures.append(
                    f"{at}: the agent planned its reply {typed_until - served[0].at:.1f} s before "
                    f"{turn.person} stopped typing"
                )
        section = TRIGGER_SECTIONS.get(turn.trigger)
        if section and section not in first:
            self.failures.append(f"{at}: the prompt lacks {section!r}: not a {turn.trigger} turn")
        for text in turn.prompt_has:
            if text not in first:
                self.failures.append(f"{at}: the prompt does not show {text!r}")
        for text in turn.prompt_lacks:
            if text in first:
                self.failures.append(f"{at}: the prompt still shows {text!r}")
        last = served[-1].text if len(served) > 1 else ""
        for text in turn.retrieved_has:
            if text not in last:
                self.failures.append(f"{at}: the prompt after the retrieve does not show {text!r}")
        self._check_effects(turn, at)
        return not self.stopped

    def _braked(self, turn: Turn, at: str) -> bool:
        """A message a spend brake holds: the turn waits, no LLM request is made, nothing is sent."""
        stage, scenario = self.stage, self.scenario
        wait(
            lambda: stage.held(scenario) or self._troubled() or stage.requests_of(scenario, turn),
            f"{scenario.name} {at}: a spend brake to hold the turn",
            stage,
        )
        self.braked_calls = stage.llm_calls(scenario)
        if not stage.held(scenario):
            self.stopped = True
            self.failures.append(f"{at}: no brake held the turn; the scenario stopped here")
        unscripted = [s for s in stage.unscripted(scenario) if s.chat == scenario.user(turn.person)]
        if unscripted:
            self.failures.append(f"{at}: {len(unscripted)} LLM request(s) while the brake held the turn")
        self._check_effects(turn, at)
        return not self.stopped

    def _check_curated(self, photo: str, at: str) -> None:
        """The library photo keeps its curated description, in the library and in the media catalog."""
        stage, scenario = self.stage, self.scenario
        unique_id, curated = stage.library[f"{scenario.persona}/{photo}"]
        if stage.library_description(scenario.persona, unique_id) != curated:
            self.failures.append(f"{at}: the library description of {photo} changed")
        catalog = stage.catalog_description(unique_id)
        if catalog is not None and catalog != curated:
            self.failures.append(
                f"{at}: the catalog describes {photo} as {catalog!r}, not its curated {curated!r}"
            )

    def _troubled(self) -> bool:
        ids = self.stage.conversation_ids(self.scenario)
        if not ids:
            return False
        rows = self.stage.db.query(
            "SELECT COUNT(*) FROM conversations_activityevent WHERE kind IN ('node_failed', 'node_retried', "
            f"'graph_deleted') AND conversation_id IN ({', '.join(map(str, ids))})"
        )
        return rows[0][0] > 0

    def _mirrored(self, turn: Turn) -> bool:
        """Every message the person wrote in their chat is in Cindy's mirror."""
        stage, scenario = self.stage, self.scenario
        theirs = [m for m in stage.messages(scenario, turn.person) if not m[1]]
        return bool(theirs) and len(stage.mirrored(scenario, turn.person)) >= len(theirs)

    def _consumed(self, turn: Turn) -> bool:
        return len(self.stage.requests_of(self.scenario, turn)) >= len(turn.replies)

    def _check_effects(self, turn: Turn, at: str) -> None:
        stage, scenario = self.stage, self.scenario
        messages = stage.messages(scenario, turn.person)
        since = self.seen.get(turn.person, 0)
        new = [m for m in messages if m[1] and m[0] > since]
        if new:
            self.seen[turn.person] = new[-1][0]
        for part in (part for m in new for part in m[3] if part.get("media_kind") == "voice"):
            self.failures.extend(f"{at}: {problem}" for problem in voice_problems(part))
        if turn.sends is not None and [render(m) for m in new] != list(turn.sends):
            self.failures.append(
                f"{at}: the agent sent {[render(m) for m in new]}, expected {list(turn.sends)}"
            )
        if turn.reaction:
            theirs = [m for m in messages if not m[1]]
            me = stage.agent_user_id(scenario.persona)
            reactions = theirs[-1][4] if theirs else []
            if not any(r.get("emoji") == turn.reaction and me in r.get("user_ids", []) for r in reactions):
                self.failures.append(f"{at}: no {turn.reaction} reaction of the agent's on the last message")
        if turn.photo:
            unique_id, curated = stage.library[f"{scenario.persona}/{turn.photo}"]
            sent = [part for m in new for part in m[3] if part.get("unique_id") == unique_id]
            if not sent:
                self.failures.append(f"{at}: library photo {turn.photo} ({unique_id}) was not sent here")
            self._check_curated(turn.photo, at)
        if turn.schedule:
            have = stage.schedule_activities(scenario.persona)
            missing = [a for a in turn.schedule if a not in have]
            if missing:
                self.failures.append(f"{at}: schedule lacks {missing} (has {have})")
        if turn.cleared:
            theirs = [m for m in messages if not m[1]]
            if theirs:
                self.failures.append(
                    f"{at}: the chat was not cleared: {len(theirs)} of their messages remain"
                )
        for text in turn.activity:
            lines = stage.activity_lines(scenario, text)
            if len(lines) != 1:
                self.failures.append(
                    f"{at}: {len(lines)} activity line(s) say {text!r}, expected one: {lines}"
                )
        if turn.stopped is not None and stage.stopped(scenario.persona) != turn.stopped:
            self.failures.append(f"{at}: {scenario.persona} is {'' if turn.stopped else 'not '}running")
        if turn.stored_has or turn.stored_lacks:
            stored = (stage.mirrored(scenario, turn.person) or [""])[-1]
            for text in turn.stored_has:
                if text not in stored:
                    self.failures.append(f"{at}: Cindy stored {stored!r}, which does not show {text!r}")
            for text in turn.stored_lacks:
                if text in stored:
                    self.failures.append(f"{at}: Cindy stored {stored!r}, which shows {text!r}")
        if turn.loop_guard is not None:
            if turn.loop_guard:  # the last message may still be on its way to the agent it would call out
                wait(
                    lambda: stage.events(scenario, turn.person, "loop_guard") > 0,
                    f"{scenario.name} {at}: a loop_guard event",
                    stage,
                    deadline=30,
                )
            guarded = stage.events(scenario, turn.person, "loop_guard") > 0
            if guarded != turn.loop_guard:
                self.failures.append(f"{at}: the chat has {'a' if guarded else 'no'} loop_guard event")
        if turn.blocked is not None:
            blocked = stage.user_id(scenario.user(turn.person)) in stage.blocked_ids(scenario.persona)
            if blocked != turn.blocked:
                self.failures.append(f"{at}: {turn.person} is {'' if blocked else 'not '}blocked")
