// Outpost dashboard, the assistant's chat: progressive enhancement of the chat page. Without this
// file the question form posts and the page comes back with the whole answer; with it, the same
// form is posted with fetch (Accept: text/event-stream) and the answer streams in: its text as it
// is written, the tools the assistant calls and their results, and a command it wants to run,
// shown verbatim, or a file change, shown as its diff, with Allow and Deny. Everything from the
// server is put in as text, never HTML.
"use strict";

(function () {
  var form = document.querySelector("form[data-chat-form]");
  if (!form) return;
  var log = document.getElementById("chat-log");
  var status = document.getElementById("chat-status");
  var slot = document.getElementById("chat-confirm-slot");
  var textarea = form.querySelector("textarea[name=content]");
  var busy = false;

  function element(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function say(text, alert) {
    status.replaceChildren(alert ? element("p", "alert", text) : element("p", "", text));
  }

  function item(kind, who) {
    var li = element("li", "chat-msg " + kind);
    if (who) li.appendChild(element("p", "chat-who", who));
    log.appendChild(li);
    li.scrollIntoView({ block: "nearest" });
    return li;
  }

  function folded(summary, body) {
    var details = element("details");
    details.appendChild(element("summary", "", summary));
    details.appendChild(element("pre", "mono", body));
    return details;
  }

  var statusWords = { 1: "done", 2: "failed", 3: "refused", 4: "waiting for your confirmation", 5: "denied", 6: "interrupted" };

  // One answer's events. `text` is the assistant's message being written.
  function handler() {
    var text = null;
    return {
      started: function (data) {
        if (data.question) item("user", "You").appendChild(element("div", "chat-text", data.question));
        if (data.conversationId && !form.querySelector("input[name=conversationId]")) {
          var hidden = element("input");
          hidden.type = "hidden";
          hidden.name = "conversationId";
          hidden.value = data.conversationId;
          form.appendChild(hidden);
          var scope = form.querySelector("select[name=serverId]");
          if (scope) scope.closest(".field").remove();
          history.replaceState(null, "", data.url);
        }
      },
      delta: function (data) {
        if (!text) text = item("assistant", "Assistant").appendChild(element("div", "chat-text", ""));
        text.textContent += data.text;
      },
      message: function () {
        text = null;
      },
      tool: function (data) {
        var li = text ? text.parentNode : item("assistant", "Assistant");
        li.appendChild(folded("Called " + data.name, data.arguments));
        text = null;
      },
      result: function (data) {
        item("tool").appendChild(folded("Result of " + data.name + ": " + (statusWords[data.status] || "unknown"), data.content));
      },
      confirm: function (data) {
        showConfirm(data);
      },
      done: function (data) {
        say(data.awaitingConfirmation ? "The assistant waits for your answer." : "Answered.");
      },
      failed: function (data) {
        say(data.message, true);
      },
    };
  }

  // Reads server-sent events from a fetch response: blocks of "event:" and "data:" lines.
  function readEvents(response, on) {
    var reader = response.body.getReader();
    var decoder = new TextDecoder();
    var buffer = "";
    function block(text) {
      var name = "message";
      var data = "";
      text.split("\n").forEach(function (line) {
        if (line.indexOf("event: ") === 0) name = line.slice(7);
        else if (line.indexOf("data: ") === 0) data += line.slice(6);
      });
      if (data && on[name]) on[name](JSON.parse(data));
    }
    function pump() {
      return reader.read().then(function (chunk) {
        if (chunk.done) return;
        buffer += decoder.decode(chunk.value, { stream: true });
        var end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          block(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
        }
        return pump();
      });
    }
    return pump();
  }

  function post(url, body) {
    if (busy) return Promise.resolve();
    busy = true;
    say("The assistant is answering…");
    return fetch(url, { method: "POST", credentials: "same-origin", headers: { accept: "text/event-stream" }, body: body })
      .then(function (response) {
        var type = response.headers.get("content-type") || "";
        if (type.indexOf("text/event-stream") === 0) return readEvents(response, handler());
        return response.json().then(
          function (error) {
            say(error.message || "The assistant could not answer.", true);
          },
          function () {
            say("The assistant could not answer (HTTP " + response.status + ").", true);
          },
        );
      })
      .catch(function () {
        say("The connection was lost. Reload the page to see what was saved.", true);
      })
      .then(function () {
        busy = false;
      });
  }

  // A file change as its diff: the lines as the server made them visible (chat-views.ts diffLines), added and removed ones marked.
  function diffBlock(edit) {
    var pre = element("pre", "mono chat-command chat-diff");
    edit.lines.forEach(function (line) {
      pre.appendChild(element("span", "diff-" + line.kind, line.text));
      pre.appendChild(document.createTextNode("\n"));
    });
    return pre;
  }

  function showConfirm(data) {
    var section = element("section", "chat-confirm panel");
    section.setAttribute("aria-labelledby", "confirm-heading");
    var edit = data.fileEdit;
    // The server's name, the command and the file's path are isolated (<bdi>), as the page renders them.
    var heading = element("h3", "", edit ? "Change " : "Run this command on ");
    if (edit) {
      heading.appendChild(element("bdi", "mono", edit.path));
      heading.appendChild(document.createTextNode(" on "));
    }
    if (data.serverName) heading.appendChild(element("bdi", "", data.serverName));
    else heading.appendChild(document.createTextNode("the server"));
    heading.appendChild(document.createTextNode("?"));
    heading.id = "confirm-heading";
    section.appendChild(heading);
    if (edit) {
      section.appendChild(
        element(
          "p",
          "",
          "The assistant wants to make exactly this change (" +
            edit.added +
            " lines added, " +
            edit.removed +
            " removed). It is written only if the file is still as it was read.",
        ),
      );
      section.appendChild(diffBlock(edit));
    } else {
      section.appendChild(element("p", "", "The assistant wants to run exactly this on the server's console:"));
      var command = element("pre", "mono chat-command");
      command.appendChild(element("bdi", "", data.command));
      section.appendChild(command);
    }
    var token = form.querySelector("input[name=form_token]").value;
    var conversation = form.querySelector("input[name=conversationId]").value;
    var confirmUrl = form.action.replace(/\/assistant$/, "/assistant/c/" + encodeURIComponent(conversation) + "/confirm");
    var actions = element("div", "actions");
    [
      ["Allow", "yes", "btn danger"],
      ["Deny", "no", "btn ghost"],
    ].forEach(function (choice) {
      var button = element("button", choice[2], choice[0]);
      button.type = "button";
      button.addEventListener("click", function () {
        section.remove();
        post(confirmUrl, new URLSearchParams({ form_token: token, toolCallId: data.toolCallId, allow: choice[1] }));
      });
      actions.appendChild(button);
      actions.appendChild(document.createTextNode(" "));
    });
    section.appendChild(actions);
    slot.replaceChildren(section);
    actions.querySelector("button").focus();
  }

  // A confirmation already on the page (loaded while one waits) answers through the stream too.
  var pendingForm = document.querySelector("form[data-chat-confirm]");
  if (pendingForm) {
    pendingForm.addEventListener("submit", function (event) {
      event.preventDefault();
      var body = new URLSearchParams(new FormData(pendingForm));
      body.set("allow", event.submitter && event.submitter.value === "no" ? "no" : "yes");
      pendingForm.closest("section").remove();
      post(pendingForm.action, body);
    });
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    if (!textarea.value.trim() || busy) return;
    var body = new URLSearchParams(new FormData(form));
    textarea.value = "";
    post(form.action, body);
  });
})();
