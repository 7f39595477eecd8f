"""`manage.py sandbox say|typing|react|rights|show`: talk to an agent on the sandbox transport from a shell.

`say --user-id 777000` writes as Telegram's service account, `say --bot --as NAME` as a bot;
`typing AGENT --as USER [--seconds N]` types in the DM, which holds the agent's reply;
`rights AGENT --group TITLE --cannot-write restricted|read_only|banned|none` sets what an admin allows
the agent in a group (a callout where it cannot write starts no turn)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from agents.models import Agent
from conversations.services.sandbox import (
    CANNOT_WRITE_CHOICES,
    SandboxError,
    sandbox_react,
    sandbox_say,
    sandbox_set_rights,
    sandbox_transcript,
    sandbox_typing,
)


class Command(BaseCommand):
    help = "Send messages or reactions to an agent on the sandbox, or print a sandbox chat."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        say = sub.add_parser("say", help="send each TEXT as one message, in order")
        say.add_argument("agent")
        say.add_argument("texts", nargs="+", metavar="TEXT")
        say.add_argument("--as", dest="as_name", default=None, metavar="NAME", help="default: You")
        say.add_argument("--group", metavar="TITLE")
        say.add_argument("--reply-to", type=int, metavar="ID")
        say.add_argument(
            "--user-id",
            type=int,
            metavar="N",
            help="write as the user with this Telegram id, e.g. 777000 (Telegram's service account)",
        )
        say.add_argument("--bot", action="store_true", help="the sender is a bot account")

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

        rights = sub.add_parser("rights", help="set the agent's right to write in a group, as its admin")
        rights.add_argument("agent")
        rights.add_argument("--group", metavar="TITLE", required=True)
        rights.add_argument("--cannot-write", required=True, choices=[*CANNOT_WRITE_CHOICES, "none"])

        show = sub.add_parser("show", help="print the chat, one message per line as SENDER: text")
        show.add_argument("agent")
        show.add_argument("--as", dest="as_name", default="You", metavar="NAME")
        show.add_argument("--group", metavar="TITLE")
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
                    )
                    reply_to = None  # only the first message is the reply
                    self.stdout.write(f"sent #{message.message_id}")
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
            else:
                lines = sandbox_transcript(
                    agent=agent, as_name=options["as_name"], group=options["group"], with_ids=options["ids"]
                )
                for line in lines:
                    self.stdout.write(line)
                if not lines:
                    self.stdout.write("no messages")
        except SandboxError as exc:
            raise CommandError(str(exc)) from exc


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
