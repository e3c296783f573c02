// Outpost's service worker (served at /app/sw.js, after a line defining `build`: the shell's
// URLs, the version they make, the offline page and the notification icon; edge/dashboard/pwa.ts).
//
// What it keeps: only the app shell — the dashboard's static assets, by their content-hashed
// URLs, and the offline page, which holds nothing of anyone's. Pages and /api/… are never put in
// a cache: they go to the network as if there were no worker, and a page that cannot be reached
// is answered with the offline page. It also shows Web Push notifications.

var cacheName = "outpost-shell-" + build.version;

self.addEventListener("install", function (event) {
  event.waitUntil(
    caches
      .open(cacheName)
      .then(function (cache) {
        return cache.addAll(build.shell);
      })
      .then(function () {
        return self.skipWaiting();
      }),
  );
});

// Older shells go as soon as this one is in charge.
self.addEventListener("activate", function (event) {
  event.waitUntil(
    caches
      .keys()
      .then(function (names) {
        return Promise.all(
          names
            .filter(function (name) {
              return name.indexOf("outpost-shell-") === 0 && name !== cacheName;
            })
            .map(function (name) {
              return caches.delete(name);
            }),
        );
      })
      .then(function () {
        return self.clients.claim();
      }),
  );
});

function isShell(url) {
  return url.origin === self.location.origin && build.shell.indexOf(url.pathname + url.search) !== -1;
}

self.addEventListener("fetch", function (event) {
  var request = event.request;
  if (request.method !== "GET") return;
  var url = new URL(request.url);
  if (request.mode === "navigate") {
    // The page itself always comes from the network; only its absence is answered here.
    event.respondWith(
      fetch(request).catch(function () {
        return caches.open(cacheName).then(function (cache) {
          return cache.match(build.offline);
        });
      }),
    );
    return;
  }
  if (isShell(url)) {
    event.respondWith(
      caches.open(cacheName).then(function (cache) {
        return cache.match(request).then(function (hit) {
          return hit || fetch(request);
        });
      }),
    );
  }
  // Anything else (API calls, other assets): not intercepted.
});

// Web Push: the payload is {title, body, url?, tag?} (core/pwa/push.ts).
self.addEventListener("push", function (event) {
  var message = {};
  try {
    message = event.data ? event.data.json() : {};
  } catch (error) {
    message = { body: event.data ? event.data.text() : "" };
  }
  // Only a path of this origin: "/\\evil.example" parses as another origin, so the parsed origin is what counts.
  var url = "/app";
  if (typeof message.url === "string" && message.url.charAt(0) === "/") {
    try {
      var parsed = new URL(message.url, self.location.origin);
      if (parsed.origin === self.location.origin) url = parsed.pathname + parsed.search + parsed.hash;
    } catch (error) {
      url = "/app";
    }
  }
  event.waitUntil(
    self.registration.showNotification(message.title || "Outpost", {
      body: message.body || "",
      tag: message.tag || undefined,
      icon: build.icon,
      data: { url: url },
    }),
  );
});

// A click opens the notification's page, in a dashboard window already open when there is one.
self.addEventListener("notificationclick", function (event) {
  event.notification.close();
  var target = new URL(event.notification.data && event.notification.data.url ? event.notification.data.url : "/app", self.location.origin).href;
  event.waitUntil(
    self.clients.matchAll({ type: "window", includeUncontrolled: true }).then(function (windows) {
      for (var i = 0; i < windows.length; i++) {
        if (windows[i].url === target && "focus" in windows[i]) return windows[i].focus();
      }
      return self.clients.openWindow(target);
    }),
  );
});
