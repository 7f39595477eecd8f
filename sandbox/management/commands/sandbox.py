"""`manage.py sandbox say|voice|file|typing|react|mark-unread|rights|show`: talk to an agent on the sandbox
transport from a shell.

`voice AGENT FILE --as USER` sends an OGG/Opus file as a voice note (its duration read from the file);
`file AGENT FILE --as USER [--kind photo|sticker|animated-sticker|video|document]` sends any media
(the kind defaults from the file's bytes; an explicit kind sends a mislabelled file as that kind).
Both refuse a file past CINDY_SANDBOX_MAX_FILE_BYTES by its size, before reading it.

`say --group TITLE --topic NAME` writes in a topic of a forum group (made on first use);
`say --user-id 777000` writes as Telegram's service account, `say --bot --as NAME` as a bot;
`typing AGENT --as USER [--seconds N]` types in the DM, which holds the agent's reply;
`mark-unread AGENT --as USER [--group TITLE]` marks the agent's chat unread, which it answers;
`rights AGENT --group TITLE --cannot-write restricted|read_only|banned|none` sets what an admin allows
the agent in a group (a callout where it cannot write starts no turn)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from agents.models import Agent
from sandbox.services.chats import (
    CANNOT_WRITE_CHOICES,
    SandboxError,
    sandbox_mark_unread,
    sandbox_react,
    sandbox_say,
    sandbox_set_rights,
    sandbox_transcript,
    sandbox_typing,
)
from sandbox.services.files import FILE_KINDS, sandbox_file
from sandbox.services.voice import sandbox_voice


class Command(BaseCommand):
    help = "Send messages or reactions to an agent on the sandbox, or print a sandbox chat."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        say = sub.add_parser("say", help="send each TEXT as one message, in order")
        say.add_argument("agent")
        say.add_argument("texts", nargs="+", metavar="TEXT")
        say.add_argument("--as", dest="as_name", default=None, metavar="NAME", help="default: You")
        say.add_argument("--group", metavar="TITLE")
        say.add_argument(
            "--topic",
            metavar="NAME",
            help="write in this topic of the --group (created on first use; the group becomes a forum)",
        )
        say.add_argument("--reply-to", type=int, metavar="ID")
        say.add_argument(
            "--user-id",
            type=int,
            metavar="N",
            help="write as the user with this Telegram id, e.g. 777000 (Telegram's service account)",
        )
        say.add_argument("--bot", action="store_true", help="the sender is a bot account")

        voice = sub.add_parser("voice", help="send an OGG/Opus FILE as a voice note")
        voice.add_argument("agent")
        voice.add_argument("file", metavar="FILE")
        voice.add_argument("--as", dest="as_name", default="You", metavar="NAME")
        voice.add_argument("--group", metavar="TITLE")
        voice.add_argument("--reply-to", type=int, metavar="ID")

        media = sub.add_parser("file", help="send any media FILE: a photo, sticker, video or document")
        media.add_argument("agent")
        media.add_argument("file", metavar="FILE")
        media.add_argument("--as", dest="as_name", default="You", metavar="NAME")
        media.add_argument(
            "--kind",
            choices=FILE_KINDS,
            help="send it as this kind (default: what the file's bytes are, never its name)",
        )
        media.add_argument("--caption", default="", metavar="TEXT")
        media.add_argument("--group", metavar="TITLE")
        media.add_argument("--reply-to", type=int, metavar="ID")

        typing = sub.add_parser("typing", help="type in the DM with the agent (it holds its reply)")
        typing.add_argument("agent")
        typing.add_argument("--as", dest="as_name", default="You", metavar="USER")
        typing.add_argument(
            "--seconds", type=float, default=5.0, metavar="N", help="how long the typing lasts (0 stops it)"
        )

        react = sub.add_parser("react", help="react to a message")
        react.add_argument("agent")
        react.add_argument("message_id", type=int)
        react.add_argument("emoji")
        react.add_argument("--as", dest="as_name", default="You", metavar="NAME")
        react.add_argument("--group", metavar="TITLE")

        mark = sub.add_parser(
            "mark-unread", help="mark the agent's chat unread, as its account's owner would: it answers"
        )
        mark.add_argument("agent")
        mark.add_argument("--as", dest="as_name", default="You", metavar="USER")
        mark.add_argument("--group", metavar="TITLE")

        rights = sub.add_parser("rights", help="set the agent's right to write in a group, as its admin")
        rights.add_argument("agent")
        rights.add_argument("--group", metavar="TITLE", required=True)
        rights.add_argument("--cannot-write", required=True, choices=[*CANNOT_WRITE_CHOICES, "none"])

        show = sub.add_parser("show", help="print the chat, one message per line as SENDER: text")
        show.add_argument("agent")
        show.add_argument("--as", dest="as_name", default="You", metavar="NAME")
        show.add_argument("--group", metavar="TITLE")
        show.add_argument("--topic", metavar="NAME", help="only this topic of the --group")
        show.add_argument("--ids", action="store_true", help="prefix each line with its message id")

    def handle(self, *args, **options):
        agent = Agent.objects.filter(name=options["agent"]).first()
        if agent is None:
            known = ", ".join(Agent.objects.values_list("name", flat=True)) or "none (run importagents)"
            raise CommandError(f"no agent named {options['agent']!r}; known agents: {known}")
        try:
            if options["action"] == "say":
                _check_texts(options["texts"])
                reply_to = options["reply_to"]
                for text in options["texts"]:
                    message = sandbox_say(
                        agent=agent,
                        text=text,
                        as_name=options["as_name"] or ("" if options["user_id"] else "You"),
                        group=options["group"],
                        reply_to=reply_to,
                        user_id=options["user_id"],
                        bot=options["bot"],
                        topic=options["topic"],
                    )
                    reply_to = None  # only the first message is the reply
                    self.stdout.write(f"sent #{message.message_id}")
            elif options["action"] == "voice":
                message = sandbox_voice(
                    agent=agent,
                    path=options["file"],
                    as_name=options["as_name"],
                    group=options["group"],
                    reply_to=options["reply_to"],
                )
                self.stdout.write(f"sent #{message.message_id} (voice {message.media[0]['duration']:.1f} s)")
            elif options["action"] == "file":
                message = sandbox_file(
                    agent=agent,
                    path=options["file"],
                    kind=options["kind"],
                    as_name=options["as_name"],
                    group=options["group"],
                    reply_to=options["reply_to"],
                    caption=options["caption"],
                )
                part = message.media[0]
                self.stdout.write(f"sent #{message.message_id} ({_media_words(part)})")
            elif options["action"] == "typing":
                sandbox_typing(agent=agent, as_name=options["as_name"], seconds=options["seconds"])
                self.stdout.write(f"{options['as_name']} is typing for {options['seconds']:g} s")
            elif options["action"] == "rights":
                how = "" if options["cannot_write"] == "none" else options["cannot_write"]
                chat = sandbox_set_rights(agent=agent, group=options["group"], cannot_write=how)
                self.stdout.write(f"{agent.name} in {chat.title}: {how or 'may write'}")
            elif options["action"] == "react":
                sandbox_react(
                    agent=agent,
                    message_id=options["message_id"],
                    emoji=options["emoji"],
                    as_name=options["as_name"],
                    group=options["group"],
                )
            elif options["action"] == "mark-unread":
                chat = sandbox_mark_unread(agent=agent, as_name=options["as_name"], group=options["group"])
                self.stdout.write(f"marked {chat} unread for {agent.name}")
            else:
                lines = sandbox_transcript(
                    agent=agent,
                    as_name=options["as_name"],
                    group=options["group"],
                    with_ids=options["ids"],
                    topic=options["topic"],
                )
                for line in lines:
                    self.stdout.write(line)
                if not lines:
                    self.stdout.write("no messages")
        except SandboxError as exc:
            raise CommandError(str(exc)) from exc


def _media_words(part: dict) -> str:
    kind = part["media_kind"]
    if part.get("sticker_format") == "animated":
        kind = "animated sticker"
    return f"{kind} {part['mime']}, {part['size']:,} bytes"


# Telegram refuses a text message longer than this many characters.
TELEGRAM_MAX_MESSAGE_CHARS = 4096


def _check_texts(texts: list[str]) -> None:
    """Refuse every text Telegram would refuse, before any is sent (so none is sent half-way)."""
    for number, text in enumerate(texts, start=1):
        which = f"TEXT {number}" if len(texts) > 1 else "the text"
        if not text.strip():
            raise CommandError(f"{which} is empty or only whitespace: write something to send")
        if len(text) > TELEGRAM_MAX_MESSAGE_CHARS:
            raise CommandError(
                f"{which} is {len(text):,} characters; Telegram accepts at most {TELEGRAM_MAX_MESSAGE_CHARS:,} "
                "in one message: split it into several TEXT arguments"
            )
