"""Telegram Desktop's "Export chat history" JSON (`result.json`), brought into an agent's mirror.

`reading` turns the file into JSON under the size and nesting caps, `messages` and `chats` check
and read its shape into plain records, and `importing` writes them to the agent's conversation in
batches (docs/importing.md). `manage.py importchat` drives them.
"""
