// Outpost dashboard, the file browser's upload: progressive enhancement of a plain multipart form.
// Without this file the form posts the chosen file and the page comes back; with it, files chosen
// in the form or dropped on it go one after another to the HTTP API's PUT servers/uploadFile as
// they are (the session cookie authenticates it, as the page's own origin), with a progress bar,
// and the folder is shown again once they are all there.
// The whole file is one function called at once, which keeps its names out of the page's global
// scope (a plain script under the CSP, no module loader); the functions inside stay small.
"use strict";

(function () {
  var form = document.querySelector("form[data-upload]");
  if (!form || typeof XMLHttpRequest !== "function" || typeof FormData !== "function") return;
  var input = form.querySelector('input[type="file"]');
  var zone = form.querySelector("[data-dropzone]");
  var progressBox = form.querySelector("[data-upload-progress]");
  var progress = progressBox.querySelector("progress");
  var status = form.querySelector("[data-upload-status]");
  var button = form.querySelector('button[type="submit"]');
  var folder = form.getAttribute("data-folder");
  var busy = false;

  function target(name) {
    var path = folder ? folder + "/" + name : name;
    return form.getAttribute("data-upload") + "&path=" + encodeURIComponent(path);
  }

  // One file: its bytes as the body; resolves, or rejects with the API's message.
  function send(file, onProgress) {
    return new Promise(function (resolve, reject) {
      var xhr = new XMLHttpRequest();
      xhr.open("PUT", target(file.name));
      xhr.setRequestHeader("content-type", "application/octet-stream");
      xhr.upload.onprogress = function (event) {
        onProgress(event.loaded);
      };
      xhr.onload = function () {
        if (xhr.status >= 200 && xhr.status < 300) return resolve();
        var message = "the upload was refused (" + xhr.status + ")";
        try {
          message = JSON.parse(xhr.responseText).message || message;
        } catch (error) {
          // Not the API's JSON (a proxy's page): the status says enough.
        }
        reject(new Error(message));
      };
      xhr.onerror = function () {
        reject(new Error("the connection to Outpost was lost"));
      };
      xhr.send(file);
    });
  }

  function uploadAll(files) {
    if (busy || !files.length) return;
    busy = true;
    button.disabled = true;
    var total = 0;
    for (var i = 0; i < files.length; i++) total += files[i].size;
    var done = 0;
    progressBox.hidden = false;
    progress.max = Math.max(total, 1);
    progress.value = 0;
    var chain = Promise.resolve();
    Array.prototype.forEach.call(files, function (file) {
      chain = chain.then(function () {
        status.textContent = "Uploading " + file.name + "…";
        return send(file, function (loaded) {
          progress.value = done + loaded;
        }).then(function () {
          done += file.size;
          progress.value = done;
        });
      });
    });
    chain.then(
      function () {
        status.textContent = files.length === 1 ? "Uploaded." : files.length + " files uploaded.";
        window.location.assign(form.getAttribute("data-done"));
      },
      function (error) {
        busy = false;
        button.disabled = false;
        progressBox.hidden = true;
        status.textContent = "Not uploaded: " + error.message + ".";
      },
    );
  }

  form.addEventListener("submit", function (event) {
    if (!input.files || !input.files.length) return;
    event.preventDefault();
    uploadAll(input.files);
  });

  zone.hidden = false;
  function dragging(on) {
    return function (event) {
      if (!event.dataTransfer || Array.prototype.indexOf.call(event.dataTransfer.types, "Files") < 0) return;
      event.preventDefault();
      form.classList.toggle("dragging", on);
    };
  }
  form.addEventListener("dragenter", dragging(true));
  form.addEventListener("dragover", dragging(true));
  form.addEventListener("dragleave", dragging(false));
  form.addEventListener("drop", function (event) {
    if (!event.dataTransfer || !event.dataTransfer.files.length) return;
    event.preventDefault();
    form.classList.remove("dragging");
    uploadAll(event.dataTransfer.files);
  });
})();
