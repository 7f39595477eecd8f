/* The dashboard socket with reconnect, and a tiny DOM helper.
 *
 * Every piece of data (names, titles, texts, errors) goes into the page through textContent or
 * attributes set one by one: never through innerHTML, so nothing from Telegram or an LLM can run.
 */
"use strict";

window.Cindy = (function () {
  function el(tag, options, children) {
    const node = document.createElement(tag);
    const opts = options || {};
    if (opts.className) node.className = opts.className;
    if (opts.text !== undefined && opts.text !== null) node.textContent = String(opts.text);
    if (opts.title) node.title = String(opts.title);
    if (opts.attrs) {
      for (const [name, value] of Object.entries(opts.attrs)) node.setAttribute(name, String(value));
    }
    for (const child of children || []) {
      if (child !== null && child !== undefined) node.appendChild(child);
    }
    return node;
  }

  /* Times are written as the admin writes them (cindy_site/formats/en/formats.py): "2026-11-29 14:03",
   * in the installation's TIME_ZONE (the page's data-time-zone), whatever the browser's own zone. */
  const TIME_ZONE = document.documentElement.dataset.timeZone || "UTC";
  const PARTS = new Intl.DateTimeFormat("en-US", {
    timeZone: TIME_ZONE, hourCycle: "h23",
    year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit",
  });

  function zonedParts(iso) {
    if (!iso) return null;
    const date = new Date(iso);
    if (isNaN(date.getTime())) return null;
    const parts = {};
    for (const part of PARTS.formatToParts(date)) parts[part.type] = part.value;
    return parts;
  }

  /* The time of day, with seconds: the activity stream's and the chat's lines. */
  function formatTime(iso) {
    const p = zonedParts(iso);
    if (!p) return iso ? String(iso) : "—";
    return p.hour + ":" + p.minute + ":" + p.second;
  }

  /* A date and time: DATETIME_FORMAT, "Y-m-d H:i" ("Y-m-d H:i:s" with `seconds`). */
  function formatDateTime(iso, seconds) {
    const p = zonedParts(iso);
    if (!p) return iso ? String(iso) : "—";
    return p.year + "-" + p.month + "-" + p.day + " " + p.hour + ":" + p.minute + (seconds ? ":" + p.second : "");
  }

  const NODE_COLUMNS = ["#", "Kind", "Status", "Attempts", "Next run", "Details"];

  /* A node's row, and under it, across the whole table, its error: an error column beside the
   * others was too narrow to read (words cut into pieces) or pushed the table past its panel. */
  function nodeRows(node) {
    const row = el("tr", { className: "node status-" + node.status, attrs: { "data-node-id": node.id } }, [
      el("td", { className: "num", text: node.sequence }),
      el("td", { className: "mono", text: node.kind }),
      el("td", {}, [el("span", { className: "badge status-" + node.status, text: node.status })]),
      el("td", { className: "num", text: node.attempts }),
      el("td", { text: node.status === "pending" ? formatDateTime(node.not_before, true) : "—" }),
      el("td", { className: "params", text: describeParams(node.params) }),
    ]);
    if (!node.error) return [row];
    row.classList.add("has-error");
    return [row, el("tr", { className: "node-error", attrs: { "data-node-id": node.id } }, [
      el("td", { className: "error", text: node.error, attrs: { colspan: NODE_COLUMNS.length } }),
    ])];
  }

  function describeParams(params) {
    if (!params) return "";
    if (params.text) return params.text;
    if (params.emoji) return params.emoji;
    if (params.name) return (params.sticker_set ? params.sticker_set + " · " : "") + params.name;
    if (params.delay !== undefined) return params.delay + " s";
    return "";
  }

  function conversationCard(conversation) {
    const graph = conversation.graph;
    const header = el("header", {}, [
      el("span", { className: "strong", text: conversation.agent }),
      el("span", { className: "arrow", text: "↔" }),
      el("span", { className: "title", text: conversation.title }),
      el("span", { className: "badge info", text: conversation.kind }),
      conversation.muted ? el("span", { className: "badge off", text: "muted" }) : null,
      conversation.blocked ? el("span", { className: "badge bad", text: "blocked" }) : null,
      el("span", { className: "when", text: formatDateTime(conversation.last_message_at) }),
      el("a", { className: "seen", text: "what the agent sees", attrs: { href: "/dashboard/conversations/" + Number(conversation.id) + "/" } }),
    ]);
    let body;
    if (!graph) {
      body = el("p", { className: "empty", text: "No task graph yet." });
    } else {
      body = el("div", { className: "graph" }, [
        el("div", { className: "graph-meta" }, [
          el("span", { text: "Graph " + graph.id }),
          el("span", { className: "badge status-" + graph.status, text: graph.status }),
          graph.trigger ? el("span", { className: "muted", text: "trigger: " + graph.trigger }) : null,
        ]),
        el("table", { className: "table nodes" }, [
          el("thead", {}, [el("tr", {}, NODE_COLUMNS.map(function (h) {
            return el("th", { text: h, className: h === "#" || h === "Attempts" ? "num" : "" });
          }))]),
          el("tbody", {}, graph.nodes.flatMap(nodeRows)),
        ]),
      ]);
    }
    return el("article", { className: "conversation", attrs: { "data-conversation-id": conversation.id } }, [header, body]);
  }

  function eventItem(event) {
    return el("li", { className: "event kind-" + event.kind, attrs: { "data-event-id": event.id } }, [
      el("time", { text: formatTime(event.created), title: event.created }),
      el("span", { className: "kind", text: event.kind.replace(/_/g, " ") }),
      event.agent ? el("span", { className: "agent", text: event.agent }) : null,
      el("span", { className: "summary", text: event.summary }),
    ]);
  }

  /* The activity list: newest first, each event id once, and an event that arrives after newer
   * ones (ids become visible in commit order, not id order) is inserted where its id belongs
   * instead of being dropped. The ids already seen are remembered in a bounded set.
   * options: max (items kept in the list), accept(event) (whether to show it; default all). */
  const SEEN_LIMIT = 2000;

  function eventList(list, options) {
    const max = options.max || 300;
    const accept = options.accept || function () { return true; };
    const seen = new Set();
    const seenOrder = [];
    let lastId = 0;

    function remember(id) {
      seen.add(id);
      seenOrder.push(id);
      while (seenOrder.length > SEEN_LIMIT) seen.delete(seenOrder.shift());
    }

    function show(event) {
      let before = null;
      for (const child of list.children) {
        if (Number(child.dataset.eventId) < event.id) { before = child; break; }
      }
      if (before === null && list.children.length >= max) return; // older than all it keeps
      list.insertBefore(eventItem(event), before);
      while (list.children.length > max) list.lastElementChild.remove();
    }

    /* Returns false for an event already seen. */
    function add(event) {
      if (seen.has(event.id)) return false;
      remember(event.id);
      lastId = Math.max(lastId, event.id);
      if (accept(event)) show(event);
      return true;
    }

    /* Replaces the list (after a reconnect that missed too much). */
    function reset(events) {
      list.replaceChildren();
      for (const event of events) add(event);
    }

    return {
      add: add, reset: reset, show: show,
      lastId: function () { return lastId; },
      noteLastId: function (id) { lastId = Math.max(lastId, id || 0); },
    };
  }

  /* The longest wait between two attempts to reconnect: once the server answers again (a restart,
   * a network that came back), an open page is live again within this. */
  const MAX_RECONNECT_DELAY = 2000;

  /* Connects to /ws/dashboard/, says hello with the last event id seen, and reconnects with
   * backoff (0.5 s, doubling, at most MAX_RECONNECT_DELAY), at once when the page is shown again or
   * the browser is back online. `options.lastEventId()` is asked at every (re)connect so a
   * reconnect catches up. */
  function connect(options) {
    const status = document.getElementById("live-status");
    let delay = 500;
    let socket = null;
    let retry = null;

    function retryNow() {
      if (retry === null) return;
      window.clearTimeout(retry);
      retry = null;
      open();
    }
    document.addEventListener("visibilitychange", function () {
      if (document.visibilityState === "visible") retryNow();
    });
    window.addEventListener("online", retryNow);

    function setStatus(state, label) {
      if (!status) return;
      status.dataset.state = state;
      status.textContent = label;
    }

    function open() {
      const scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
      socket = new WebSocket(scheme + window.location.host + "/ws/dashboard/");
      setStatus("connecting", "connecting…");
      socket.addEventListener("open", function () {
        delay = 500;
        setStatus("live", "live");
        socket.send(JSON.stringify({
          type: "hello",
          last_event_id: options.lastEventId(),
          sandbox_chat_id: options.sandboxChatId || null,
        }));
      });
      socket.addEventListener("message", function (message) {
        let data;
        try { data = JSON.parse(message.data); } catch (e) { return; }
        options.onMessage(data);
      });
      socket.addEventListener("close", function (event) {
        if (event.code === 4403) {
          setStatus("refused", "signed out: reload to log in");
          return;
        }
        setStatus("offline", "reconnecting…");
        retry = window.setTimeout(function () { retry = null; open(); }, delay);
        delay = Math.min(delay * 2, MAX_RECONNECT_DELAY);
      });
    }

    open();
    return { close: function () { if (socket) socket.close(); } };
  }

  return {
    el: el, connect: connect, formatTime: formatTime, formatDateTime: formatDateTime,
    conversationCard: conversationCard, eventItem: eventItem, eventList: eventList,
  };
})();
