// Outpost: this browser's push notifications switch on Account → Security (account-push.ts).
// Turning it on asks the browser's permission, registers the service worker, subscribes with the
// deployment's VAPID key (pwa/getPushConfig) and hands the subscription to pwa/subscribe; turning
// it off calls pwa/unsubscribe and ends the browser's subscription. The calls go to /api/http with
// the session cookie, from this origin (the edge refuses cookie-carrying posts from elsewhere).
"use strict";

(function () {
  var root = document.querySelector("[data-push]");
  if (!root) return;
  var toggle = document.getElementById("push-toggle");
  var status = document.getElementById("push-status");
  var test = document.getElementById("push-test");
  var supported = window.isSecureContext && "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;

  function say(text) {
    status.textContent = text;
  }

  if (!supported) {
    say("This browser cannot receive push notifications.");
    return;
  }

  function api(procedure, body) {
    var init = { credentials: "same-origin", headers: { accept: "application/json" } };
    if (body !== undefined) {
      init.method = "POST";
      init.headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return fetch("/api/http/pwa/" + procedure, init).then(function (response) {
      return response
        .json()
        .catch(function () {
          return {};
        })
        .then(function (json) {
          if (!response.ok) throw new Error(json.message || "Outpost answered " + response.status + ".");
          return json;
        });
    });
  }

  function bytesOf(base64url) {
    var text = atob(base64url.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((base64url.length + 3) % 4));
    var bytes = new Uint8Array(text.length);
    for (var i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    return bytes;
  }

  function sameKey(buffer, bytes) {
    if (!buffer) return false;
    var a = new Uint8Array(buffer);
    if (a.length !== bytes.length) return false;
    for (var i = 0; i < a.length; i++) if (a[i] !== bytes[i]) return false;
    return true;
  }

  function registration() {
    return navigator.serviceWorker.register("/app/sw.js", { scope: "/app/" }).then(function () {
      return navigator.serviceWorker.ready;
    });
  }

  function known(endpoint) {
    return [].some.call(document.querySelectorAll("tr[data-endpoint]"), function (row) {
      return row.getAttribute("data-endpoint") === endpoint;
    });
  }

  function show(on) {
    toggle.checked = on;
    toggle.disabled = false;
    test.disabled = !on;
    say(on ? "On: this browser receives push notifications." : "Off: this browser receives no push notifications.");
  }

  // A subscription made with another key (an older deployment's) cannot carry ours: it is replaced.
  function subscribe(reg, key) {
    return reg.pushManager.getSubscription().then(function (existing) {
      if (existing && sameKey(existing.options && existing.options.applicationServerKey, key)) return existing;
      return (existing ? existing.unsubscribe() : Promise.resolve()).then(function () {
        return reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
      });
    });
  }

  function turnOn() {
    return Notification.requestPermission()
      .then(function (permission) {
        if (permission !== "granted") throw new Error("Notifications are blocked for this site in the browser's settings.");
        return Promise.all([registration(), api("getPushConfig")]);
      })
      .then(function (both) {
        return subscribe(both[0], bytesOf(both[1].vapidPublicKey));
      })
      .then(function (subscription) {
        var json = subscription.toJSON();
        return api("subscribe", {
          endpoint: json.endpoint,
          keys: { p256dh: json.keys.p256dh, auth: json.keys.auth },
          userAgent: root.getAttribute("data-device") || undefined,
        });
      });
  }

  function turnOff() {
    return registration()
      .then(function (reg) {
        return reg.pushManager.getSubscription();
      })
      .then(function (subscription) {
        if (!subscription) return;
        // Already removed on Outpost's side (from another browser): the browser's end still goes.
        return api("unsubscribe", { endpoint: subscription.endpoint })
          .catch(function () {})
          .then(function () {
            return subscription.unsubscribe();
          });
      });
  }

  toggle.addEventListener("change", function () {
    var wanted = toggle.checked;
    toggle.disabled = true;
    test.disabled = true;
    say(wanted ? "Turning on…" : "Turning off…");
    (wanted ? turnOn() : turnOff()).then(
      function () {
        show(wanted);
      },
      function (error) {
        show(!wanted);
        say(error.message);
      },
    );
  });

  test.addEventListener("click", function () {
    test.disabled = true;
    say("Sending…");
    api("sendTestPush", {}).then(
      function (answer) {
        var outcomes = answer.outcomes || [];
        var delivered = outcomes.filter(function (o) {
          return o.delivered;
        }).length;
        var failed = outcomes
          .filter(function (o) {
            return !o.delivered;
          })
          .map(function (o) {
            return o.error;
          });
        say("Sent to " + delivered + " of " + outcomes.length + " browsers." + (failed.length ? " Not delivered: " + failed.join("; ") : ""));
        test.disabled = false;
      },
      function (error) {
        say(error.message);
        test.disabled = false;
      },
    );
  });

  navigator.serviceWorker
    .getRegistration("/app/")
    .then(function (reg) {
      return reg ? reg.pushManager.getSubscription() : null;
    })
    .then(function (subscription) {
      show(Boolean(subscription) && known(subscription.endpoint) && Notification.permission === "granted");
    })
    .catch(function () {
      show(false);
    });
})();
