/* The task log page: while a translation runs on the workers, fetch the cached translations every
 * second and show each under its message (textContent only), until none is missing. */
"use strict";

(function () {
  const panel = document.getElementById("log-panel");
  if (!panel || !panel.dataset.language || Number(panel.dataset.missing) === 0) return;
  const status = document.getElementById("translation-status");
  const url = panel.dataset.translationsUrl + "?lang=" + encodeURIComponent(panel.dataset.language);
  let tries = 0;

  function show(data) {
    for (const [id, text] of Object.entries(data.translations)) {
      const node = panel.querySelector('.translation[data-message-id="' + CSS.escape(id) + '"]');
      if (node) { node.textContent = text; node.hidden = false; }
    }
    status.textContent = data.missing
      ? "Translating into " + panel.dataset.language + ": " + data.missing + " to go…"
      : "Shown with their " + panel.dataset.language + " translation.";
    return data.missing === 0;
  }

  function poll() {
    tries += 1;
    fetch(url, { credentials: "same-origin" })
      .then(function (response) { return response.json(); })
      .then(function (data) {
        if (!show(data) && tries < 300) setTimeout(poll, 1000);
      })
      .catch(function () { if (tries < 300) setTimeout(poll, 2000); });
  }
  setTimeout(poll, 500);
})();
