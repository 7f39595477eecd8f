"""The permissions that guard the sandbox chat, for the dashboard page and the REST API alike."""

from __future__ import annotations

#: Reading a sandbox chat.
SANDBOX_VIEW = "sandbox.view_sandboxmessage"
#: Starting a chat, writing and reacting in it act as a person in the sandbox.
SANDBOX_WRITE = "sandbox.add_sandboxmessage"
