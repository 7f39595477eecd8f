/* The dashboard: renders agents, usage, conversations with their task graphs, and the activity
 * stream from the embedded initial state, then keeps them current from the socket. */
"use strict";

(function () {
  const { el, formatDateTime, conversationCard, eventList } = window.Cindy;
  const initial = JSON.parse(document.getElementById("dashboard-initial").textContent);
  const MAX_EVENTS = 300;
  const events = eventList(document.getElementById("activity"), { max: MAX_EVENTS });
  const conversations = new Map();

  function agentState(agent) {
    const badges = [];
    // Whether a gateway drives the agent now (its lease), not the status Telegram shows its contacts:
    // that one is the activity stream's "shown online on Telegram" / "shown offline on Telegram".
    badges.push(el("span", {
      className: "badge " + (agent.online ? "ok" : "off"),
      text: agent.online ? "connected" : "not connected",
      title: agent.online ? "A gateway drives it: " + agent.gateway : "No gateway drives it now: nothing is answered",
    }));
    if (agent.stopped) badges.push(el("span", { className: "badge bad", text: "stopped" }));
    if (agent.disabled) badges.push(el("span", { className: "badge off", text: "disabled" }));
    if (agent.asleep_until) {
      badges.push(el("span", { className: "badge info", text: "asleep", title: "until " + formatDateTime(agent.asleep_until) }));
    }
    if (agent.transport === "sandbox") badges.push(el("span", { className: "badge info", text: "sandbox" }));
    return el("td", { className: "badges" }, badges);
  }

  function agentPlans(agent) {
    const lines = [];
    if (agent.activity) {
      lines.push(el("div", {
        className: "activity-now",
        text: agent.activity.name + " until " + formatDateTime(agent.activity.until) + " · responsiveness " + agent.activity.responsiveness,
        title: agent.activity.description || "",
      }));
    }
    (agent.next_events || []).forEach(function (event) {
      lines.push(el("div", { className: "next-event", text: "⏰ " + formatDateTime(event.due) + " " + event.intent }));
    });
    return el("td", {}, lines.length ? lines : [el("span", { text: "—" })]);
  }

  function agentProblems(agent) {
    // The last error, then the configuration problems the agent runs with anyway (each with its fix).
    const lines = [];
    if (agent.last_error) lines.push(el("div", { text: agent.last_error, title: agent.last_error_at || "" }));
    (agent.notices || []).forEach(function (notice) {
      lines.push(el("div", { className: "notice", text: "⚠ " + notice }));
    });
    return el("td", { className: "error" }, lines);
  }

  function renderAgents(agents) {
    const body = document.querySelector("#agents-table tbody");
    body.replaceChildren(...agents.map(function (agent) {
      return el("tr", { attrs: { "data-agent-id": agent.id } }, [
        el("td", { className: "strong" }, [
          el("a", { text: agent.name, title: "Its conversations and a search of its past", attrs: { href: "/dashboard/agents/" + Number(agent.id) + "/" } }),
        ]),
        agentState(agent),
        agentPlans(agent),
        el("td", { className: "mono", text: agent.gateway || "—" }),
        el("td", { text: formatDateTime(agent.last_heartbeat) }),
        agentProblems(agent),
      ]);
    }));
    document.getElementById("agents-empty").hidden = agents.length > 0;
  }

  function renderUsage(rows) {
    const body = document.querySelector("#usage-table tbody");
    body.replaceChildren(...rows.map(function (row) {
      return el("tr", {}, [
        el("td", { className: "strong", text: row.agent }),
        el("td", { className: "num", text: row.calls }),
        el("td", { className: "num", text: row.input_tokens }),
        el("td", { className: "num", text: row.cached_tokens }),
        el("td", { className: "num", text: row.cached_share }),
        el("td", { className: "num", text: row.output_tokens }),
        el("td", { className: "num", text: row.cost }),
        el("td", { className: "num", text: row.saved, title: "of which explicit caches: " + row.explicit_saved }),
      ]);
    }));
    document.getElementById("usage-empty").hidden = rows.length > 0;
  }

  function renderConversations() {
    const sorted = Array.from(conversations.values()).sort(function (a, b) {
      return (b.last_message_at || "").localeCompare(a.last_message_at || "") || b.id - a.id;
    });
    document.getElementById("conversations").replaceChildren(...sorted.map(conversationCard));
    document.getElementById("conversations-empty").hidden = sorted.length > 0;
  }

  function setConversations(rows) {
    conversations.clear();
    for (const row of rows) conversations.set(row.id, row);
    renderConversations();
  }

  renderAgents(initial.agents);
  renderUsage(initial.usage);
  setConversations(initial.conversations);
  for (const event of initial.events) events.add(event);
  events.noteLastId(initial.last_event_id);

  window.Cindy.connect({
    lastEventId: events.lastId,
    onMessage: function (data) {
      switch (data.type) {
        case "event": events.add(data.event); break;
        case "events_reset": events.reset(data.events); break;
        case "snapshot":
          renderAgents(data.agents);
          renderUsage(data.usage);
          setConversations(data.conversations);
          break;
        case "agents": renderAgents(data.agents); break;
        case "usage": renderUsage(data.usage); break;
        case "conversation":
          conversations.set(data.conversation.id, data.conversation);
          renderConversations();
          break;
      }
    },
  });
})();
