// Outpost dashboard, a server's console: progressive enhancement of the server page. Without this
// file the command form posts and the page comes back with the output; with it, the live output
// streams in (server-sent events), commands run without leaving the page, and the players list
// follows the player count.
// The whole file is one function called at once, which keeps its names out of the page's global
// scope (a plain script under the CSP, no module loader); the functions inside stay small.
"use strict";

(function () {
  var panel = document.querySelector("[data-console-events]");
  if (!panel) return;
  var live = document.getElementById("console-live");
  var state = document.getElementById("console-state");
  var results = document.getElementById("console-results");
  var form = panel.querySelector("form[data-console-form]");
  var input = document.getElementById("console-command");
  var maxLines = 500;
  var maxResults = 20;

  function element(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function setState(text) {
    if (state.textContent !== text) state.textContent = text;
  }

  // Live output. `recent` (the first event of each connection) replaces what is shown, so a
  // reconnect does not repeat lines; `lines` appends.
  function showLines(data, replace) {
    var atBottom = live.scrollHeight - live.scrollTop - live.clientHeight < 24;
    if (replace) live.replaceChildren();
    var placeholder = live.querySelector("[data-placeholder]");
    if (placeholder && (data.lines.length || data.dropped)) placeholder.remove();
    if (data.dropped) live.appendChild(element("div", "console-note", "… " + data.dropped + " lines not shown"));
    data.lines.forEach(function (line) {
      live.appendChild(element("div", "console-line", line));
    });
    if (!live.firstChild) live.appendChild(element("div", "console-note", "No output yet.")).setAttribute("data-placeholder", "");
    while (live.childNodes.length > maxLines) live.firstChild.remove();
    if (atBottom || replace) live.scrollTop = live.scrollHeight;
    if (!data.online) setState("The server is offline: commands are refused until its agent connects.");
    else if (panel.getAttribute("data-console") === "yes") setState("Connected: commands run on the game server's console as an operator's would.");
    else setState("This server's agent cannot reach the game's console. Reload the page after restarting it with a console.");
  }

  // The stream is open only while the tab is visible: over HTTP/1.1 each open stream holds one of
  // the browser's six connections to this host, so hidden console tabs would stall the dashboard.
  // Reopened when the tab shows again, its `recent` event brings the page up to date. A refusal
  // (signed out, no access, too many consoles) comes as a `refused` event with why: it stays closed.
  var eventsUrl = panel.getAttribute("data-console-events");
  var source = null;
  var refused = false;
  function openStream() {
    if (source || refused || typeof EventSource !== "function") return;
    var stream = new EventSource(eventsUrl);
    source = stream;
    stream.addEventListener("recent", function (event) {
      showLines(JSON.parse(event.data), true);
    });
    stream.addEventListener("lines", function (event) {
      showLines(JSON.parse(event.data), false);
    });
    stream.addEventListener("unavailable", function () {
      setState("The live output was interrupted. Reconnecting…");
    });
    stream.addEventListener("refused", function (event) {
      var message = JSON.parse(event.data).message;
      refused = true;
      closeStream();
      setState(message);
      live.appendChild(element("div", "console-note", message));
      live.scrollTop = live.scrollHeight;
    });
    stream.addEventListener("error", function () {
      if (stream.readyState === EventSource.CLOSED && source === stream) setState("The live output is not available. Reload the page to try again.");
    });
  }
  function closeStream() {
    if (source) source.close();
    source = null;
  }
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "hidden") closeStream();
    else openStream();
  });
  window.addEventListener("pagehide", closeStream);
  window.addEventListener("pageshow", function () {
    if (document.visibilityState !== "hidden") openStream();
  });
  if (document.visibilityState !== "hidden") openStream();

  // Commands: the same form, posted with fetch; the answer goes under "Command output".
  // A command with no answer (504, or the connection failed) may still have run: not "Refused".
  function badge(answer) {
    if (answer.status === 504 || answer.status === 0) return "No answer";
    return answer.status ? "Refused" : "Not run";
  }
  function addResult(command, answer) {
    var empty = results.querySelector("[data-console-empty]");
    if (empty) empty.remove();
    var entry = element("div", "console-result");
    var head = element("p", "console-command");
    head.appendChild(element("span", "mono", "› " + command));
    head.appendChild(document.createTextNode(" "));
    var ran = answer.success === true;
    head.appendChild(element("span", "status " + (ran ? "online" : "offline"), ran ? "Ran" : badge(answer)));
    entry.appendChild(head);
    if (!ran) {
      var problem = element("p", "alert", answer.message || answer.error || "The agent did not run the command.");
      problem.setAttribute("role", "alert");
      entry.appendChild(problem);
    } else if (answer.output && answer.output.length) {
      entry.appendChild(element("pre", "console-output", answer.output.join("\n")));
    } else {
      entry.appendChild(element("p", "muted", "No output."));
    }
    results.appendChild(entry);
    while (results.childNodes.length > maxResults) results.firstChild.remove();
    entry.scrollIntoView({ block: "nearest" });
  }

  var busy = false;
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    if (busy) return;
    var command = input.value;
    var button = form.querySelector("button[type=submit]");
    busy = true;
    button.disabled = true;
    fetch(form.action, {
      method: "POST",
      credentials: "same-origin",
      headers: { accept: "application/json" },
      body: new URLSearchParams(new FormData(form)),
    })
      .then(function (response) {
        var json = (response.headers.get("content-type") || "").indexOf("application/json") === 0;
        if (json) return response.json();
        var message = response.redirected
          ? "You are signed out. Reload the page to sign in again."
          : response.status === 403
            ? "This form has expired. Reload the page and try again."
            : "The command could not be sent (" + response.status + "). Reload the page and try again.";
        return { status: response.status, message: message };
      })
      .catch(function () {
        return { status: 0, message: "The connection failed before the answer came. The command may still have run: watch the live output." };
      })
      .then(function (answer) {
        addResult(command, answer);
        if (answer.success === true) input.value = "";
        busy = false;
        button.disabled = false;
        input.focus();
      });
  });

  // Players: redrawn when the count the status poll shows changes.
  var list = document.querySelector("[data-players-list]");
  var count = document.querySelector('[data-field="players"]');
  var playersUrl = panel.getAttribute("data-console-players");
  function playersTable(players) {
    var label = list.getAttribute("data-label");
    var wrap = element("div", "table-wrap");
    wrap.setAttribute("role", "region");
    wrap.setAttribute("tabindex", "0");
    wrap.setAttribute("aria-label", label);
    var table = element("table");
    table.appendChild(element("caption", "sr-only", label));
    var head = element("tr");
    ["Name", "UUID", "Online since"].forEach(function (name) {
      var th = element("th", "", name);
      th.scope = "col";
      head.appendChild(th);
    });
    table.appendChild(element("thead")).appendChild(head);
    var body = table.appendChild(element("tbody"));
    players.forEach(function (p) {
      var row = body.appendChild(element("tr"));
      row.appendChild(element("td", "", p.name));
      row.appendChild(element("td", "mono", p.uuid));
      var cell = row.appendChild(element("td"));
      if (p.since) {
        var time = cell.appendChild(element("time", "", p.since.slice(0, 10) + " " + p.since.slice(11, 16) + " UTC"));
        time.dateTime = p.since;
      }
    });
    wrap.appendChild(table);
    return wrap;
  }
  function drawPlayers(players) {
    if (players.length) return void list.replaceChildren(playersTable(players));
    list.replaceChildren(element("p", "empty", count.textContent === "—" ? "The server is offline." : "No one is online."));
  }
  if (list && count && typeof MutationObserver === "function") {
    var shown = count.textContent;
    new MutationObserver(function () {
      if (count.textContent === shown) return;
      shown = count.textContent;
      fetch(playersUrl, { credentials: "same-origin", headers: { accept: "application/json" } })
        .then(function (response) {
          return response.ok ? response.json() : null;
        })
        .then(function (body) {
          if (body) drawPlayers(body.players);
        })
        .catch(function () {});
    }).observe(count, { childList: true, characterData: true, subtree: true });
  }
})();
