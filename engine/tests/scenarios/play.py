"""Playing one scenario on a stage: each turn's action, the wait for its effects, the checks."""

from __future__ import annotations

import io
import time

from engine.tests.scenarios import route_checks
from engine.tests.scenarios.health import health
from engine.tests.scenarios.spec import Scenario, Turn
from engine.tests.scenarios.stage import Stage, wait
from engine.tests.scenarios.voice import render_voice, voice_problems

#: How soon after an operator's change a held turn must plan: well within the brake's own next check
#: (engine/brakes.py, BRAKE_RECHECK_SECONDS), so a raised cap visibly takes effect at once.
PROMPTLY_SECONDS = 30
#: What the prompt of a turn started by a trigger shows (llm/prompt/instructions.py).
TRIGGER_SECTIONS = {
    "xsend": "# Cross-channel Trigger",
    "event": "# Scheduled Event",
    "consolidate": "# Consolidation",
}


def opens_as_image(data: bytes | None) -> bool:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data or b"")) as image:
            image.verify()
    except (UnidentifiedImageError, OSError, SyntaxError):
        return False
    return True


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


def play_on(stage: Stage, scenario: Scenario, scenarios: list[Scenario]) -> None:
    """Play `scenario` on `stage`; first the scenario it builds on (`after`), when this stage has not
    played it (the scenario run alone, or in another order). A scenario played already, as another's
    past, is not played twice: its assertions held then."""
    if scenario.name in stage.played:
        return
    if scenario.after:
        prior = next(s for s in scenarios if s.name == scenario.after)
        play_on(stage, prior, scenarios)
    Player(stage, scenario).play()
    stage.played.add(scenario.name)


class Player:
    def __init__(self, stage: Stage, scenario: Scenario) -> None:
        self.stage = stage
        self.scenario = scenario
        self.seen: dict[str, int] = {}  # person (or group) -> id of the last agent message checked there
        self.failures: list[str] = []
        self.stopped = False  # a turn went wrong and the scenario stopped there
        self.braked_calls: int | None = None  # the LLM calls of the scenario when a brake held a turn
        self.delays_seen = 0  # the person's chat's typed sends before the current turn

    def play(self) -> None:
        stage, scenario = self.stage, self.scenario
        start = stage.log_offset()
        unheard = stage.unscripted_transcriptions()
        stage.script(scenario)
        if scenario.backlog is not None:  # seeded before the stage started: not this run's sending
            self._skip_past(scenario.people[0])
        if scenario.llm:  # the operator puts the persona on this LLM first (its `# LLM`)
            stage.set_llm(scenario.persona, scenario.llm)
        try:
            for turn in scenario.turns:
                if not self.turn(turn):
                    break
        except Exception:
            stage.close_active(scenario)
            raise
        finally:
            if scenario.llm:  # and back on the shipped one, for the next scenarios
                stage.set_llm(scenario.persona, stage.shipped_llm[scenario.persona])
        if self.stopped:
            stage.close_active(scenario)
        stage.clear_present(scenario.persona)
        if stage.stopped(scenario.persona):  # a shutdown: the operator starts the agent again
            stage.start_agent(scenario.persona)
        self.failures += route_checks.leftover(stage.llm, scenario)
        for turn in scenario.turns:
            if turn.photo:  # once more at the end: describing happens after the send, on a later turn
                self._check_curated(turn.photo, "at the end")
        report = health(
            stage.db,
            stage.conversation_ids(scenario),
            stage.log_since(start),
            expected=scenario.logs,
            refusals=[text for turn in scenario.turns for text in turn.activity],
        )
        self.failures += [f"health: {p}" for p in report.problems]
        self.failures += [
            f"unscripted LLM request in the chat of {s.chat} (answered [])"
            for s in stage.unscripted(scenario)
        ]
        extra = stage.unscripted_transcriptions() - unheard
        if extra:
            self.failures.append(f"{extra} transcription request(s) the scenario did not script")
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
        if turn.pause:  # real time passes for the real processes (e.g. the online window runs out)
            time.sleep(turn.pause)
        if turn.online_before is not None:
            self._check_online(turn, turn.online_before, f"{at}, before its message")
        graphs = stage.graphs(scenario, turn.person)
        pictures = stage.pictures_made(scenario)
        caches = stage.explicit_caches(scenario)
        self.delays_seen = len(stage.start_delays(scenario, turn.person))
        mark = route_checks.prepare(stage, scenario, turn)
        read_before = stage.read_mark(scenario, turn.person) if turn.reads is not None else None
        started = time.time()
        if turn.operator:
            stage.operate(scenario, turn)
        if turn.parameters:
            stage.set_parameters(turn)
        if turn.rights is not None:
            stage.set_rights(scenario, turn.rights)
        if turn.mute:
            stage.mute(scenario, turn)
        if turn.save_media:
            stage.save_media(scenario, turn)
        if turn.history:
            stage.import_history(scenario, turn)
            self._skip_past(turn.person)  # on the stand-in the past is the chat's history there too
        if turn.trigger == "message" and turn.voice:
            stage.say_voice(scenario, turn)
        elif turn.unseen:
            stage.say_unseen(scenario, turn)
        elif turn.trigger == "message":
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
        elif turn.trigger == "mark_unread":
            stage.mark_unread(scenario, turn)
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
        if turn.voice:  # a note is transcribed once, on its first turn; the same note again is not
            heard = len(stage.transcriptions_of(turn))
            expected = 1 if turn.voice_transcript else 0
            if heard != expected:
                self.failures.append(
                    f"{at}: voice note {turn.voice!r} was transcribed {heard} time(s) here, expected {expected}"
                )
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
        for text in turn.retrieved_lacks:
            if text in last:
                self.failures.append(f"{at}: the prompt after the retrieve shows {text!r}")
        made = stage.pictures_made(scenario) - pictures
        if turn.pictures is not None and made != turn.pictures:
            self.failures.append(f"{at}: {made} picture(s) made, expected {turn.pictures}")
        if turn.explicit_cache:
            self._check_explicit_cache(turn, at, caches, stage.explicit_caches(scenario))
        self._check_effects(turn, at)
        if turn.reads is not None and (stage.read_mark(scenario, turn.person) != read_before) != turn.reads:
            self.failures.append(
                f"{at}: the agent's read mark of the chat {'stayed at' if turn.reads else 'moved from'} "
                f"#{read_before}, expected it {'to move' if turn.reads else 'to stay'}"
            )
        self.failures += route_checks.check(stage, scenario, turn, mark)
        if turn.describe:
            self._check_describes(turn, at, stage.describes(started, time.time()))
        if turn.unseen and not self.stopped:
            self._late_update(turn, at)
        return not self.stopped

    def _check_explicit_cache(
        self, turn: Turn, at: str, before: tuple[int, int], after: tuple[int, int]
    ) -> None:
        """`explicit_cache`: whether the turn's planning call made a Gemini explicit cache, used one
        made before, or went without."""
        made, through = after[0] - before[0], after[1] - before[1]
        expected = {"made": (1, 1), "used": (0, 1), "none": (0, 0)}[turn.explicit_cache]
        if (made, through) != expected:
            self.failures.append(
                f"{at}: {made} explicit cache(s) made or extended and {through} call(s) sent through one; "
                f"expected {expected[0]} and {expected[1]} ({turn.explicit_cache})"
            )

    def _check_describes(self, turn: Turn, at: str, described: list) -> None:
        """`describe`: "images": the turn's media was described from images only (an animated sticker
        from its frames, never the Lottie file); "none": no description was asked for at all."""
        if turn.describe == "none" and described:
            self.failures.append(f"{at}: {len(described)} media description request(s); expected none")
        if turn.describe == "images":
            if not described:
                self.failures.append(f"{at}: no media description request; expected one with images")
            for served in described:
                if not served.inline or any(not mime.startswith("image/") for mime in served.inline):
                    self.failures.append(
                        f"{at}: a media description request carried {list(served.inline)}, not only images"
                    )

    def _late_update(self, turn: Turn, at: str) -> None:
        """The lost update of an unseen message arrives after all (with an edit of the message, which
        shows when Cindy has read it): it must start no second turn."""
        stage, scenario = self.stage, self.scenario
        graphs = stage.graphs(scenario, turn.person)
        edited = stage.deliver_late(scenario, turn)
        wait(
            lambda: edited in stage.mirrored(scenario, turn.person) or self._troubled(),
            f"{scenario.name} {at}: the late update and the edit in Cindy's mirror",
            stage,
        )
        if stage.graphs(scenario, turn.person) != graphs:
            self.failures.append(f"{at}: the late update of the unseen message started another turn")

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

    def _check_picture(self, description: str, new: list, at: str) -> None:
        """A picture the agent made: in its library with `description` curated (in the catalog too),
        and sent among the new messages: a photo with the picture's bytes that opens as an image."""
        stage, scenario = self.stage, self.scenario
        found = stage.library_picture(scenario.persona, description)
        if found is None:
            self.failures.append(f"{at}: no picture described {description!r} in the agent's library")
            return
        unique_id, file = found
        catalog = stage.catalog_description(unique_id)
        if catalog != description:
            self.failures.append(f"{at}: the catalog describes picture {unique_id} as {catalog!r}")
        stored = stage.media_bytes(file)
        photos = [part for m in new for part in m[3] if part.get("media_kind") == "photo"]
        sent = [stage.photo_bytes(part) for part in photos]
        if stored is None or stored not in sent:
            self.failures.append(f"{at}: picture {unique_id} ({file}) was not sent here")
        for data in sent:
            if not opens_as_image(data):
                self.failures.append(f"{at}: a photo the agent sent does not open as an image")

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

    def _in_topic(self, turn: Turn, at: str, new: list) -> list:
        """The agent's new messages in the turn's forum topic; one anywhere else (another topic, or
        General for a turn in a topic) is a failure: a reply goes to the topic it answers."""
        topics = self.stage.message_topics(self.scenario)
        wrong = [(m[0], topics.get(m[0], "")) for m in new if topics.get(m[0], "") != turn.topic]
        for message_id, topic in wrong:
            self.failures.append(
                f"{at}: the agent wrote #{message_id} in {repr(topic) if topic else 'General'}, not in "
                f"{repr(turn.topic) if turn.topic else 'General'}"
            )
        return [m for m in new if topics.get(m[0], "") == turn.topic]

    def _skip_past(self, person: str) -> None:
        """The agent's messages in the person's DM so far are its past (a backlog, an imported export),
        not new lines of a turn: `sends` counts from after them."""
        mine = [m[0] for m in self.stage.messages(self.scenario, person) if m[1]]
        self.seen[person] = max([self.seen.get(person, 0), *mine])

    def _check_effects(self, turn: Turn, at: str) -> None:
        stage, scenario = self.stage, self.scenario
        messages = stage.messages(scenario, turn.person)
        chat = scenario.group_title or turn.person  # in a group, everybody's turns share the one chat
        since = self.seen.get(chat, 0)
        new = [m for m in messages if m[1] and m[0] > since]
        if new:
            self.seen[chat] = new[-1][0]
        if scenario.forum:
            new = self._in_topic(turn, at, new)
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
        if turn.picture:
            self._check_picture(turn.picture, new, at)
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
        self._check_presence(turn, at)
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

    def _check_presence(self, turn: Turn, at: str) -> None:
        """The start-typing delay of the turn's first send, the agent's contacts, its online status."""
        stage, scenario = self.stage, self.scenario
        if turn.start_delay is not None:
            delays = stage.start_delays(scenario, turn.person)[self.delays_seen :]
            if not delays:
                self.failures.append(f"{at}: no send of this turn was typed")
            elif (delays[0] > 0) != turn.start_delay:
                self.failures.append(
                    f"{at}: the first send was typed with a start-typing delay of {delays[0]:g} s; expected "
                    + ("one" if turn.start_delay else "none (already online)")
                )
        if turn.contacts is not None:
            ids = set(stage.contact_ids(scenario.persona))
            have = [
                p
                for p in scenario.people
                if stage._known(scenario, p) and stage.user_id(scenario.user(p)) in ids
            ]
            if sorted(have) != sorted(turn.contacts):
                self.failures.append(
                    f"{at}: the agent's contacts hold {have}, expected {list(turn.contacts)}"
                )
        if turn.online is not None:
            self._check_online(turn, turn.online, at)

    def _check_online(self, turn: Turn, online: bool, at: str) -> None:
        """Wait until the persona's account shows `online` (the gateway checks every few seconds)."""
        stage, scenario = self.stage, self.scenario
        wait(
            lambda: stage.shown_online(scenario.persona) == online,
            f"{scenario.name} {at}: {scenario.persona} shown {'online' if online else 'offline'}",
            stage,
            deadline=30,
        )
