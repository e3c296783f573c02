// Outpost charts: draws each <figure data-chart> with uPlot (loaded before this file) from the JSON
// in the figure, resizes it with its box, and keeps a panel with data-live-stats current by
// fetching it again every data-refresh-seconds while the page is visible. The figure's caption
// and data table (drawn by the server) stay the text alternative; the plot itself is aria-hidden.
"use strict";

(function () {
  if (typeof uPlot === "undefined") return;
  var drawn = new Map();
  var colours = { average: "#3346d3", faint: "rgba(51, 70, 211, 0.35)", other: ["#0f7b52", "#b4531c"] };

  function round(value, digits) {
    return value.toLocaleString("en-US", { maximumFractionDigits: digits });
  }

  function bytes(value) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB"];
    var i = 0;
    while (value >= 1024 && i < units.length - 1) {
      value /= 1024;
      i++;
    }
    return round(value, value < 10 && i > 0 ? 1 : 0) + " " + units[i];
  }

  var formats = {
    percent: function (v) {
      return round(v, v < 10 ? 1 : 0) + " %";
    },
    bytes: bytes,
    tps: function (v) {
      return round(v, 1);
    },
    ms: function (v) {
      return round(v, 1) + " ms";
    },
    count: function (v) {
      return round(v, 1);
    },
  };

  function utc(ts) {
    return uPlot.tzDate(new Date(ts * 1000), "Etc/UTC");
  }

  function options(data, width) {
    var format = formats[data.unit] || formats.count;
    var other = 0;
    return {
      width: width,
      height: 200,
      tzDate: utc,
      scales: {
        x: {
          time: true,
          range: function (u, min, max) {
            return data.span || [min, max];
          },
        },
        y: {
          range: function (u, min, max) {
            return [Math.min(0, min), max > 0 ? max * 1.1 : 1];
          },
        },
      },
      series: [{ value: data.days ? "{YYYY}-{MM}-{DD}" : "{YYYY}-{MM}-{DD} {HH}:{mm} UTC" }].concat(
        data.lines.map(function (line) {
          var stroke = line.faint ? colours.faint : line === data.lines[0] ? colours.average : colours.other[other++ % colours.other.length];
          return {
            label: line.label,
            stroke: stroke,
            width: line.faint ? 1 : 2,
            points: { show: data.days || data.times.length < 40 },
            value: function (u, v) {
              return v == null ? "—" : format(v);
            },
          };
        }),
      ),
      axes: [
        {
          // 24-hour UTC times, or dates: as the tables say them.
          values: function (u, splits) {
            var span = u.scales.x.max - u.scales.x.min;
            var format = uPlot.fmtDate(data.days ? "{MM}-{DD}" : span > 2 * 86400 ? "{MM}-{DD} {HH}:{mm}" : "{HH}:{mm}");
            return splits.map(function (s) {
              return format(utc(s));
            });
          },
        },
        {
          size: 72,
          // Players and sign-ins come whole: no ticks between them.
          incrs: data.unit === "count" ? [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000] : undefined,
          values: function (u, values) {
            return values.map(format);
          },
        },
      ],
    };
  }

  function draw(figure) {
    var box = figure.querySelector(".chart-plot");
    var source = figure.querySelector('script[type="application/json"]');
    if (!box || !source) return;
    var data = JSON.parse(source.textContent);
    var columns = [data.times].concat(
      data.lines.map(function (line) {
        return line.values;
      }),
    );
    drawn.set(figure, new uPlot(options(data, box.clientWidth || 600), columns, box));
  }

  function forget(root) {
    drawn.forEach(function (plot, figure) {
      if (root.contains(figure)) {
        plot.destroy();
        drawn.delete(figure);
      }
    });
  }

  function drawAll(root) {
    root.querySelectorAll("figure[data-chart]").forEach(draw);
  }

  if (window.ResizeObserver) {
    var resizing = new ResizeObserver(function () {
      drawn.forEach(function (plot, figure) {
        var box = figure.querySelector(".chart-plot");
        if (box && box.clientWidth && box.clientWidth !== plot.width) plot.setSize({ width: box.clientWidth, height: 200 });
      });
    });
    resizing.observe(document.body);
  }

  // A live panel: the server draws it again (same markup, new data); the details left open stay open.
  function refresh(panel) {
    var url = panel.getAttribute("data-live-stats");
    return fetch(url, { credentials: "same-origin", headers: { accept: "text/html" } }).then(function (response) {
      if (!response.ok || response.redirected) throw new Error("stopped");
      return response.text().then(function (text) {
        var open = Array.prototype.map.call(panel.querySelectorAll("details[open]"), function (d) {
          return d.closest("figure") && d.closest("figure").id;
        });
        var template = document.createElement("template");
        template.innerHTML = text;
        var fresh = template.content.querySelector("[data-live-stats]");
        if (!fresh) throw new Error("stopped");
        forget(panel);
        panel.replaceChildren.apply(panel, Array.prototype.slice.call(fresh.childNodes));
        open.forEach(function (id) {
          var figure = id && document.getElementById(id);
          var details = figure && figure.querySelector("details");
          if (details) details.open = true;
        });
        drawAll(panel);
      });
    });
  }

  function keepLive(panel) {
    var seconds = Number(panel.getAttribute("data-refresh-seconds"));
    if (!(seconds > 0)) return;
    var timer = window.setInterval(function () {
      if (document.hidden) return;
      refresh(panel).catch(function () {
        window.clearInterval(timer);
      });
    }, seconds * 1000);
  }

  drawAll(document);
  document.querySelectorAll("[data-live-stats]").forEach(keepLive);
})();
