// Outpost dashboard: progressive enhancement only. Every page works without this file; with it,
// values copy with one click, destructive forms ask in a dialog, and server status stays live.
// The whole file is one function called at once, which keeps its names out of the page's global
// scope (a plain script under the CSP, no module loader); the functions inside stay small.
"use strict";

(function () {
  var announcer = document.getElementById("announcer");

  function announce(text) {
    if (!announcer) return;
    announcer.textContent = "";
    window.setTimeout(function () {
      announcer.textContent = text;
    }, 50);
  }

  // Copy buttons: <button data-copy="input-id">.
  function copyText(input) {
    var text = input.value;
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    input.select();
    return document.execCommand("copy") ? Promise.resolve() : Promise.reject(new Error("copy failed"));
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-copy]");
    if (!button) return;
    var input = document.getElementById(button.getAttribute("data-copy"));
    if (!input) return;
    copyText(input).then(
      function () {
        var label = button.textContent;
        button.textContent = "Copied";
        announce("Copied to the clipboard.");
        window.setTimeout(function () {
          button.textContent = label;
        }, 2000);
      },
      function () {
        input.select();
        announce("Press Control+C or Command+C to copy.");
      },
    );
  });

  // Read-only values select themselves on focus, for copying by keyboard.
  document.addEventListener("focusin", function (event) {
    var target = event.target;
    if (target.matches && target.matches(".copy-row input[readonly]")) target.select();
  });

  // Confirmation dialogs for <form data-confirm="question" data-consequence="…">.
  var dialog;
  function confirmDialog(form) {
    if (!dialog) {
      dialog = document.createElement("dialog");
      dialog.className = "confirm-dialog";
      dialog.setAttribute("aria-labelledby", "confirm-title");
      dialog.setAttribute("aria-describedby", "confirm-text");
      dialog.innerHTML =
        '<h2 id="confirm-title"></h2><p id="confirm-text"></p>' +
        '<form method="dialog" class="actions"><button type="submit" value="cancel" class="btn ghost" id="confirm-cancel">Cancel</button>' +
        '<button type="submit" value="confirm" class="btn danger" id="confirm-ok"></button></form>';
      document.body.appendChild(dialog);
    }
    dialog.querySelector("#confirm-title").textContent = form.getAttribute("data-confirm");
    dialog.querySelector("#confirm-text").textContent = form.getAttribute("data-consequence") || "";
    dialog.querySelector("#confirm-ok").textContent = form.getAttribute("data-confirm-label") || "Confirm";
    dialog.returnValue = "";
    dialog.onclose = function () {
      if (dialog.returnValue !== "confirm") return;
      var flag = document.createElement("input");
      flag.type = "hidden";
      flag.name = "confirmed";
      flag.value = "yes";
      form.appendChild(flag);
      HTMLFormElement.prototype.submit.call(form);
    };
    dialog.showModal();
    dialog.querySelector("#confirm-cancel").focus();
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.hasAttribute || !form.hasAttribute("data-confirm") || typeof HTMLDialogElement !== "function") return;
    event.preventDefault();
    confirmDialog(form);
  });

  // Slug suggested from the name until the slug is edited by hand.
  document.querySelectorAll("input[data-slug-source]").forEach(function (name) {
    var slug = document.getElementById(name.getAttribute("data-slug-source"));
    if (!slug) return;
    var edited = slug.value !== "";
    slug.addEventListener("input", function () {
      edited = slug.value !== "";
    });
    name.addEventListener("input", function () {
      if (edited) return;
      slug.value = name.value
        .normalize("NFKD")
        .replace(/[\u0300-\u036f]/g, "")
        .toLowerCase()
        .replace(/['\u2019]/g, "")
        .replace(/[^a-z0-9]+/g, "-")
        .replace(/^-+|-+$/g, "")
        .slice(0, 40)
        .replace(/-+$/, "");
    });
  });

  // Live server status: poll the organization's status every 2 s while the page is visible.
  var live = document.querySelector("[data-live-status]");
  if (live) {
    var url = live.getAttribute("data-live-status");
    var known = {};
    var stopped = false;
    function formatTime(iso) {
      return iso.slice(0, 10) + " " + iso.slice(11, 16) + " UTC";
    }
    function apply(server) {
      document.querySelectorAll('[data-server-id="' + server.id + '"]').forEach(function (row) {
        var status = row.querySelector('[data-field="status"]');
        if (status) {
          status.textContent = server.online ? "Online" : "Offline";
          status.className = "status " + (server.online ? "online" : "offline");
        }
        var players = row.querySelector('[data-field="players"]');
        if (players) players.textContent = server.online ? String(server.playerCount) : "—";
        var trust = row.querySelector('[data-field="trust"]');
        if (trust && server.trust) {
          trust.textContent = server.trust.label;
          trust.className = "trust " + server.trust.tone;
        }
        var trustDetail = row.querySelector('[data-field="trust-detail"]');
        if (trustDetail && server.trust) trustDetail.textContent = server.trust.detail;
        var game = row.querySelector('[data-field="game-state"]');
        if (game) {
          game.textContent = server.gameState ? server.gameState.label : "Unknown";
          game.className = "status " + (server.gameState ? server.gameState.tone : "offline");
        }
        var gameDetail = row.querySelector('[data-field="game-state-detail"]');
        if (gameDetail) gameDetail.textContent = server.gameState ? server.gameState.detail : "";
        var seen = row.querySelector('[data-field="last-seen"]');
        if (seen && server.lastSeenAt) {
          var time = document.createElement("time");
          time.dateTime = server.lastSeenAt;
          time.textContent = formatTime(server.lastSeenAt);
          seen.replaceChildren(time);
        }
      });
      var before = known[server.id];
      var gameLabel = server.gameState ? server.gameState.label : "";
      var gameBefore = before && before.gameState ? before.gameState.label : "";
      if (before && before.online !== server.online) announce(server.name + " is " + (server.online ? "online" : "offline") + ".");
      else if (before && gameLabel && gameBefore !== gameLabel) announce(server.name + ": " + gameLabel.toLowerCase() + ".");
      else if (before && server.online && before.playerCount !== server.playerCount) announce(server.name + ": " + server.playerCount + " players online.");
      known[server.id] = server;
    }
    function poll() {
      if (stopped) return;
      if (document.visibilityState === "hidden") return void window.setTimeout(poll, 2000);
      fetch(url, { credentials: "same-origin", headers: { accept: "application/json" } })
        .then(function (response) {
          // Signed out, or the organization or its servers are no longer the viewer's: stop asking.
          if (response.status === 401 || response.status === 403 || response.status === 404) {
            stopped = true;
            return null;
          }
          return response.ok ? response.json() : null;
        })
        .then(function (body) {
          if (body) body.servers.forEach(apply);
        })
        .catch(function () {})
        .then(function () {
          if (!stopped) window.setTimeout(poll, 2000);
        });
    }
    document.querySelectorAll("[data-server-id]").forEach(function (row) {
      var status = row.querySelector('[data-field="status"]');
      var players = row.querySelector('[data-field="players"]');
      known[row.getAttribute("data-server-id")] = {
        online: status ? status.textContent === "Online" : false,
        playerCount: players ? Number(players.textContent) || 0 : 0,
      };
    });
    window.setTimeout(poll, 2000);
  }

  // The bell: <a data-bell-events="url"> holding [data-unread] (the badge) and
  // [data-unread-words] (what a screen reader hears); the count arrives as `unread` events.
  var bell = document.querySelector("a[data-bell-events]");
  if (bell && window.EventSource) {
    var badge = bell.querySelector("[data-unread]");
    var words = bell.querySelector("[data-unread-words]");
    var bellEvents = new EventSource(bell.getAttribute("data-bell-events"));
    bellEvents.addEventListener("unread", function (event) {
      var unread = JSON.parse(event.data).unread;
      var before = Number(badge.textContent) || 0;
      badge.textContent = String(unread);
      badge.hidden = unread === 0;
      words.textContent = unread ? ", " + unread + " unread" : "";
      if (unread > before) announce(unread === 1 ? "You have 1 unread notification." : "You have " + unread + " unread notifications.");
    });
  }

  // The service worker (edge/dashboard/pwa.ts): the offline page, and push notifications.
  if (window.isSecureContext && "serviceWorker" in navigator) {
    navigator.serviceWorker.register("/app/sw.js", { scope: "/app/" }).catch(function () {});
  }

  // After a refused form, put the keyboard on the first field the API complained about.
  var invalid = document.querySelector('[aria-invalid="true"]');
  if (invalid) invalid.focus();
})();
