"""Signals other apps listen to, so that `agents` needs to know nothing about them."""

from __future__ import annotations

from django.dispatch import Signal

#: Sent after an operator starts an agent again. Arguments: `agent`, `by` (who did it),
#: `was` (what had kept it from running: "disabled", "stopped", or the error that stopped it).
agent_restarted = Signal()

#: Sent after a `GatewayRequest` is written, inside the writer's transaction, so that idle gateways
#: can be woken to run it at once rather than at their next tick. Argument: `request`.
gateway_request_created = Signal()

#: Sent after an operator saved an agent whose spend limits changed (daily cap, turns per partner per
#: minute or per day), so that turns a spend brake holds are looked at again at once rather than at the
#: brake's next check. Argument: `agent`.
spend_limits_changed = Signal()

#: Sent inside the transaction that saved an agent whose timezone changed. Arguments: `agent` (as
#: saved), `before` (the old timezone), `change` (a `TimezoneChange` value; "" when the agent held
#: nothing in its local time), `bound` (what it held, e.g. ["2 future events"]) and `by` (who).
#: `memory` moves the records as chosen, `conversations` records the change in the activity stream.
agent_timezone_changed = Signal()
