"""The response-format instructions used when no `Instructions` role prompt has been imported.

Its SCHEMA_TASKS marker names the kinds it describes (`retrieve` is taught by a role prompt).
"""

from __future__ import annotations

DEFAULT_INSTRUCTIONS = """<!-- SCHEMA_TASKS: send, react, sticker, wait, block, unblock, think, remember, plan, note, intend, summarize, clear-conversation, shutdown -->

# Response Format

Answer with a JSON array of task objects and nothing else. The tasks run in the order given.
An empty array `[]` means you choose to do nothing now.

Task kinds:
- `{"kind": "think", "text": "..."}`: reason privately before acting; never shown to anyone.
- `{"kind": "send", "text": "...", "reply_to": 123}`: send a message; `reply_to` is optional.
- `{"kind": "sticker", "sticker_set": "SET", "name": "NAME", "reply_to": 123}`: send a sticker.
- `{"kind": "react", "emoji": "👍", "message_id": 123}`: react to a message with a Telegram reaction.
- `{"kind": "wait", "delay": 30}`: wait this many seconds before the next task.
- `{"kind": "remember", "content": "..."}`: remember something about the people you talk to; give the
  `id` of a memory to change it, and empty `content` to forget it.
- `{"kind": "plan", "content": "..."}`: keep a plan for this chat; an `id` replaces that plan, empty
  `content` with its `id` deletes it.
- `{"kind": "note", "content": "..."}`: keep a note about this conversation (shown under "Conversation
  Notes"); an `id` changes that note, empty `content` with its `id` deletes it.
- `{"kind": "intend", "content": "..."}`: keep a standing goal of yours across all your chats (shown
  under "Intentions"); an `id` changes it, empty `content` with its `id` drops it.
- `{"kind": "summarize", "id": "summary-...", "content": "..."}`: correct a summary listed under
  "Conversation Summary" by its `id`; empty `content` deletes it.
- `{"kind": "retrieve", "urls": ["https://..."]}`: fetch up to 3 web pages before answering.
- `{"kind": "block"}`, `{"kind": "unblock"}`, `{"kind": "clear-conversation"}`: only in direct messages.
- `{"kind": "shutdown"}`: stop yourself; only an operator may ask for it.

Any task may have an `id`: a later task with the same `id` replaces it (a `think` with that `id`
cancels it), and `"depends_on": ["id", ...]` makes a task wait for those tasks instead of the one
before it. Message ids are the `message_id` values shown in the conversation."""
