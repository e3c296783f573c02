// The hosted sign-in page: solve the browser check (ALTCHA proof of work, SHA-256 with WebCrypto),
// have the server verify it and reveal the login code, count down, and follow the live status
// (server-sent events): who is confirming in game once a player ran the command, then to the app
// when they confirm.
// The whole file is one function called at once, which keeps its names out of the page's global
// scope (a plain script under the CSP, no module loader); the functions inside stay small.
"use strict";
(function () {
  var root = document.getElementById("hosted");
  if (!root) return;
  var sessionId = root.getAttribute("data-session");
  var challenge = JSON.parse(root.getAttribute("data-challenge"));
  var expiresAt = Date.parse(root.getAttribute("data-expires-at"));
  var appName = root.getAttribute("data-app");
  var appHost = root.getAttribute("data-host");
  var checkStatus = document.getElementById("check-status");
  var liveStatus = document.getElementById("live-status");
  var finished = false;

  function say(el, text) {
    el.textContent = text;
  }

  function hex(buffer) {
    var bytes = new Uint8Array(buffer);
    var out = "";
    for (var i = 0; i < bytes.length; i++) out += (bytes[i] < 16 ? "0" : "") + bytes[i].toString(16);
    return out;
  }

  // Finds n with SHA-256(salt + n) = challenge, hashing a batch at a time.
  async function solve() {
    var encoder = new TextEncoder();
    var max = challenge.maxnumber || 1000000;
    var batch = 500;
    for (var start = 0; start <= max; start += batch) {
      var jobs = [];
      for (var n = start; n < start + batch && n <= max; n++) {
        jobs.push(crypto.subtle.digest("SHA-256", encoder.encode(challenge.salt + n)));
      }
      var hashes = await Promise.all(jobs);
      for (var i = 0; i < hashes.length; i++) {
        if (hex(hashes[i]) === challenge.challenge) return start + i;
      }
    }
    return null;
  }

  function pad(n) {
    return (n < 10 ? "0" : "") + n;
  }

  function startCountdown() {
    var el = document.getElementById("countdown");
    function tick() {
      var left = Math.max(0, Math.round((expiresAt - Date.now()) / 1000));
      say(el, Math.floor(left / 60) + ":" + pad(left % 60));
      if (left === 0) {
        clearInterval(timer);
        expired();
      }
    }
    var timer = setInterval(tick, 1000);
    tick();
  }

  function expired() {
    if (finished) return;
    finished = true;
    say(liveStatus, "This sign-in has expired. Go back to the app and start again.");
    liveStatus.className = "status problem";
  }

  function follow() {
    var source = new EventSource("/oauth2/authorize/events?session=" + encodeURIComponent(sessionId));
    source.addEventListener("status", function (event) {
      var data = JSON.parse(event.data);
      if (data.status === "completed" && data.redirect_url) {
        finished = true;
        source.close();
        say(liveStatus, "Signed in. Taking you back to the app…");
        liveStatus.className = "status done";
        window.location.replace(data.redirect_url);
      } else if (data.status === "expired") {
        source.close();
        expired();
      } else if (data.claim) {
        say(
          liveStatus,
          data.claim.player_name +
            " on " +
            data.claim.server_name +
            " is confirming in game — sign in to " +
            appName +
            " at " +
            appHost +
            ". If that is not you, close this page and start again from the app.",
        );
        liveStatus.className = "status claimed";
      } else {
        say(liveStatus, "Waiting for the command on a game server…");
        liveStatus.className = "status";
      }
    });
    source.addEventListener("unavailable", function () {
      say(liveStatus, "The live status was interrupted; reconnecting…");
    });
    // A newer live status of this sign-in took over (another tab of it): this page stops following.
    source.addEventListener("replaced", function () {
      source.close();
      if (!finished) say(liveStatus, "This sign-in is being followed in another tab or window.");
    });
    // Refused (too many live pages from this address, or the sign-in is gone): no retry.
    source.addEventListener("error", function () {
      if (source.readyState === EventSource.CLOSED && !finished) {
        say(liveStatus, "The live status is not available. Reload this page to try again.");
        liveStatus.className = "status problem";
      }
    });
  }

  function setUpCopy(command) {
    var button = document.getElementById("copy");
    var input = document.getElementById("command");
    var copyStatus = document.getElementById("copy-status");
    button.addEventListener("click", function () {
      function copied() {
        say(copyStatus, "Copied to the clipboard.");
      }
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(command).then(copied, function () {
          input.select();
          say(copyStatus, "Press Ctrl+C (or ⌘C) to copy.");
        });
      } else {
        input.select();
        say(copyStatus, "Press Ctrl+C (or ⌘C) to copy.");
      }
    });
  }

  async function run() {
    startCountdown();
    var number = await solve();
    if (number === null) {
      say(checkStatus, "The browser check failed. Reload the page to try again.");
      return;
    }
    var payload = btoa(
      JSON.stringify({
        algorithm: challenge.algorithm,
        challenge: challenge.challenge,
        number: number,
        salt: challenge.salt,
        signature: challenge.signature,
      }),
    );
    var response = await fetch("/oauth2/authorize/verify-challenge", {
      method: "POST",
      headers: { "content-type": "application/json" },
      credentials: "same-origin",
      body: JSON.stringify({ session: sessionId, payload: payload }),
    });
    if (!response.ok) {
      say(checkStatus, "The browser check was refused. Go back to the app and start again.");
      return;
    }
    var result = await response.json();
    say(checkStatus, "Browser check passed.");
    say(document.getElementById("login-code"), result.login_code);
    document.getElementById("command").value = result.command;
    setUpCopy(result.command);
    document.getElementById("code-step").hidden = false;
    say(liveStatus, "Waiting for the command on a game server…");
    follow();
  }

  run().catch(function () {
    say(checkStatus, "Something went wrong. Reload the page to try again.");
  });
})();
