/* The sandbox chat: the transcript, the agent's typing, its task graph and activity, live from the
 * dashboard socket; sending and reacting through the JSON endpoints. Data only ever goes through
 * textContent (see Cindy.el). */
"use strict";

(function () {
  const { el, formatTime, conversationCard, eventList } = window.Cindy;
  const config = JSON.parse(document.getElementById("sandbox-config").textContent);
  const transcript = document.getElementById("transcript");
  const composer = document.getElementById("composer");
  const errors = document.getElementById("send-errors");
  const messages = new Map();
  let conversationId = config.conversation_id;
  let typingTimer = null;

  function csrfToken() {
    return composer.querySelector("input[name=csrfmiddlewaretoken]").value;
  }

  function mediaView(part) {
    if (part.media_kind === "photo") {
      const box = el("div", { className: "media", text: "photo" });
      if (part.url) box.appendChild(el("img", { attrs: { src: part.url, alt: "photo" } }));
      return box;
    }
    if (part.media_kind === "voice") {
      const length = typeof part.duration === "number" ? " " + part.duration.toFixed(1) + " s" : "";
      const box = el("div", { className: "media voice", text: "voice" + length });
      if (part.url) box.appendChild(el("audio", { attrs: { src: part.url, controls: "", preload: "metadata", "aria-label": "voice note" + length } }));
      if (part.transcript) box.appendChild(el("div", { className: "voice-says", text: part.transcript }));
      return box;
    }
    if (part.media_kind === "sticker") {
      return el("div", { className: "media", text: "sticker " + (part.sticker_name || "?") + (part.sticker_set_name ? " · " + part.sticker_set_name : "") });
    }
    return el("div", { className: "media", text: part.media_kind || "media" });
  }

  function bubble(message) {
    const mine = !message.from_agent && message.sender_user_id === config.my_user_id;
    const parts = [el("div", { className: "sender", text: message.sender })];
    if (message.reply_to_id) {
      const quoted = messages.get(message.reply_to_id);
      parts.push(el("div", { className: "quote", text: quoted ? quoted.sender + ": " + (quoted.text || "(media)") : "reply to #" + message.reply_to_id }));
    }
    for (const part of message.media || []) parts.push(mediaView(part));
    if (message.deleted) parts.push(el("div", { className: "text muted", text: "(deleted)" }));
    else if (message.text) parts.push(el("div", { className: "text", text: message.text }));
    if (message.reactions && message.reactions.length) {
      parts.push(el("div", { className: "reactions" }, message.reactions.map(function (r) {
        return el("span", { text: r.emoji + " " + r.count });
      })));
    }
    const picker = el("span", { className: "react-picker", attrs: { hidden: "" } }, config.reactions.map(function (emoji) {
      const button = el("button", { text: emoji, attrs: { type: "button", "aria-label": "react " + emoji } });
      button.addEventListener("click", function () { react(message.message_id, emoji); picker.hidden = true; });
      return button;
    }));
    const replyButton = el("button", { className: "link", text: "Reply", attrs: { type: "button" } });
    replyButton.addEventListener("click", function () { startReply(message); });
    const reactButton = el("button", { className: "link", text: "React", attrs: { type: "button" } });
    reactButton.addEventListener("click", function () { picker.hidden = !picker.hidden; });
    parts.push(el("div", { className: "meta" }, [
      el("span", { text: "#" + message.message_id }),
      el("time", { text: formatTime(message.date), title: message.date }),
      replyButton, reactButton, picker,
    ]));
    return el("div", {
      className: "bubble" + (mine ? " mine" : "") + (message.from_agent ? " agent" : ""),
      attrs: { "data-message-id": message.message_id },
    }, parts);
  }

  function upsertMessage(message) {
    if (message.chat_id !== config.chat_id) return;
    // In a forum the page shows one topic (General: no topic); each is a chat of its own.
    if (config.forum && (message.topic_id || null) !== (config.topic_id || null)) return;
    const atBottom = transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 40;
    messages.set(message.message_id, message);
    const node = bubble(message);
    const existing = transcript.querySelector('[data-message-id="' + message.message_id + '"]');
    if (existing) {
      existing.replaceWith(node);
    } else {
      let before = null;
      for (const child of transcript.children) {
        if (Number(child.dataset.messageId) > message.message_id) { before = child; break; }
      }
      transcript.insertBefore(node, before);
    }
    if (atBottom || !existing) transcript.scrollTop = transcript.scrollHeight;
  }

  function showTyping(names) {
    const others = names.filter(function (name) { return name !== config.as_name; });
    const box = document.getElementById("typing");
    box.textContent = others.length ? others.join(", ") + (others.length > 1 ? " are" : " is") + " typing…" : "";
    window.clearTimeout(typingTimer);
    // Telegram shows typing for about six seconds unless renewed; so does the page.
    if (others.length) typingTimer = window.setTimeout(function () { box.textContent = ""; }, 6500);
  }

  function showGraph(conversation) {
    if (!conversation || conversation.agent_id !== config.agent_id || conversation.peer_id !== config.peer_id) return;
    if ((conversation.topic_id || 0) !== (config.topic_id || 0)) return;  // another topic of the forum
    const first = !conversationId;
    conversationId = conversation.id;
    document.getElementById("graph").replaceChildren(conversationCard(conversation));
    if (first) {
      for (const event of pending.splice(0)) {
        if (event.conversation_id === conversationId) activity.show(event);
      }
    }
  }

  // Events seen before the conversation is known (its first message creates it) wait here.
  const pending = [];
  const activity = eventList(document.getElementById("activity"), {
    max: 300,
    accept: function (event) {
      if (!conversationId) {
        pending.push(event);
        if (pending.length > 200) pending.shift();
        return false;
      }
      return event.conversation_id === conversationId;
    },
  });

  function resetEvents(events) {
    pending.length = 0;
    activity.reset(events);
  }

  function showErrors(data) {
    const list = [];
    for (const [field, messagesForField] of Object.entries(data.errors || {})) {
      for (const message of messagesForField) {
        list.push(el("li", { text: (field === "__all__" ? "" : field.replace(/_/g, " ") + ": ") + message }));
      }
    }
    errors.replaceChildren(...list);
  }

  async function post(url, form) {
    let response;
    try {
      response = await fetch(url, {
        method: "POST", body: form, credentials: "same-origin",
        headers: { "X-CSRFToken": csrfToken() },
      });
    } catch (e) {
      showErrors({ errors: { __all__: ["The server cannot be reached: check that it runs, then try again."] } });
      return null;
    }
    let data;
    try { data = await response.json(); } catch (e) {
      showErrors({ errors: { __all__: ["The server answered " + response.status + " " + response.statusText + "."] } });
      return null;
    }
    if (!data.ok) { showErrors(data); return null; }
    errors.replaceChildren();
    upsertMessage(data.message);
    return data;
  }

  function baseForm() {
    const form = new FormData();
    form.append("agent", config.agent_id);
    form.append("as_name", config.as_name);
    form.append("group", config.group);
    form.append("topic", config.topic || "");
    return form;
  }

  function react(messageId, emoji) {
    const form = baseForm();
    form.append("message_id", messageId);
    form.append("emoji", emoji);
    post(composer.dataset.reactUrl, form);
  }

  function startReply(message) {
    document.getElementById("reply-to").value = message.message_id;
    document.getElementById("replying-text").textContent = "Replying to " + message.sender + ": " + (message.text || "(media)").slice(0, 80);
    document.getElementById("replying").hidden = false;
    document.getElementById("message-text").focus();
  }

  function cancelReply() {
    document.getElementById("reply-to").value = "";
    document.getElementById("replying").hidden = true;
  }

  composer.dataset.reactUrl = composer.action.replace(/send\/$/, "react/");
  composer.dataset.typingUrl = composer.action.replace(/send\/$/, "typing/");

  // Typing in a direct message is signalled to the agent, as Telegram's apps do: one update when
  // typing starts, renewed while it goes on (an update lasts about six seconds), and a stop when the
  // box is emptied. Sending ends typing by itself.
  let typingSentAt = 0;
  function signalTyping(typing) {
    if (config.group) return;
    const form = baseForm();
    if (typing) form.append("typing", "on");
    typingSentAt = typing ? Date.now() : 0;
    fetch(composer.dataset.typingUrl, {
      method: "POST", body: form, credentials: "same-origin",
      headers: { "X-CSRFToken": csrfToken() },
    }).catch(function () { /* cosmetic: the message itself still goes through the composer */ });
  }
  document.getElementById("message-text").addEventListener("input", function (event) {
    if (!event.target.value.trim()) { if (typingSentAt) signalTyping(false); return; }
    if (Date.now() - typingSentAt > 4000) signalTyping(true);
  });
  document.getElementById("cancel-reply").addEventListener("click", cancelReply);
  const mention = document.getElementById("mention");
  if (mention) {
    mention.addEventListener("click", function () {
      const text = document.getElementById("message-text");
      text.value = "@" + config.agent_handle + " " + text.value;
      text.focus();
    });
  }
  composer.addEventListener("submit", async function (event) {
    event.preventDefault();
    const button = document.getElementById("send");
    button.disabled = true;
    try {
      const data = await post(composer.action, new FormData(composer));
      if (data) {
        typingSentAt = 0;
        document.getElementById("message-text").value = "";
        document.getElementById("photo").value = "";
        document.getElementById("sticker").value = "";
        cancelReply();
      }
    } finally {
      button.disabled = false;
    }
  });
  document.getElementById("message-text").addEventListener("keydown", function (event) {
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); composer.requestSubmit(); }
  });

  if (config.conversation) showGraph(config.conversation);
  for (const event of config.events || []) activity.add(event);
  activity.noteLastId(config.last_event_id);

  window.Cindy.connect({
    sandboxChatId: config.chat_id,
    lastEventId: activity.lastId,
    onMessage: function (data) {
      switch (data.type) {
        case "sandbox_history":
          for (const message of data.messages) upsertMessage(message);
          showTyping(data.typing);
          break;
        case "sandbox_message": upsertMessage(data.message); break;
        case "sandbox_typing": if (data.chat_id === config.chat_id) showTyping(data.typing); break;
        case "event": activity.add(data.event); break;
        case "events_reset": resetEvents(data.events); break;
        case "conversation": showGraph(data.conversation); break;
        case "snapshot":
          for (const conversation of data.conversations) showGraph(conversation);
          break;
      }
    },
  });
})();
