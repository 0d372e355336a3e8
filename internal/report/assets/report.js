// ctprof HTML report: draws the charts from the JSON data block, and makes
// the flame graph and tables interactive. Everything from the profiled
// process (frame and thread names) is data: it is drawn on the canvas as
// text or escaped before it goes into any HTML.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("ctprof-data").textContent);
  var charts = {};
  // rowHeight keeps every frame readable however deep the stacks are: the
  // chart grows instead of its rows shrinking. (Set before the flame graph
  // is drawn below: a var is hoisted, its value is not.)
  var rowHeight = 18;

  function escapeHTML(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }

  function init(id, option) {
    var el = document.getElementById(id);
    if (!el) return null;
    var chart = echarts.init(el, null, { renderer: "canvas" });
    chart.setOption(option);
    charts[id] = chart;
    return chart;
  }

  Object.keys(data.charts).forEach(function (id) {
    if (id !== "chart-flame") init(id, data.charts[id]);
  });

  // ---- flame graph ----
  var flame = null, fd0 = data.flame;
  if (data.flame && data.charts["chart-flame"]) {
    flame = setupFlame(data.flame, data.charts["chart-flame"]);
  }

  function packageOf(name) {
    var paren = name.indexOf("(");
    if (paren >= 0) name = name.slice(0, paren);
    var parts = name.split(".");
    return parts.length > 2 ? parts.slice(0, -2).join(".") : parts[0];
  }

  function colorOf(name) {
    var pkg = packageOf(name), h = 0;
    for (var i = 0; i < pkg.length; i++) h = (h * 31 + pkg.charCodeAt(i)) >>> 0;
    var jdk = /^(java|javax|jdk|sun|com\.sun)\b/.test(pkg);
    return "hsl(" + (jdk ? 30 + (h % 30) : h % 360) + "," + (jdk ? 35 : 60) + "%," + (jdk ? 72 : 66) + "%)";
  }

  // diffColor colours a frame of a differential view (ctprof diff) by how
  // its share of the threads moved: red grew, blue shrank, as deep as the
  // change is large against the view's largest.
  function diffColor(change, maxAbs) {
    if (!maxAbs || Math.abs(change) < 1e-9) return "hsl(0,0%,88%)";
    var t = Math.min(1, Math.abs(change) / maxAbs);
    return "hsl(" + (change > 0 ? 0 : 215) + ",75%," + (90 - 45 * t) + "%)";
  }

  function maxAbsChange(view) {
    var m = 0;
    (view.change || []).forEach(function (c) { m = Math.max(m, Math.abs(c)); });
    return m;
  }

  // The height goes on the box around the chart: echarts owns the chart
  // element's inline style and rewrites it when it renders.
  function fitHeight(view) {
    var el = document.getElementById("flame-box");
    el.style.height = Math.min(3600, Math.max(240, view.depth * rowHeight + 24)) + "px";
  }

  function setupFlame(fd, option) {
    var state = { view: fd.views[0], min: 0, max: fd.views[0].total, search: "", matches: 0, path: [], maxChange: maxAbsChange(fd.views[0]) };
    fitHeight(state.view);
    var chart = init("chart-flame", buildOption(option));

    function buildOption(base) {
      base.series[0].renderItem = renderItem;
      base.series[0].encode = { x: [0, 1], y: 2 };
      base.series[0].clip = true;
      base.tooltip = {
        formatter: function (p) {
          var n = p.value;
          var name = fd.names[n[3]];
          var share = (100 * n[4] / state.view.total).toFixed(1);
          var text = escapeHTML(name) + "<br>" + n[4] + " " + escapeHTML(state.view.unit || "samples") + " (" + share + " %)" + (n[5] & 1 ? "<br>mostly BLOCKED" : "");
          if (state.view.change) {
            var c = state.view.change[p.dataIndex], mine = n[4] / state.view.total;
            var after = state.view.side === "after" ? mine : mine + c, before = after - c;
            text += "<br>share before " + (100 * before).toFixed(1) + " %, after " + (100 * after).toFixed(1) + " % (" + (c >= 0 ? "+" : "") + (100 * c).toFixed(1) + " points)";
          }
          return text;
        }
      };
      base.yAxis = { type: "value", show: false, min: 0, max: Math.max(state.view.depth, 1), inverse: true };
      base.legend = { show: false };
      base.grid = { top: 4, left: 4, right: 4, bottom: 4 };
      return base;
    }

    function renderItem(params, api) {
      var x0 = api.value(0), x1 = api.value(1), depth = api.value(2);
      var name = fd.names[api.value(3)];
      var start = api.coord([x0, depth]);
      var end = api.coord([x1, depth + 1]);
      var width = end[0] - start[0], height = end[1] - start[1];
      if (width < 0.3) return null;
      var matched = state.search && name.toLowerCase().indexOf(state.search) >= 0;
      var blocked = api.value(5) & 1;
      var fill = state.view.change ? diffColor(state.view.change[params.dataIndex], state.maxChange) : colorOf(name);
      return {
        type: "rect",
        shape: { x: start[0], y: start[1], width: Math.max(width - 0.5, 0.3), height: height - 1 },
        style: {
          fill: matched ? "#ff2fb4" : fill,
          stroke: blocked ? "#c00000" : null,
          lineWidth: blocked ? 1.5 : 0
        },
        textContent: width > 30 ? { style: { text: name, fill: "#111", fontSize: 11, width: width - 6, overflow: "truncate" } } : null,
        textConfig: { position: "insideLeft" }
      };
    }

    function redraw() {
      chart.setOption({
        xAxis: { min: state.min, max: state.max },
        yAxis: { max: Math.max(state.view.depth, 1) },
        series: [{ data: state.view.nodes }]
      });
      state.matches = 0;
      if (state.search) {
        state.view.nodes.forEach(function (n) {
          if (fd.names[n[3]].toLowerCase().indexOf(state.search) >= 0) state.matches++;
        });
      }
      document.getElementById("flame-path").textContent = state.path.join(" › ");
    }

    function zoom(node) {
      state.min = node[0];
      state.max = node[1];
      state.path.push(fd.names[node[3]]);
      redraw();
    }

    chart.on("click", function (p) {
      if (p.value) zoom(p.value);
    });
    document.getElementById("flame-reset").addEventListener("click", function () {
      state.min = 0;
      state.max = state.view.total;
      state.path = [];
      redraw();
    });
    document.getElementById("flame-search").addEventListener("input", function (e) {
      state.search = e.target.value.trim().toLowerCase();
      redraw();
    });
    document.getElementById("flame-view").addEventListener("change", function (e) {
      fd.views.forEach(function (v) {
        if (v.id === e.target.value) state.view = v;
      });
      state.maxChange = maxAbsChange(state.view);
      fitHeight(state.view);
      chart.resize();
      state.min = 0;
      state.max = state.view.total;
      state.path = [];
      redraw();
    });
    redraw();
    return { chart: chart, state: state, zoom: zoom };
  }

  // ---- sortable tables ----
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    var heads = table.querySelectorAll("th");
    Array.prototype.forEach.call(heads, function (th, col) {
      th.addEventListener("click", function () {
        var desc = !th.classList.contains("desc");
        Array.prototype.forEach.call(heads, function (h) { h.classList.remove("asc", "desc"); });
        th.classList.add(desc ? "desc" : "asc");
        var num = th.getAttribute("data-type") === "num";
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[col], y = b.cells[col];
          var va = num ? parseFloat(x.getAttribute("data-v")) : x.textContent;
          var vb = num ? parseFloat(y.getAttribute("data-v")) : y.textContent;
          var c = num ? va - vb : String(va).localeCompare(String(vb));
          return desc ? -c : c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });

  window.addEventListener("resize", function () {
    Object.keys(charts).forEach(function (id) { charts[id].resize(); });
  });

  // For tests and for anyone poking at the report from the console: the
  // charts, and the flame graph's state (its visible range and search).
  window.ctprofReport = {
    charts: charts,
    flame: flame && {
      state: function () { return { min: flame.state.min, max: flame.state.max, view: flame.state.view.id, matches: flame.state.matches, path: flame.state.path.slice() }; },
      // fills returns the colour each node of the current view is drawn in
      // (differential views: by its share's change).
      fills: function () {
        var v = flame.state.view;
        return v.nodes.map(function (n, i) { return v.change ? diffColor(v.change[i], flame.state.maxChange) : colorOf(fd0.names[n[3]]); });
      },
      // pixel returns the viewport coordinates of the centre of node i of
      // the current view, for clicking it.
      pixel: function (i) {
        var n = flame.state.view.nodes[i];
        var p = flame.chart.convertToPixel({ seriesIndex: 0 }, [(n[0] + n[1]) / 2, n[2] + 0.5]);
        var r = document.getElementById("chart-flame").getBoundingClientRect();
        return [r.left + p[0], r.top + p[1]];
      },
      nodes: function () { return flame.state.view.nodes.slice(); }
    },
    ready: true
  };
  // drawnMs: milliseconds from navigation start to the first frame painted
  // after every chart was set up (the report's open time, benchmarked).
  requestAnimationFrame(function () {
    requestAnimationFrame(function () { window.ctprofReport.drawnMs = performance.now(); });
  });
})();
