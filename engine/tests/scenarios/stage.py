"""The running world the scenarios play on: one database, one `runagents` with its task workers, the
sample personas imported, and the LLM stand-in answering each chat from the scenarios' scripts.

One stage serves every scenario of a test run (per database): the scenarios' people have names of
their own (`Ada orla_memory`), so their chats never meet, and the stand-in tells the chats apart by
the id the prompt's "Channel Details" shows (the person's user id). Waiting is bounded polling of the database.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
import threading
import time
import zlib
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings

from cindy_site.testing.fake_llm import FakeLLMServer, FakeReply, RecordedRequest
from cindy_site.testing.mtproto.media import image_bytes
from engine.tests.processes import MANAGE, ChildDatabase, child_settings, manage, start_gateway
from engine.tests.scenarios.routes import markdown_reply
from engine.tests.scenarios.spec import ANIMATED_SET, HARNESS_STICKER_SETS, Scenario, Turn
from engine.tests.scenarios.voice import voice_part
from sandbox.services.chats import PERSON_USER_ID_BASE

SAMPLES = Path(settings.BASE_DIR) / "samples"
CONFIGDIR = Path(settings.BASE_DIR) / "configdir"
#: Seconds a turn may take, from the person's message to the last of its effects.
TURN_DEADLINE = 90
#: What the stand-in answers a request that is not a chat's turn (describing media).
DESCRIPTION = "A small picture."
#: The usage the stand-in reports for a voice note's transcription, as Gemini counts audio: 32 tokens a
#: second of audio, beside the instructions' text tokens and the transcript it writes.
AUDIO_TOKENS_PER_SECOND = 32
TRANSCRIPTION_TEXT_TOKENS = 60
TRANSCRIPTION_OUTPUT_TOKENS = 12
#: The output tokens of a picture the stand-in makes (Gemini's count for a 1024 px image).
IMAGE_TOKENS = 1290
#: The self-hosted endpoint the stage names in CINDY_LLM_ENDPOINTS (`ollama:MODEL` routes there) and
#: the stand-in's path that answers as it: chat completions under a prefix of its own, apart from OpenAI's.
ENDPOINT = "ollama"
ENDPOINT_PATH = "/ollama/v1"
_CHANNEL_ID = re.compile(r"# Channel Details\n\n(?:- .*\n)*?- ID: (?P<id>-?\d+)")

#: Run in a child once the database is a copy of the template: import the samples as shipped, make
#: typing quick, upload the library files, and print what each persona's prompts teach, computed by
#: the product's own code.
_SETUP = """
import json
from pathlib import Path
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from agents.models import Agent
from llm.prompt.sections import included_prompts
from llm.task_schema import taught_kinds
from media_catalog.services.library import library_item_upload

Agent.objects.all().delete()
call_command("importagents", verbosity=0)
Agent.objects.update(start_typing_delay=1, typing_speed=1000)
for persona, sets in json.loads({sticker_sets!r}).items():
    agent = Agent.objects.get(name=persona)
    agent.sticker_set_names = list(agent.sticker_set_names or []) + [s for s in sets if s not in (agent.sticker_set_names or [])]
    agent.save(update_fields=["sticker_set_names"])
library = json.loads({library!r})
items = {{}}
for persona, files in library.items():
    agent = Agent.objects.get(name=persona)
    for name in files:
        path = Path({samples!r}) / "media" / name
        curated = json.loads(path.with_suffix(".json").read_text())["description"]
        upload = SimpleUploadedFile(name, path.read_bytes(), content_type="image/png")
        item = library_item_upload(agent_id=agent.id, upload=upload, description=curated)
        items[f"{{persona}}/{{name}}"] = [item.unique_id, item.description]
taught = {{}}
for agent in Agent.objects.all():
    taught[agent.name] = sorted(taught_kinds(included_prompts(agent, include_retrieve=True)))
print("SETUP " + json.dumps({{"taught": taught, "library": items}}))
"""


#: A `manage.py shell` that stays up for the whole stage and runs, for each JSON line on its stdin, a
#: management command (`["command", name, *args]`, as `manage.py name args` would) or a few lines of
#: Python (`["run", code]`): what a person or an operator does, without a process start per action.
_CONSOLE = """
import io, json, sys, traceback
from django.core.management import call_command
from django.db import close_old_connections
for line in sys.stdin:
    action, *args = json.loads(line)
    close_old_connections()
    out = io.StringIO()
    try:
        if action == "command":
            call_command(*args, stdout=out)
        else:
            exec(args[0], {})
        reply = {"ok": True, "out": out.getvalue()}
    except BaseException:
        reply = {"ok": False, "error": traceback.format_exc()}
    print("@@reply " + json.dumps(reply), flush=True)
"""


#: Run in a child after _SETUP, on the sandbox: the harness's sticker sets in the catalog (as an earlier
#: import from Telegram would have left them, premium marks included, with curated descriptions) and the stickers the personas'
#: accounts keep in their Saved Messages.
_SANDBOX_WORLD = """
import json
from agents.models import Agent
from sandbox.services.chats import sandbox_save
from media_catalog.models import MediaDescription, Sticker, StickerSet

for short_name, stickers in json.loads({sets!r}).items():
    sticker_set, _ = StickerSet.objects.update_or_create(short_name=short_name, defaults={{"title": short_name}})
    for position, (name, premium, unique_id) in enumerate(stickers):
        Sticker.objects.update_or_create(
            sticker_set=sticker_set,
            unique_id=unique_id,
            defaults={{"name": name, "position": position, "premium": premium, "mime": "image/webp"}},
        )
        # Curated, as the samples' sets are: the sandbox has no file of a sticker an agent sends.
        MediaDescription.objects.update_or_create(
            unique_id=unique_id,
            defaults={{"kind": "sticker", "sticker_set_name": short_name, "sticker_name": name,
                       "description": f"a {{name}} sticker", "status": "curated", "source": "curated"}},
        )
for persona, parts in json.loads({saved!r}).items():
    sandbox_save(agent=Agent.objects.get(name=persona), media=parts)
"""


def is_endpoint(request: RecordedRequest) -> bool:
    """Whether the stand-in answered this request as the self-hosted endpoint (ENDPOINT_PATH)."""
    return request.path.startswith(ENDPOINT_PATH + "/")


def harness_sticker_id(set_name: str, position: int) -> str:
    """The sandbox's unique id of a harness sticker."""
    return f"{set_name}-{position}"


def inline_mimes(request: RecordedRequest) -> tuple[str, ...]:
    """The MIME types of the media a request carries inline (images, audio...), in order."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            inline = value.get("inlineData") or value.get("inline_data")
            if isinstance(inline, dict):
                found.append(str(inline.get("mime_type") or inline.get("mimeType") or ""))
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(request.json)
    return tuple(found)


def request_text(request: RecordedRequest) -> str:
    """Every text of a request (system instruction, turns), in order: what the model was shown, the
    explicit cache it names included."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key in ("text", "content") and isinstance(item, str):
                    found.append(item)
                else:
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    if request.cached is not None:
        walk(request.cached.get("systemInstruction"))
        walk(request.cached.get("contents"))
    walk(request.json)
    return "\n".join(found)


@dataclass
class Served:
    """One request the stand-in answered: for which scenario turn (None: unscripted) and what it saw."""

    chat: str
    turn: Turn | None
    text: str
    reply: str
    at: float = 0.0  # when it was answered (time.time())
    inline: tuple[str, ...] = ()  # the MIME types of the media it carried inline


@dataclass
class _Script:
    scenario: Scenario
    queue: deque[tuple[Turn, list[dict[str, Any]]]] = field(default_factory=deque)


#: The online window on the stage (CINDY_ONLINE_WINDOW_SECONDS): long enough for a quick next message
#: on a busy machine, short enough for a scenario to `pause` past it.
ONLINE_WINDOW_SECONDS = 15


class Stage:
    """A database, the LLM stand-in and a running gateway with every sample persona."""

    def __init__(self, tmp: Path, template: ChildDatabase, scenarios: list[Scenario]) -> None:
        self.tmp = tmp
        self.played: set[str] = set()  # the scenarios played on this stage (`play.play_on`)
        self._api_token = ""  # an operator's REST API token, made at the first `through_api` say
        self.db = ChildDatabase(tmp, suffix=f"_{type(self).__name__.lower()}")
        self.db.copy_from(template)
        self.llm = FakeLLMServer().start()
        self.llm.set_responder(self._respond)
        self.log = tmp / "gateway.log"
        self.env = child_settings(self.db) | {
            "GEMINI_BASE_URL": self.llm.url,
            "GOOGLE_GEMINI_API_KEY": "test",
            "DEFAULT_AGENT_LLM": "gemini",
            # A persona's fallback route (gpt-5-mini) goes to the same stand-in.
            "OPENAI_BASE_URL": self.llm.url + "/v1",
            "OPENAI_API_KEY": "test",
            # A self-hosted endpoint by name (a scenario's `llm = "ollama:llama3.1"`), on its own path of
            # the same stand-in; no key, as a local server needs none.
            "CINDY_LLM_ENDPOINTS": f"{ENDPOINT}={self.llm.url}{ENDPOINT_PATH}",
            # A failing route's breaker opens at the second failure and lets a turn probe it after 3 s,
            # so a scenario (`[turn.routes]`) sees it open, probed and closed within a few turns.
            "CINDY_LLM_BREAKER_FAILURES": "2",
            "CINDY_LLM_BREAKER_COOLDOWN_SECONDS": "3",
            "CINDY_READ_DELAY_SECONDS": "0",
            "CINDY_UNREAD_SCAN_SECONDS": "3",  # an unseen message is found within seconds
            "CINDY_ONLINE_WINDOW_SECONDS": str(ONLINE_WINDOW_SECONDS),
            "CINDY_MEDIA_ROOT": str(tmp / "media"),
            "CINDY_AGENT_CONFIG_PATH": f"{SAMPLES}:{CONFIGDIR}",
            # Few enough that a scenario reaches the daily picture limit (spec.py, `pictures`).
            "CINDY_IMAGES_PER_DAY": "2",
            # No chat is quiet this long on the stage: only a scenario that lowers it (`parameters`,
            # orla_consolidate) sees a consolidation turn.
            "CINDY_CONSOLIDATE_QUIET_SECONDS": "86400",
            "CINDY_CONSOLIDATE_ASLEEP_QUIET_SECONDS": "86400",  # orla_asleep's sleep reviews nothing
        }
        self.served: list[Served] = []
        #: The transcription requests answered (a voice note's), apart from the chats' turns.
        self.transcribed: list[Served] = []
        self._transcripts: deque[tuple[Scenario, Turn]] = deque()
        self._notes: dict[tuple[str, str], Path] = {}  # (scenario, voice name) -> its OGG file
        self._scripts: dict[str, _Script] = {}
        self._ids: dict[str, int] = {}  # person -> user id, once they exist
        self._group_peers: dict[int, str] = {}  # group peer id -> its script key (the group's title)
        self._lock = threading.Lock()
        self.process = None
        self.console: subprocess.Popen | None = None
        library: dict[str, list[str]] = {}
        sticker_sets: dict[str, list[str]] = {}
        for scenario in scenarios:
            for wanted, files in ((library, scenario.library), (sticker_sets, scenario.sticker_sets)):
                have = wanted.setdefault(scenario.persona, [])
                have += [f for f in files if f not in have]
        out = manage(
            self.env,
            "shell",
            "-c",
            _SETUP.format(
                library=json.dumps(library), sticker_sets=json.dumps(sticker_sets), samples=str(SAMPLES)
            ),
        )
        setup = json.loads(out.split("SETUP ", 1)[1])
        self.taught: dict[str, set[str]] = {name: set(kinds) for name, kinds in setup["taught"].items()}
        self.library: dict[str, tuple[str, str]] = {k: tuple(v) for k, v in setup["library"].items()}
        self.agent_ids = dict(self.db.query("SELECT name, id FROM agents_agent"))
        #: Each persona's LLM as imported (its `# LLM`; "" for the default), restored after a scenario's `llm`.
        self.shipped_llm: dict[str, str] = dict(self.db.query("SELECT name, llm FROM agents_agent"))
        self.world_setup(scenarios)
        operators = [s.user(p) for s in scenarios for p in s.operators]
        self.env["CINDY_OPERATOR_IDS"] = ",".join(str(self.operator_id(name)) for name in operators)

    def world_setup(self, scenarios: list[Scenario]) -> None:
        """The harness's sticker sets, the personas' Saved Messages stickers (the sandbox's) and the
        scenarios' backlogs."""
        from cindy_site.testing.mtproto.media import image_bytes

        sets = {
            name: [
                (emoji, premium, harness_sticker_id(name, i)) for i, (emoji, premium) in enumerate(stickers)
            ]
            for name, stickers in HARNESS_STICKER_SETS.items()
        }
        saved: dict[str, list[dict[str, Any]]] = {}
        for scenario in scenarios:
            for set_name, emoji in scenario.saved_stickers:
                position = [e for e, _p in HARNESS_STICKER_SETS[set_name]].index(emoji)
                path = self.tmp / "saved" / f"{harness_sticker_id(set_name, position)}.webp"
                path.parent.mkdir(exist_ok=True)
                path.write_bytes(image_bytes(emoji, size=(64, 64), color="green", fmt="WEBP"))
                part = {
                    "kind": "media",
                    "media_kind": "sticker",
                    "unique_id": harness_sticker_id(set_name, position),
                    "sticker_set_name": set_name,
                    "sticker_name": emoji,
                    "mime": "image/webp",
                    "path": str(path),
                }
                if part not in saved.setdefault(scenario.persona, []):
                    saved[scenario.persona].append(part)
        manage(self.env, "shell", "-c", _SANDBOX_WORLD.format(sets=json.dumps(sets), saved=json.dumps(saved)))
        for scenario in scenarios:
            if scenario.backlog is not None:
                self.seed_backlog(scenario)

    def seed_backlog(self, scenario: Scenario) -> None:
        """The scenario's `[backlog]` with its first person (backlog.py), before the gateway starts: its
        writes never wait on the gateway's, nor the gateway's lease renewals on them."""
        backlog = scenario.backlog
        manage(
            self.env,
            "shell",
            "-c",
            "from engine.tests.scenarios.backlog import seed\n"
            f"seed(persona={scenario.persona!r}, person={scenario.user(scenario.people[0])!r}, "
            f"count={backlog.count}, lines={list(backlog.lines)!r}, planted={dict(backlog.planted)!r})",
        )

    def operator_id(self, name: str) -> int:
        """The user id the sandbox gives this person on their first message (stable, from the name)."""
        return PERSON_USER_ID_BASE + zlib.crc32(name.encode()) % 1_000_000_000

    # --- processes ----------------------------------------------------------------------------

    def start(self) -> Stage:
        self.process = start_gateway(self.env, self.log)
        self.console = subprocess.Popen(
            [sys.executable, MANAGE, "shell", "-c", _CONSOLE],
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=(self.tmp / "console.log").open("a"),
            text=True,
        )
        return self

    def _console(self, *request: str) -> str:
        """Run one action in the console child and return its output; a failure raises with the traceback."""
        assert self.console.stdin and self.console.stdout
        self.console.stdin.write(json.dumps(request) + "\n")
        self.console.stdin.flush()
        for line in self.console.stdout:
            if line.startswith("@@reply "):
                reply = json.loads(line[len("@@reply ") :])
                assert reply["ok"], f"{request[:2]} failed in the console:\n{reply['error']}"
                return reply["out"]
        raise AssertionError(f"the console child ended during {request[:2]}; see {self.tmp / 'console.log'}")

    def command(self, *args: str) -> str:
        """A management command, as `manage.py ARGS` runs it."""
        return self._console("command", *args)

    def run(self, code: str) -> None:
        """A few lines of Python in a process set up like manage.py's."""
        self._console("run", code)

    def stop(self) -> None:
        import os
        import signal

        if self.console is not None and self.console.poll() is None:
            self.console.stdin.close()
            self.console.wait(timeout=20)
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except Exception:  # noqa: BLE001 - a stuck gateway is killed with its workers
                os.killpg(self.process.pid, signal.SIGKILL)
        self.llm.stop()
        self.db.drop()

    def log_offset(self) -> int:
        return self.log.stat().st_size if self.log.exists() else 0

    def log_since(self, offset: int) -> str:
        with self.log.open("rb") as handle:
            handle.seek(offset)
            return handle.read().decode("utf-8", "replace")

    # --- the LLM stand-in -----------------------------------------------------------------------

    def script(self, scenario: Scenario) -> None:
        """Queue every reply of `scenario`, per chat, in turn order."""
        with self._lock:
            for person in scenario.people:
                self._scripts[scenario.user(person)] = _Script(scenario)
            if scenario.group:
                self._scripts[scenario.group_title] = _Script(scenario)
            for turn in scenario.turns:
                if turn.voice_transcript:
                    self._transcripts.append((scenario, turn))
                for reply in turn.replies:
                    self._scripts[scenario.group_title or scenario.user(turn.person)].queue.append(
                        (turn, reply)
                    )
        if scenario.group:
            self._group_peers[self._group(scenario)] = scenario.group_title

    def _group(self, scenario: Scenario) -> int:
        """The peer id of the scenario's group, made with its people and agents on first use."""
        members = [
            f"sandbox_user_for_agent(agent=Agent.objects.get(name={name!r}))"
            for name in (scenario.persona, *scenario.group_agents)
        ] + [f"sandbox_person(name={scenario.user(p)!r}, bot={p in scenario.bots})" for p in scenario.people]
        self.run(
            "from agents.models import Agent\n"
            "from sandbox.services.chats import sandbox_group, sandbox_person, sandbox_user_for_agent\n"
            f"sandbox_group(title={scenario.group_title!r}, members=[{', '.join(members)}])"
        )
        rows = self.db.query(
            f"SELECT peer_id FROM sandbox_sandboxchat WHERE kind = 'group' AND title = '{scenario.group_title}'"
        )
        return rows[0][0]

    def _respond(self, request: RecordedRequest) -> FakeReply:
        if _is_transcription(request):
            return self._transcribe()
        text = request_text(request)
        if _asks_for_image(request):  # making a picture: a new PNG, in Gemini's image output format
            with self._lock:
                self.served.append(Served(chat="", turn=None, text=text, reply="(picture)", at=time.time()))
                number = len(self.served)
            picture = image_bytes(f"picture {number}", size=(320, 240), color="navy", fmt="PNG")
            return FakeReply(
                text=None,
                images=((picture, "image/png"),),
                output_tokens=IMAGE_TOKENS,
                image_tokens=IMAGE_TOKENS,
            )
        match = _CHANNEL_ID.search(text)
        chat = self._chat_named(int(match.group("id"))) if match else ""
        with self._lock:
            script = self._scripts.get(chat)
            turn, tasks = script.queue.popleft() if script and script.queue else (None, [])
        if turn is not None:
            reply = self._written(request, turn, self.resolve(script.scenario, turn, tasks))
        elif match is None:  # not a turn of any chat: describing media (a sticker the catalog lacks)
            reply = DESCRIPTION
        else:
            reply = "[]"
        with self._lock:
            self.served.append(
                Served(
                    chat=chat, turn=turn, text=text, reply=reply, at=time.time(), inline=inline_mimes(request)
                )
            )
        return FakeReply(text=reply, **dict(turn.usage if turn is not None else ()))

    def _written(self, request: RecordedRequest, turn: Turn, tasks: list[dict[str, Any]]) -> str:
        """A turn's scripted tasks as the model writes them: JSON as the prompt teaches; to a request
        carrying the reply schema as `response_format` (only endpoints are sent one) the object a
        constrained server returns (`{"tasks": [...]}`); to an endpoint's request without it, when the
        turn says `markdown`, the original's Markdown task blocks."""
        body = request.json if isinstance(request.json, dict) else {}
        if "response_format" in body:
            schema = body["response_format"].get("json_schema", {}).get("schema", {})
            wrapped = set(schema.get("properties", {})) == {"tasks"}
            return json.dumps({"tasks": tasks} if wrapped else tasks, ensure_ascii=False)
        if turn.routes is not None and turn.routes.markdown and is_endpoint(request):
            return markdown_reply(tasks)
        return json.dumps(tasks, ensure_ascii=False)

    def endpoint_requests(self, since: int) -> list[RecordedRequest]:
        """The chat completions the self-hosted endpoint received after the first `since` requests."""
        return [r for r in self.llm.requests[since:] if is_endpoint(r)]

    def set_llm(self, persona: str, name: str) -> None:
        """The persona's LLM (its `# LLM`; "" for the default), saved as the agent's admin page does."""
        self.run(
            "from agents.models import Agent\n"
            "from agents.services.curation import agent_save\n"
            f"agent = Agent.objects.get(name={persona!r})\n"
            f"agent.llm = {name!r}\n"
            "agent_save(agent=agent, by='scenario')",
        )

    def _transcribe(self) -> FakeReply:
        """A voice note's transcription: the next scripted transcript, in the scenarios' turn order; with
        none scripted, an empty one (recorded as unscripted: the scenario fails)."""
        with self._lock:
            scenario, turn = self._transcripts.popleft() if self._transcripts else (None, None)
            if scenario is None or turn is None:
                self.transcribed.append(Served(chat="", turn=None, text="", reply="", at=time.time()))
                return FakeReply(text=json.dumps({"transcript": "", "language": ""}))
            reply = json.dumps({"transcript": turn.voice_transcript, "language": "en"}, ensure_ascii=False)
            self.transcribed.append(
                Served(chat=scenario.user(turn.person), turn=turn, text="", reply=reply, at=time.time())
            )
        audio = round(AUDIO_TOKENS_PER_SECOND * turn.voice_seconds)
        return FakeReply(
            text=reply,
            input_tokens=TRANSCRIPTION_TEXT_TOKENS + audio,
            output_tokens=TRANSCRIPTION_OUTPUT_TOKENS,
            audio_tokens=audio,
        )

    def transcriptions_of(self, turn: Turn) -> list[Served]:
        with self._lock:
            return [s for s in self.transcribed if s.turn is turn]

    def unscripted_transcriptions(self) -> int:
        with self._lock:
            return sum(1 for s in self.transcribed if s.turn is None)

    def voice_note(self, scenario: Scenario, turn: Turn) -> tuple[Path, bool]:
        """The turn's voice note file, made on its first use in the scenario; (path, made now)."""
        from cindy_site.testing.audio import voice_note

        key = (scenario.name, turn.voice)
        if key in self._notes:
            return self._notes[key], False
        path = self.tmp / f"{scenario.name}-{turn.voice}.ogg"
        path.write_bytes(voice_note(turn.voice_seconds))
        self._notes[key] = path
        return path, True

    def say_voice(self, scenario: Scenario, turn: Turn) -> None:
        """The person sends the turn's voice note (`sandbox voice`)."""
        path, _made = self.voice_note(scenario, turn)
        args = [scenario.persona, str(path), "--as", scenario.user(turn.person)]
        if scenario.group:
            args += ["--group", scenario.group_title]
        self.command("sandbox", "voice", *args)

    def _chat_named(self, peer_id: int) -> str:
        """The scripted person whose DM has this peer id (their user id), the scripted group with this
        peer id, or "" for any other chat."""
        with self._lock:
            if peer_id in self._group_peers:
                return self._group_peers[peer_id]
            names = [name for name in self._scripts if name not in self._group_peers.values()]
        for name in names:
            if name not in self._ids and self._exists(name):
                self._ids[name] = self.user_id(name)
            if self._ids.get(name) == peer_id:
                return name
        return ""

    def _exists(self, name: str) -> bool:
        return bool(
            self.db.query(f"SELECT 1 FROM sandbox_sandboxuser WHERE name = '{name}' AND agent_id IS NULL")
        )

    def resolve(self, scenario: Scenario, turn: Turn, tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The tasks with their placeholders replaced (see spec.py)."""

        def value(raw: Any) -> Any:
            if not isinstance(raw, str) or not raw.startswith("$"):
                return raw
            name, _, arg = raw[1:].partition(":")
            if name == "peer":
                return self.user_id(scenario.user(arg))
            if name == "last":
                return self.last_message_id(scenario, turn.person)
            if name == "in":
                at = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(seconds=float(arg))
                return at.isoformat()
            if name == "library":
                return self.library[f"{scenario.persona}/{arg}"][0]
            if name == "saved":
                description = scenario.turns[int(arg) - 1].save_media
                found = self.library_picture(scenario.persona, description)
                assert found, (
                    f"{scenario.path.name}: turn {turn.number}: nothing saved as {description!r} yet"
                )
                return found[0]
            if name == "picture":
                description = scenario.turns[int(arg) - 1].picture
                found = self.library_picture(scenario.persona, description)
                assert found, f"{scenario.path.name}: turn {turn.number}: no picture {description!r} yet"
                return found[0]
            raise AssertionError(f"{scenario.path.name}: turn {turn.number}: unknown placeholder {raw!r}")

        def resolved(raw: Any) -> Any:
            return [value(item) for item in raw] if isinstance(raw, list) else value(raw)

        return [{key: resolved(raw) for key, raw in task.items()} for task in tasks]

    def requests_of(self, scenario: Scenario, turn: Turn) -> list[Served]:
        with self._lock:
            return [s for s in self.served if s.turn is turn]

    def unscripted(self, scenario: Scenario) -> list[Served]:
        users = {scenario.user(p) for p in scenario.people} | ({scenario.group_title} - {""})
        with self._lock:
            return [s for s in self.served if s.turn is None and s.chat in users]

    def pending_replies(self, scenario: Scenario, person: str) -> int:
        with self._lock:
            script = self._scripts.get(scenario.user(person))
            return len(script.queue) if script else 0

    # --- acting as the people ---------------------------------------------------------------------

    def say(self, scenario: Scenario, turn: Turn, text: str = "", typing: float = 0.0) -> None:
        """The person says `text` (default: the turn's); with `typing`, they start typing for that many
        seconds at once (one transaction, so the gateway reads both in one batch)."""
        args = [scenario.persona, text or turn.say, "--as", scenario.user(turn.person)]
        if turn.person in scenario.bots:
            args.append("--bot")
        if turn.person in scenario.user_ids:
            args += ["--user-id", str(scenario.user_ids[turn.person])]
        if scenario.group:
            args += ["--group", scenario.group_title]
        if turn.topic:
            args += ["--topic", turn.topic]
        if scenario.through_api:
            self.say_through_api(scenario, turn, text=text or turn.say)
            if typing:
                self.command(
                    "sandbox",
                    "typing",
                    scenario.persona,
                    "--as",
                    scenario.user(turn.person),
                    "--seconds",
                    f"{typing:g}",
                )
            return
        if turn.media:
            self.run(
                "from agents.models import Agent\nfrom sandbox.services.chats import sandbox_say\n"
                f"sandbox_say(agent=Agent.objects.get(name={scenario.persona!r}), text={text or turn.say!r}, "
                f"as_name={scenario.user(turn.person)!r}, media=[{self.media_part(scenario, turn)!r}])"
            )
            return
        if not typing:
            self.command("sandbox", "say", *args)
            return
        self.run(
            "from django.core.management import call_command\n"
            "from django.db import transaction\n"
            "with transaction.atomic():\n"
            f"    call_command('sandbox', 'say', *{args!r})\n"
            f"    call_command('sandbox', 'typing', {scenario.persona!r}, '--as', "
            f"{scenario.user(turn.person)!r}, '--seconds', '{typing:g}')"
        )

    def media_part(self, scenario: Scenario, turn: Turn) -> dict[str, Any]:
        """The sandbox media part of a turn's `media`: a TGS sticker (its file written here) or a video."""
        from cindy_site.testing.mtproto.media import tgs_bytes

        spec = turn.media_spec
        unique_id = f"{spec['kind']}-{scenario.name}-{turn.number}"
        if spec["kind"] == "photo":
            path = self.tmp / "people" / f"{unique_id}.jpg"
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(image_bytes(spec["text"], size=(320, 240), color="red", fmt="JPEG"))
            return {"kind": "media", "media_kind": "photo", "unique_id": unique_id, "mime": "image/jpeg",
                    "path": str(path)}  # fmt: skip
        if spec["kind"] == "animated_sticker":
            path = self.tmp / "people" / f"{unique_id}.tgs"
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(tgs_bytes())
            return {
                "kind": "media",
                "media_kind": "sticker",
                "unique_id": unique_id,
                "sticker_set_name": ANIMATED_SET[0],
                "sticker_name": spec["name"],
                "sticker_format": "animated",
                "mime": "application/x-tgsticker",
                "path": str(path),
            }
        extra = {"round": True} if spec["kind"] == "video_note" else {}
        return {
            "kind": "media",
            "media_kind": "video",
            "unique_id": unique_id,
            "mime": "video/mp4",
            "duration": float(spec["seconds"]),
            **({"extra": extra} if extra else {}),
        }

    def describes(self, since: float, until: float) -> list[Served]:
        """The media description requests answered between two times (no chat's turn)."""
        with self._lock:
            return [
                s
                for s in self.served
                if s.turn is None and "# Channel Details" not in s.text and since <= s.at <= until
            ]

    def say_through_api(self, scenario: Scenario, turn: Turn, *, text: str) -> None:
        """The person's message as a script sends it: POST /api/v1/agents/{id}/sandbox/messages with
        an operator's token (`manage.py apitoken`), through the site's own URLs and middleware."""
        if not self._api_token:
            self.run(
                "from django.contrib.auth import get_user_model\n"
                "users = get_user_model().objects\n"
                "if not users.filter(username='scenario-api').exists():\n"
                "    users.create_superuser('scenario-api', 'api@example.com', None)"
            )
            self._api_token = self.command("apitoken", "scenario-api", "--name", "scenarios").strip()
        body = {"text": text, "as_name": scenario.user(turn.person), "group": scenario.group_title}
        self.run(
            "from django.test import Client\n"
            f"answer = Client(HTTP_HOST='localhost').post('/api/v1/agents/{self.agent_ids[scenario.persona]}"
            f"/sandbox/messages', {body!r}, content_type='application/json', secure=True, "
            f"headers={{'Authorization': 'Bearer {self._api_token}'}})\n"
            "assert answer.status_code == 201, (answer.status_code, answer.content)"
        )

    def typing_lasts(self, seconds: float) -> float:
        """How long the agent sees a person type who types for `seconds`."""
        return seconds

    # --- attention (engine/attention.py) ----------------------------------------------------------

    def _say_args(self, scenario: Scenario, turn: Turn) -> list[str]:
        args = [scenario.persona, turn.say, "--as", scenario.user(turn.person)]
        if turn.person in scenario.bots:
            args.append("--bot")
        if turn.person in scenario.user_ids:
            args += ["--user-id", str(scenario.user_ids[turn.person])]
        if scenario.group:
            args += ["--group", scenario.group_title]
        return args

    def say_unseen(self, scenario: Scenario, turn: Turn) -> None:
        """The person writes, but the update is lost: its row leaves the log in the same transaction."""
        self.run(
            "from django.core.management import call_command\n"
            "from django.db import transaction\n"
            "from sandbox.models import SandboxMessage, SandboxUpdate\n"
            "with transaction.atomic():\n"
            f"    call_command('sandbox', 'say', *{self._say_args(scenario, turn)!r})\n"
            f"    m = SandboxMessage.objects.filter(sender__name={scenario.user(turn.person)!r}).latest('id')\n"
            "    SandboxUpdate.objects.filter(chat=m.chat, message_id=m.message_id).delete()"
        )

    def deliver_late(self, scenario: Scenario, turn: Turn) -> str:
        """The lost update of the turn's message arrives, followed by an edit of it; returns the edited
        text."""
        edited = f"{turn.say} (edited)"
        self.run(
            "from django.db import transaction\n"
            "from cindy_site.clock import now\n"
            "from sandbox.models import SandboxMessage, SandboxUpdate\n"
            "from conversations.services.wake import wake_gateways_on_commit\n"
            f"m = SandboxMessage.objects.filter(sender__name={scenario.user(turn.person)!r}, "
            f"text={turn.say!r}).latest('id')\n"
            "with transaction.atomic():\n"
            "    SandboxUpdate.objects.create(chat=m.chat, kind='new_message', message_id=m.message_id, "
            "actor=m.sender, created=now())\n"
            f"    SandboxMessage.objects.filter(pk=m.pk).update(text={edited!r}, edited=True)\n"
            "    SandboxUpdate.objects.create(chat=m.chat, kind='edit', message_id=m.message_id, "
            "actor=m.sender, created=now())\n"
            "    wake_gateways_on_commit()"
        )
        return edited

    def mark_unread(self, scenario: Scenario, turn: Turn) -> None:
        """The agent's account marks the person's chat (or the group) unread: `sandbox mark-unread`."""
        args = [scenario.persona, "--as", scenario.user(turn.person)]
        if scenario.group:
            args += ["--group", scenario.group_title]
        self.command("sandbox", "mark-unread", *args)

    def mute(self, scenario: Scenario, turn: Turn) -> None:
        """The operator mutes the person's chat (or the group), as the admin's Mute action does."""
        conversation = self._conversation_of(scenario, turn.person)
        assert conversation, (
            f"{scenario.path.name}: turn {turn.number}: mute before the chat exists: say something in "
            "an earlier turn"
        )
        self.run(
            "from conversations.models import Conversation\n"
            "from conversations.services.curation import conversations_set_muted\n"
            f"conversations_set_muted(conversations=[Conversation.objects.get(pk={conversation})], muted=True)"
        )

    def save_media(self, scenario: Scenario, turn: Turn) -> None:
        """An operator saves the media of the person's latest message that has one to the agent's
        library, as the conversation page's "Save to library" does; on Telegram the gateway then sends
        it to Saved Messages. Returns once the library holds it."""
        conversation = self._conversation_of(scenario, turn.person)
        assert conversation, (
            f"{scenario.path.name}: turn {turn.number}: save_media before {turn.person} sent any media"
        )
        self.run(
            "from conversations.models import Conversation, Message\n"
            "from conversations.services.media_save import conversation_media_save\n"
            f"chat = Conversation.objects.get(pk={conversation})\n"
            "message = next(m for m in Message.objects.filter(conversation=chat, is_agent=False)"
            ".exclude(media=[]).order_by('-message_id'))\n"
            "conversation_media_save(conversation=chat, message_id=message.message_id, "
            f"unique_id=message.media[0]['unique_id'], description={turn.save_media!r}, by='scenario')"
        )
        wait(
            lambda: self.library_picture(scenario.persona, turn.save_media) is not None,
            f"{scenario.name} turn {turn.number}: the saved media in {scenario.persona}'s library",
            self,
        )

    def import_history(self, scenario: Scenario, turn: Turn) -> None:
        """An operator imports the person's past with the persona from a Telegram Desktop export
        (`manage.py importchat`): the turn's `history`, a minute apart the day before, the persona's
        lines as its own (`--me`). The sandbox person named as the chat is the person."""
        person, peer, own = scenario.user(turn.person), 5_550_000 + turn.number, 7_770_000 + turn.number
        start = int(time.time()) - 86_400
        messages = [
            {
                "id": n,
                "type": "message",
                "date": dt.datetime.fromtimestamp(start + 60 * n).isoformat(timespec="seconds"),
                "date_unixtime": str(start + 60 * n),
                "from": scenario.persona if agent else person,
                "from_id": f"user{own if agent else peer}",
                "text": text,
            }
            for n, (text, agent) in enumerate(turn.history, start=1)
        ]
        path = self.tmp / f"{scenario.name}-turn{turn.number}-result.json"
        export = {"name": person, "type": "personal_chat", "id": peer, "messages": messages}
        path.write_text(json.dumps(export, ensure_ascii=False), encoding="utf-8")
        out = self.command("importchat", scenario.persona, str(path), "--me", str(own))
        assert f"imported {len(messages)}, already there 0" in out, out

    def answer_bots(self, scenario: Scenario, turn: Turn) -> None:
        """An operator turns on the "answer bots" setting of the person's chat, as in the admin."""
        assert self._conversation_of(scenario, turn.person), (
            f"{scenario.path.name}: turn {turn.number}: answer_bots before {turn.person} wrote: "
            "the chat must exist (say something in an earlier turn)"
        )
        self.run(
            "from conversations.models import Conversation\n"
            f"Conversation.objects.filter(agent_id={self.agent_ids[scenario.persona]}, "
            f"peer_id={self.user_id(scenario.user(turn.person))}).update(answer_bots=True)",
        )

    def clear_present(self, persona: str) -> None:
        """Remove the persona's schedule entries covering now, so the next scenarios of the persona
        answer at the stage's speed and may schedule the present again."""
        self.run(
            "from cindy_site.clock import now\nfrom memory.models import ScheduleEntry\n"
            f"ScheduleEntry.objects.filter(agent_id={self.agent_ids[persona]}, start__lte=now(), "
            "end__gt=now()).delete()"
        )

    def nudge(self, scenario: Scenario, turn: Turn) -> None:
        """An operator's nudge of the person's chat, as the admin's XSend action makes it."""
        self.run(
            "from conversations.models import Conversation\n"
            "from conversations.services.initiative import conversation_nudge\n"
            f"conversation = Conversation.objects.get(agent_id={self.agent_ids[scenario.persona]}, "
            f"peer_id={self.user_id(scenario.user(turn.person))})\n"
            f"conversation_nudge(conversation=conversation, intent={turn.intent!r}, operator='scenario')",
        )

    def operate(self, scenario: Scenario, turn: Turn) -> None:
        """An operator's change of the persona's spend limits, saved as the admin's Agent form saves it."""
        self.run(
            "from agents.models import Agent\n"
            "from agents.services.curation import agent_save\n"
            f"agent = Agent.objects.get(name={scenario.persona!r})\n"
            f"for name, value in {list(turn.operator)!r}:\n"
            "    setattr(agent, name, Agent._meta.get_field(name).to_python(value) if value else None)\n"
            "agent_save(agent=agent)",
        )

    def set_parameters(self, turn: Turn) -> None:
        """Global parameters an operator saves (or resets) on the admin's LLMs and prices page."""
        self.run(
            "from llm.parameter_store import parameter_reset, parameter_set\n"
            f"for name, value in {list(turn.parameters)!r}:\n"
            "    if value:\n"
            "        parameter_set(name, value, by='scenario')\n"
            "    else:\n"
            "        parameter_reset(name, by='scenario')",
        )

    def held(self, scenario: Scenario) -> bool:
        """Whether a spend brake holds a turn of the scenario's chats (engine/brakes.py)."""
        ids = self.conversation_ids(scenario)
        if not ids:
            return False
        rows = self.db.query(
            "SELECT COUNT(*) FROM conversations_tasknode WHERE kind = 'received' AND status = 'pending' "
            f"AND JSON_EXTRACT(params, '$.braked') IS NOT NULL AND conversation_id IN ({', '.join(map(str, ids))})"
        )
        return rows[0][0] > 0

    def llm_calls(self, scenario: Scenario) -> int:
        ids = self.conversation_ids(scenario)
        if not ids:
            return 0
        return self.db.query(
            f"SELECT COUNT(*) FROM llm_llmcall WHERE conversation_id IN ({', '.join(map(str, ids))})"
        )[0][0]

    def activity_lines(self, scenario: Scenario, text: str) -> list[str]:
        """The activity summaries of the scenario's chats that contain `text`."""
        ids = self.conversation_ids(scenario)
        if not ids:
            return []
        rows = self.db.query(
            "SELECT summary FROM conversations_activityevent WHERE conversation_id IN "
            f"({', '.join(map(str, ids))}) ORDER BY id"
        )
        return [r[0] for r in rows if text in r[0]]

    def close_active(self, scenario: Scenario) -> None:
        """Cancel what a failed scenario left running, so it does not run on into the next one."""
        ids = self.conversation_ids(scenario)
        if not ids:
            return
        self.run(
            "from conversations.models import TaskGraph\n"
            "from conversations.services.graphs import graph_close\n"
            f"for graph in TaskGraph.objects.filter(conversation_id__in={ids}, status='active'):\n"
            "    graph_close(graph=graph, status='cancelled', reason='the scenario ended')",
        )

    def start_agent(self, persona: str) -> None:
        """Start a stopped agent, as an operator does in the admin, and wait until the gateway holds it."""
        self.run(
            f"from agents.models import Agent\nAgent.objects.filter(name={persona!r}).update(stopped=False)"
        )
        wait(
            lambda: self.db.query(
                f"SELECT 1 FROM agents_agentlease WHERE agent_id = {self.agent_ids[persona]}"
            ),
            f"the gateway to hold {persona} again",
            self,
        )

    def stopped(self, persona: str) -> bool:
        return bool(
            self.db.query(f"SELECT stopped FROM agents_agent WHERE id = {self.agent_ids[persona]}")[0][0]
        )

    # --- reading the world --------------------------------------------------------------------------

    def user_id(self, name: str) -> int:
        rows = self.db.query(
            f"SELECT user_id FROM sandbox_sandboxuser WHERE name = '{name}' AND agent_id IS NULL"
        )
        assert rows, f"no sandbox user {name!r} yet: a scenario names a person before they wrote"
        return rows[0][0]

    def agent_user_id(self, persona: str) -> int:
        return self.db.query(
            f"SELECT user_id FROM sandbox_sandboxuser WHERE agent_id = {self.agent_ids[persona]}"
        )[0][0]

    def _dm_chat(self, scenario: Scenario, person: str) -> int | None:
        rows = self.db.query(
            "SELECT m.chat_id FROM sandbox_sandboxmember m JOIN sandbox_sandboxuser u "
            "ON m.user_id = u.id JOIN sandbox_sandboxchat c ON m.chat_id = c.id "
            f"WHERE c.kind = 'dm' AND u.name = '{scenario.user(person)}' AND u.agent_id IS NULL AND "
            "m.chat_id IN (SELECT m2.chat_id FROM sandbox_sandboxmember m2 JOIN "
            f"sandbox_sandboxuser a ON m2.user_id = a.id WHERE a.agent_id = "
            f"{self.agent_ids[scenario.persona]})"
        )
        return rows[0][0] if rows else None

    def read_mark(self, scenario: Scenario, person: str) -> int:
        """The message id up to which the persona's account has read the person's DM (in a group
        scenario, the group): the sandbox member's `read_up_to`; 0 before any read."""
        if scenario.group:
            rows = self.db.query(f"SELECT id FROM sandbox_sandboxchat WHERE title = '{scenario.group_title}'")
            chat = rows[0][0] if rows else None
        else:
            chat = self._dm_chat(scenario, person)
        if chat is None:
            return 0
        rows = self.db.query(
            "SELECT m.read_up_to FROM sandbox_sandboxmember m JOIN sandbox_sandboxuser u ON m.user_id = u.id "
            f"WHERE m.chat_id = {chat} AND u.agent_id = {self.agent_ids[scenario.persona]}"
        )
        return int(rows[0][0] or 0) if rows else 0

    def messages(self, scenario: Scenario, person: str) -> list[tuple[int, bool, str, list, list]]:
        """(message id, from the agent, text, media, reactions) of the person's DM with the agent; in a
        group scenario, of the group, where any agent's text reads `Name: text`."""
        if scenario.group:
            rows = self.db.query(f"SELECT id FROM sandbox_sandboxchat WHERE title = '{scenario.group_title}'")
            chat = rows[0][0] if rows else None
        else:
            chat = self._dm_chat(scenario, person)
        if chat is None:
            return []
        rows = self.db.query(
            "SELECT m.message_id, u.agent_id, m.text, m.media, m.reactions, u.name FROM "
            "sandbox_sandboxmessage m JOIN sandbox_sandboxuser u ON m.sender_id = u.id "
            f"WHERE m.chat_id = {chat} AND m.deleted = 0 ORDER BY m.message_id"
        )
        return [
            (
                mid,
                agent is not None,
                f"{name}: {text}" if scenario.group and agent is not None else text,
                [self._voice(part) for part in json.loads(media)],
                json.loads(reactions),
            )
            for mid, agent, text, media, reactions, name in rows
        ]

    def _voice(self, part: dict) -> dict:
        """A voice note's part with its file decoded (engine/tests/scenarios/voice.py); others as they are."""
        if part.get("media_kind") != "voice":
            return part
        path = self.tmp / "media" / part.get("file", "")
        data = path.read_bytes() if part.get("file") and path.is_file() else None
        return part | voice_part(data, stated=part.get("duration"), whole_seconds=False)

    def last_message_id(self, scenario: Scenario, person: str) -> int:
        theirs = [m for m in self.messages(scenario, person) if not m[1]]
        assert theirs, f"{scenario.path.name}: $last used before {person} wrote anything"
        return theirs[-1][0]

    def _chats(self, scenario: Scenario, person: str) -> list[int]:
        """The conversations of the person's chat: the persona's DM, or every agent's view of the group."""
        if scenario.group:
            peer = next((p for p, key in self._group_peers.items() if key == scenario.group_title), None)
            agents = ", ".join(str(self.agent_ids[a]) for a in (scenario.persona, *scenario.group_agents))
            rows = self.db.query(
                f"SELECT id FROM conversations_conversation WHERE agent_id IN ({agents}) AND peer_id = {peer} "
                f"ORDER BY agent_id = {self.agent_ids[scenario.persona]} DESC"
            )
            return [r[0] for r in rows]
        if not self._known(scenario, person):
            return []
        rows = self.db.query(
            f"SELECT id FROM conversations_conversation WHERE agent_id = {self.agent_ids[scenario.persona]} "
            f"AND peer_id = {self.user_id(scenario.user(person))}"
        )
        return [r[0] for r in rows]

    def _conversation_of(self, scenario: Scenario, person: str) -> int | None:
        """The persona's conversation of the person's chat."""
        chats = self._chats(scenario, person)
        if scenario.group:
            persona = self.db.query(
                f"SELECT id FROM conversations_conversation WHERE agent_id = {self.agent_ids[scenario.persona]} "
                f"AND id IN ({', '.join(map(str, chats)) or 'NULL'})"
            )
            return persona[0][0] if persona else None
        return chats[0] if chats else None

    def mirrored(self, scenario: Scenario, person: str) -> list[str]:
        """The texts of the person's messages in Cindy's mirror of their chat (as stored, redacted);
        in a forum, of every topic's conversation."""
        if scenario.forum:
            conversations = self._forum_conversations(scenario)
        else:
            conversation = self._conversation_of(scenario, person)
            conversations = [] if conversation is None else [conversation]
        if not conversations:
            return []
        rows = self.db.query(
            "SELECT text FROM conversations_message WHERE is_agent = 0 AND is_service = 0 AND "
            f"conversation_id IN ({', '.join(map(str, conversations))}) ORDER BY message_id"
        )
        return [r[0] for r in rows]

    def _forum_conversations(self, scenario: Scenario) -> list[int]:
        """The persona's conversations of the scenario's forum: General's and each topic's."""
        peer = next((p for p, key in self._group_peers.items() if key == scenario.group_title), None)
        if peer is None:
            return []
        rows = self.db.query(
            f"SELECT id FROM conversations_conversation WHERE agent_id = {self.agent_ids[scenario.persona]} "
            f"AND peer_id = {peer}"
        )
        return [r[0] for r in rows]

    def message_topics(self, scenario: Scenario) -> dict[int, str]:
        """Message id -> the title of the forum topic it is in, for the scenario's group ("": General)."""
        rows = self.db.query(
            "SELECT m.message_id, t.title FROM sandbox_sandboxmessage m JOIN sandbox_sandboxchat c "
            "ON m.chat_id = c.id JOIN sandbox_sandboxtopic t ON t.chat_id = c.id AND t.topic_id = m.topic_id "
            f"WHERE c.title = '{scenario.group_title}'"
        )
        return dict(rows)

    def events(self, scenario: Scenario, person: str, kind: str) -> int:
        """How many activity events of `kind` the person's chat has (any agent's, in a group)."""
        chats = self._chats(scenario, person)
        if not chats:
            return 0
        return self.db.query(
            "SELECT COUNT(*) FROM conversations_activityevent WHERE "
            f"conversation_id IN ({', '.join(map(str, chats))}) AND kind = '{kind}'"
        )[0][0]

    def typing_noted(self, scenario: Scenario, person: str) -> bool:
        """Cindy knows the person is typing (the pending reply waits for it)."""
        conversation = self._conversation_of(scenario, person)
        return conversation is not None and bool(
            self.db.query(
                "SELECT 1 FROM conversations_conversation WHERE partner_typing_until IS NOT NULL AND "
                f"id = {conversation}"
            )
        )

    def graphs(self, scenario: Scenario, person: str) -> int:
        chats = self._chats(scenario, person)
        if not chats:
            return 0
        return self.db.query(
            f"SELECT COUNT(*) FROM conversations_taskgraph WHERE conversation_id IN ({', '.join(map(str, chats))})"
        )[0][0]

    def conversation_ids(self, scenario: Scenario) -> list[int]:
        if scenario.group:
            return self._chats(scenario, scenario.people[0])
        peers = [str(self.user_id(scenario.user(p))) for p in scenario.people if self._known(scenario, p)]
        if not peers:
            return []
        rows = self.db.query(
            f"SELECT id FROM conversations_conversation WHERE agent_id = {self.agent_ids[scenario.persona]} "
            f"AND peer_id IN ({', '.join(peers)})"
        )
        return [r[0] for r in rows]

    def _known(self, scenario: Scenario, person: str) -> bool:
        return self._exists(scenario.user(person))

    def busy(self, scenario: Scenario) -> bool:
        """Whether a graph of the scenario's chats is still active."""
        ids = self.conversation_ids(scenario)
        if not ids:
            return True
        rows = self.db.query(
            "SELECT COUNT(*) FROM conversations_taskgraph WHERE status = 'active' AND conversation_id IN "
            f"({', '.join(map(str, ids))})"
        )
        return rows[0][0] > 0

    def blocked_ids(self, persona: str) -> list[int]:
        rows = self.db.query(
            f"SELECT blocked_user_ids FROM sandbox_sandboxuser WHERE agent_id = {self.agent_ids[persona]}"
        )
        return json.loads(rows[0][0] or "[]")

    def set_rights(self, scenario: Scenario, rights: str) -> None:
        """An admin of the scenario's group changes the persona's right to write there."""
        self.command(
            "sandbox",
            "rights",
            scenario.persona,
            "--group",
            scenario.group_title,
            "--cannot-write",
            rights or "none",
        )

    def start_delays(self, scenario: Scenario, person: str) -> list[float]:
        """The start-typing delay (seconds) of each typed send in the person's chat, oldest first."""
        conversation = self._conversation_of(scenario, person)
        if conversation is None:
            return []
        rows = self.db.query(
            "SELECT params FROM conversations_tasknode WHERE kind = 'send' AND "
            f"conversation_id = {conversation} ORDER BY id"
        )
        params = [json.loads(r[0] or "{}") for r in rows]
        return [float(p["start_delay"]) for p in params if "start_delay" in p]

    def contact_ids(self, persona: str) -> list[int]:
        rows = self.db.query(
            f"SELECT contact_user_ids FROM sandbox_sandboxuser WHERE agent_id = {self.agent_ids[persona]}"
        )
        return json.loads(rows[0][0] or "[]")

    def shown_online(self, persona: str) -> bool:
        rows = self.db.query(
            f"SELECT online FROM sandbox_sandboxuser WHERE agent_id = {self.agent_ids[persona]}"
        )
        return bool(rows[0][0])

    def schedule_activities(self, persona: str) -> list[str]:
        rows = self.db.query(
            f"SELECT activity FROM memory_scheduleentry WHERE agent_id = {self.agent_ids[persona]}"
        )
        return [r[0] for r in rows]

    def catalog_description(self, unique_id: str) -> str | None:
        rows = self.db.query(
            f"SELECT description FROM media_catalog_mediadescription WHERE unique_id = '{unique_id}'"
        )
        return rows[0][0] if rows else None

    def library_picture(self, persona: str, description: str) -> tuple[str, str] | None:
        """(unique id, file) of the persona's library item with this description, or None."""
        rows = self.db.query(
            "SELECT unique_id, file FROM media_catalog_libraryitem WHERE agent_id = "
            f"{self.agent_ids[persona]} AND description = '{description.replace(chr(39), chr(39) * 2)}'"
        )
        return tuple(rows[0]) if rows else None

    def media_bytes(self, relative: str) -> bytes | None:
        """A file under the gateway's MEDIA_ROOT, or None."""
        path = self.tmp / "media" / relative
        return path.read_bytes() if relative and path.is_file() else None

    def photo_bytes(self, part: dict[str, Any]) -> bytes | None:
        """The bytes of a photo the agent sent (a sandbox message's media part)."""
        return self.media_bytes(part.get("file", ""))

    def explicit_caches(self, scenario: Scenario) -> tuple[int, int]:
        """(explicit caches made or extended, planning calls sent through one) in the scenario's chats."""
        ids = self.conversation_ids(scenario)
        if not ids:
            return 0, 0
        rows = self.db.query(
            "SELECT purpose, COUNT(*) FROM llm_llmcall WHERE explicit_cache AND conversation_id IN "
            f"({', '.join(map(str, ids))}) GROUP BY purpose"
        )
        counts = dict(rows)
        return counts.get("cache", 0), counts.get("plan", 0)

    def pictures_made(self, scenario: Scenario) -> int:
        """The image calls (pictures made) of the scenario's chats."""
        ids = self.conversation_ids(scenario)
        if not ids:
            return 0
        return self.db.query(
            "SELECT COUNT(*) FROM llm_llmcall WHERE purpose = 'image' AND conversation_id IN "
            f"({', '.join(map(str, ids))})"
        )[0][0]

    def library_description(self, persona: str, unique_id: str) -> str:
        return self.db.query(
            f"SELECT description FROM media_catalog_libraryitem WHERE unique_id = '{unique_id}' AND "
            f"agent_id = {self.agent_ids[persona]}"
        )[0][0]


def _is_transcription(request: RecordedRequest) -> bool:
    """A voice note's transcription request (llm/transcription.py): JSON with a transcript asked for,
    or OpenAI's transcription endpoint."""
    if request.path.endswith("/audio/transcriptions"):
        return True
    config = (request.json or {}).get("generationConfig") if isinstance(request.json, dict) else None
    return '"transcript"' in json.dumps(config or {})


def _asks_for_image(request: RecordedRequest) -> bool:
    """A Gemini request for the IMAGE modality (llm/images.py)."""
    body = request.json if isinstance(request.json, dict) else {}
    modalities = (body.get("generationConfig") or {}).get("responseModalities") or []
    return "IMAGE" in modalities


def _channel_details(text: str) -> str:
    """The "# Channel Details" block of a prompt (which chat a request was for), or its first line."""
    start = text.find("# Channel Details")
    if start < 0:
        return text.strip().splitlines()[0][:200] if text.strip() else ""
    return text[start : start + 400]


def wait(predicate, what: str, stage: Stage, deadline: float = TURN_DEADLINE):
    """Poll `predicate` until it is true, at most `deadline` seconds; the failure shows the log's end."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    served = [(s.chat, s.turn.number if s.turn else "unscripted") for s in stage.served]
    unscripted = [_channel_details(s.text) for s in stage.served if s.turn is None]
    if unscripted:
        served.append(("the unscripted requests' channels", unscripted))
    raise AssertionError(
        f"timed out waiting for {what}; LLM requests so far (chat, turn): {served}; gateway log:\n"
        f"{stage.log_since(0)[-6000:]}"
    )
