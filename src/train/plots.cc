// Training curves: recorded points, and a self-contained HTML page that draws them with the
// Chart.js compiled into the library (generated/chartjs.cc, from cmake/EmbedText.cmake).
//
// The page holds the points as JSON (<script id="kiln-data">), then Chart.js, then the script
// below that builds one chart per metric from the JSON. Once every chart is built, the script
// sets data-rendered="charts=C series=S points=P" on <html> (and data-render-error on failure),
// which the rendering test reads back from headless Chromium. For readers that run no scripts,
// <noscript> holds the same charts as static SVG images.

#include "kiln/train/plots.h"

#include "kiln/distributed/distributed.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <memory>
#include <ostream>

#include "core/check.h"
#include "io/atomic_file.h"

namespace kiln::plots {

namespace internal {
/// Chart.js (minified, with its licence banner), generated at build time.
const std::string& ChartJs();
}  // namespace internal

namespace {

constexpr const char* kStyle = R"css(
* { box-sizing: border-box; }
html, body { margin: 0; height: 100%; }
body { font: 14px/1.4 system-ui, "DejaVu Sans", sans-serif; color: #222; background: #f4f5f7;
       display: flex; flex-direction: column; }
header { padding: 10px 20px 6px; display: flex; flex-wrap: wrap; align-items: baseline; gap: 4px 18px; }
h1 { font-size: 20px; margin: 0; font-weight: 600; }
#status { color: #555; }
#status .running { color: #0a7d32; font-weight: 600; }
#status .finished { color: #444; font-weight: 600; }
#charts { flex: 1; display: grid; gap: 12px; padding: 0 20px 8px; min-height: 0;
          grid-template-columns: repeat(auto-fit, minmax(460px, 1fr)); grid-auto-rows: minmax(340px, 1fr); }
.card { background: #fff; border: 1px solid #dde1e6; border-radius: 6px; padding: 8px 12px 6px;
        display: flex; flex-direction: column; min-height: 0; }
.card-head { display: flex; justify-content: space-between; align-items: center; margin-bottom: 2px; }
.card-head h2 { font-size: 15px; margin: 0; font-weight: 600; }
.card-head label { color: #444; font-size: 13px; user-select: none; cursor: pointer; }
.canvas-box { position: relative; flex: 1 1 0; min-height: 0; }
.legend { display: flex; flex-wrap: wrap; justify-content: center; align-content: flex-start; gap: 2px 16px;
          padding-top: 4px; min-height: 52px; }
.key { font: inherit; font-size: 13px; color: #333; background: none; border: 0; padding: 2px 4px;
       cursor: pointer; display: inline-flex; align-items: center; gap: 6px; border-radius: 4px; }
.key:hover { background: #eef1f5; }
.key.off { opacity: 0.4; text-decoration: line-through; }
footer { color: #777; font-size: 12px; padding: 0 20px 8px; }
#error { margin: 20px; padding: 12px; background: #fde8e8; color: #8a1010; border-radius: 6px; }
.empty { margin: 20px; color: #666; }
)css";

// Builds the charts from the JSON; see the file comment for the markers it leaves.
constexpr const char* kScript = R"js(
(function () {
  'use strict';
  const root = document.documentElement;
  function fail(message) {
    root.dataset.renderError = String(message);
    const box = document.getElementById('error');
    box.textContent = 'The charts could not be drawn: ' + message;
    box.hidden = false;
  }
  window.addEventListener('error', (e) => fail(e.message));
  try {
    const data = JSON.parse(document.getElementById('kiln-data').textContent);
    if (typeof Chart === 'undefined') throw new Error('Chart.js did not load');
    // Which axes are logarithmic and which series are hidden survive the reloads.
    const storeKey = 'kiln-plot:' + location.pathname;
    let state = { log: {}, hidden: {} };
    try {
      state = Object.assign(state, JSON.parse(sessionStorage.getItem(storeKey) || '{}'));
    } catch (e) {}
    const save = () => {
      try { sessionStorage.setItem(storeKey, JSON.stringify(state)); } catch (e) {}
    };

    Chart.defaults.font.family = 'system-ui, "DejaVu Sans", sans-serif';
    Chart.defaults.font.size = 13;
    Chart.defaults.color = '#333';

    // The point of each visible series nearest to `x` (pixels) along the step axis, within 40
    // pixels; the series are sampled at different steps, so Chart.js's 'index' mode would pair
    // unrelated points. Remembers the step of the nearest one for the tooltip's title.
    const nearestAt = (chart, x) => {
      const items = [];
      let nearest = Infinity;
      chart.$kilnStep = undefined;
      chart.data.datasets.forEach((ds, i) => {
        if (!chart.isDatasetVisible(i)) return;
        const meta = chart.getDatasetMeta(i);
        let best = -1, distance = Infinity;
        meta.data.forEach((el, j) => {
          if (el.skip) return;
          const d = Math.abs(el.x - x);
          if (d < distance) { distance = d; best = j; }
        });
        if (best < 0 || distance > 40) return;
        items.push({ element: meta.data[best], datasetIndex: i, index: best });
        if (distance < nearest) { nearest = distance; chart.$kilnStep = ds.data[best].x; }
      });
      return items;
    };
    Chart.Interaction.modes.kilnNearest = function (chart, e) {
      const pos = Chart.helpers.getRelativePosition(e, chart);
      const area = chart.chartArea;
      if (pos.x < area.left - 4 || pos.x > area.right + 4) return [];
      return nearestAt(chart, pos.x);
    };
    // A dashed vertical line at the hovered step.
    const crosshair = {
      id: 'kilnCrosshair',
      afterDatasetsDraw(chart) {
        const active = chart.tooltip ? chart.tooltip.getActiveElements() : [];
        if (!active.length || chart.$kilnStep === undefined) return;
        const x = chart.scales.x.getPixelForValue(chart.$kilnStep), a = chart.chartArea;
        const ctx = chart.ctx;
        ctx.save();
        ctx.strokeStyle = 'rgba(0,0,0,0.4)';
        ctx.lineWidth = 1;
        ctx.setLineDash([3, 3]);
        ctx.beginPath();
        ctx.moveTo(x, a.top);
        ctx.lineTo(x, a.bottom);
        ctx.stroke();
        ctx.restore();
      },
    };

    const number = (v) => {
      if (v === null || !isFinite(v)) return String(v);
      const a = Math.abs(v);
      if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(2);
      return String(Number(v.toPrecision(4)));
    };
    // Log axes: labels at 1, 2 and 5 times a power of ten only.
    const logTick = (v) => {
      const m = v / Math.pow(10, Math.floor(Math.log10(v) + 1e-9));
      return [1, 2, 5].some((k) => Math.abs(m - k) < 1e-6) ? number(v) : '';
    };
    // Train series in blue (the raw values faint and thin, the moving average solid); each
    // evaluated dataset in its own colour, dashed, with markers.
    const trainColor = '31, 119, 180';
    const evalColors = ['230, 85, 13', '44, 160, 44', '214, 39, 40', '148, 103, 189', '140, 86, 75'];
    const evalMarkers = ['circle', 'rectRot', 'triangle', 'rect', 'crossRot'];
    const style = (s, evalIndex) => {
      if (s.kind === 'eval') {
        const c = `rgb(${evalColors[evalIndex % evalColors.length]})`;
        return { borderColor: c, backgroundColor: c, borderWidth: 2, borderDash: [7, 4],
                 pointStyle: evalMarkers[evalIndex % evalMarkers.length], pointRadius: 4,
                 pointHoverRadius: 6, order: 0 };
      }
      if (s.kind === 'average') {
        const c = `rgb(${trainColor})`;
        return { borderColor: c, backgroundColor: c, borderWidth: 2.5, borderDash: [], pointRadius: 0,
                 pointHoverRadius: 4, order: 1 };
      }
      const c = `rgba(${trainColor}, 0.35)`;
      return { borderColor: c, backgroundColor: c, borderWidth: 1.2, borderDash: [], pointRadius: 0,
               pointHoverRadius: 3, order: 2 };
    };
    // A legend entry's sample: the series' line, dash and marker.
    const svgNs = 'http://www.w3.org/2000/svg';
    const sample = (ds) => {
      const svg = document.createElementNS(svgNs, 'svg');
      svg.setAttribute('width', '36');
      svg.setAttribute('height', '14');
      const add = (tag, attrs) => {
        const el = document.createElementNS(svgNs, tag);
        for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
        svg.appendChild(el);
      };
      add('line', { x1: 1, y1: 7, x2: 35, y2: 7, stroke: ds.borderColor,
                    'stroke-width': Math.max(ds.borderWidth, 1.5),
                    'stroke-dasharray': ds.borderDash.join(' ') });
      const f = { fill: ds.backgroundColor };
      if (ds.pointRadius > 0) {
        const p = ds.pointStyle;
        if (p === 'rectRot') add('polygon', Object.assign({ points: '18,2 23,7 18,12 13,7' }, f));
        else if (p === 'triangle') add('polygon', Object.assign({ points: '18,2 23,11 13,11' }, f));
        else if (p === 'rect') add('rect', Object.assign({ x: 14, y: 3, width: 8, height: 8 }, f));
        else add('circle', Object.assign({ cx: 18, cy: 7, r: 4 }, f));
      }
      return svg;
    };
    const drawLegend = (chart, list) => {
      list.textContent = '';
      chart.data.datasets.forEach((ds, i) => {
        const item = document.createElement('button');
        item.type = 'button';
        item.className = chart.isDatasetVisible(i) ? 'key' : 'key off';
        item.title = 'show or hide this series';
        item.appendChild(sample(ds));
        item.appendChild(document.createTextNode(ds.label));
        item.addEventListener('click', () => {
          chart.setDatasetVisibility(i, !chart.isDatasetVisible(i));
          state.hidden[ds.kiln] = !chart.isDatasetVisible(i);
          save();
          chart.update();
          drawLegend(chart, list);
        });
        list.appendChild(item);
      });
    };

    const container = document.getElementById('charts');
    const charts = [];
    let series = 0, points = 0, hovering = false;
    for (const c of data.charts) {
      const card = document.createElement('section');
      card.className = 'card';
      card.dataset.chart = c.name;
      const head = document.createElement('div');
      head.className = 'card-head';
      const h2 = document.createElement('h2');
      h2.textContent = c.axis;
      head.appendChild(h2);
      const positive = c.series.every((s) => s.points.every((p) => p[1] === null || p[1] > 0));
      let toggle = null;
      if (positive) {
        const label = document.createElement('label');
        toggle = document.createElement('input');
        toggle.type = 'checkbox';
        toggle.className = 'log-toggle';
        toggle.checked = !!state.log[c.name];
        label.appendChild(toggle);
        label.appendChild(document.createTextNode(' log scale'));
        head.appendChild(label);
      }
      card.appendChild(head);
      const box = document.createElement('div');
      box.className = 'canvas-box';
      const canvas = document.createElement('canvas');
      box.appendChild(canvas);
      card.appendChild(box);
      const legend = document.createElement('div');
      legend.className = 'legend';
      card.appendChild(legend);
      container.appendChild(card);
      card.addEventListener('mouseenter', () => { hovering = true; });
      card.addEventListener('mouseleave', () => { hovering = false; });

      let evalIndex = 0;
      const datasets = c.series.map((s) => {
        series += 1;
        points += s.points.length;
        const st = style(s, s.kind === 'eval' ? evalIndex++ : 0);
        return Object.assign({
          label: s.label, kiln: s.key, data: s.points.map((p) => ({ x: p[0], y: p[1] })),
          hidden: !!state.hidden[s.key], tension: 0, spanGaps: false, fill: false,
        }, st);
      });
      const grid = { color: 'rgba(0, 0, 0, 0.08)' };
      const bold = { weight: '600' };
      let tooltipStep;
      const chart = new Chart(canvas, {
        type: 'line',
        data: { datasets },
        plugins: [crosshair],
        options: {
          animation: false,
          responsive: true,
          maintainAspectRatio: false,
          interaction: { mode: 'kilnNearest', intersect: false },
          scales: {
            x: { type: 'linear', suggestedMin: data.start_step,
                 suggestedMax: data.end_step > 0 ? data.end_step : undefined,
                 title: { display: true, text: 'step', font: bold }, grid, ticks: { maxTicksLimit: 11 } },
            // A log axis labels only 1, 2 and 5 times a power of ten, so it skips no label.
            y: { type: toggle && toggle.checked ? 'logarithmic' : 'linear',
                 title: { display: true, text: c.axis, font: bold }, grid,
                 ticks: { maxTicksLimit: 11, autoSkip: !(toggle && toggle.checked),
                          callback(v) { return this.type === 'logarithmic' ? logTick(v) : number(v); } } },
          },
          plugins: {
            legend: { display: false },
            tooltip: {
              mode: 'kilnNearest', intersect: false, usePointStyle: true, boxPadding: 4,
              callbacks: {
                title(items) {
                  tooltipStep = items.length ? items[0].chart.$kilnStep : undefined;
                  return tooltipStep === undefined ? '' : 'step ' + tooltipStep;
                },
                label(ctx) {
                  const at = ctx.parsed.x !== tooltipStep ? ' (step ' + ctx.parsed.x + ')' : '';
                  return ctx.dataset.label + ': ' + number(ctx.parsed.y) + at;
                },
              },
            },
          },
        },
      });
      charts.push(chart);
      drawLegend(chart, legend);
      if (toggle) {
        toggle.addEventListener('change', () => {
          state.log[c.name] = toggle.checked;
          save();
          chart.options.scales.y.type = toggle.checked ? 'logarithmic' : 'linear';
          chart.options.scales.y.ticks.autoSkip = !toggle.checked;
          chart.update();
        });
      }
    }
    if (!data.charts.length) {
      const p = document.createElement('p');
      p.className = 'empty';
      p.textContent = 'No points recorded yet.';
      container.appendChild(p);
    }
    // "#step=N" in the address shows the tooltips at step N (for screenshots and tests); the
    // first chart's tooltip text goes to <html data-tooltip>.
    const wanted = /^#step=(-?[0-9]+)$/.exec(location.hash);
    const showWanted = () => {
      if (!wanted) return;
      charts.forEach((ch, k) => {
        const items = nearestAt(ch, ch.scales.x.getPixelForValue(Number(wanted[1])));
        const at = { x: ch.scales.x.getPixelForValue(ch.$kilnStep),
                     y: (ch.chartArea.top + ch.chartArea.bottom) / 2 };
        ch.setActiveElements(items);
        ch.tooltip.setActiveElements(items, at);
        ch.update();
        if (k === 0) {
          const t = ch.tooltip;
          root.dataset.tooltip = (t.title || []).concat(...(t.body || []).map((b) => b.lines)).join(' | ');
        }
      });
    };
    showWanted();
    // Chart.js follows its containers' size a frame late; a resized window redraws at once.
    window.addEventListener('resize', () => {
      charts.forEach((ch) => ch.resize());
      showWanted();
    });
    root.dataset.rendered = `charts=${data.charts.length} series=${series} points=${points}`;
    if (data.refresh > 0) {
      const reload = () => { if (hovering) setTimeout(reload, 2000); else location.reload(); };
      setTimeout(reload, data.refresh * 1000);
    }
  } catch (e) {
    fail(e && e.message ? e.message : e);
  }
})();
)js";

/// `s` as a JSON string literal, safe inside a <script> element (no "<", ">" or "&").
std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += static_cast<char>(c);
    else if (c < 0x20 || c == '<' || c == '>' || c == '&')
      out += fmt::format("\\u{:04x}", c);
    else
      out += static_cast<char>(c);
  }
  return out + "\"";
}

/// `s` escaped for HTML text.
std::string HtmlText(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

/// A value as JSON: the shortest text that reads back as the same float; null if not finite.
std::string JsonNumber(float v) { return std::isfinite(v) ? fmt::format("{}", v) : "null"; }

/// The axis title of a chart: its metric's short name, spelled out where it is a known one.
std::string AxisTitle(const std::string& name) {
  if (name == "acc") return "accuracy";
  if (name == "mae") return "mean absolute error";
  if (name == "mse") return "mean squared error";
  return name;
}

struct Series {
  std::string key;      // "train ~loss", "eval ones #mae": where it comes from and its short name
  std::string label;    // the legend's text
  std::string kind;     // "train", "average" (a moving average) or "eval"
  std::string dataset;  // the evaluated dataset's name (eval series)
  std::vector<std::pair<int64_t, float>> points;  // (global step, value)
};

struct Chart {
  std::string name;  // the short name without "~"/"#"
  std::vector<Series> series;
};

/// Round tick values covering [lo, hi]: about five steps of 1, 2 or 5 times a power of ten.
std::vector<double> Ticks(double lo, double hi) {
  const double raw = (hi - lo) / 5, mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / mag < 1.5   ? mag
                      : raw / mag < 3.5 ? 2 * mag
                      : raw / mag < 7.5 ? 5 * mag
                                        : 10 * mag;
  std::vector<double> ticks;
  const double first = std::floor(lo / step + 1e-9) * step, last = std::ceil(hi / step - 1e-9) * step;
  for (double t = first; t <= last + step * 1e-9; t += step)
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  return ticks;
}

/// A chart drawn as a static SVG image, for readers that run no scripts (the page's <noscript>):
/// the same series as the interactive chart, with titled axes, round ticks and a grid.
std::string StaticSvg(const Chart& chart) {
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  for (const Series& s : chart.series)
    for (auto [x, y] : s.points)
      if (std::isfinite(y)) {
        x0 = std::min(x0, static_cast<double>(x)), x1 = std::max(x1, static_cast<double>(x));
        y0 = std::min(y0, static_cast<double>(y)), y1 = std::max(y1, static_cast<double>(y));
      }
  if (x0 > x1) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  if (x1 <= x0) x1 = x0 + 1;
  if (y1 <= y0) y1 = y0 + 1;
  const std::vector<double> xt = Ticks(x0, x1), yt = Ticks(y0, y1);
  x0 = xt.front(), x1 = xt.back(), y0 = yt.front(), y1 = yt.back();
  const double W = 560, H = 360, L = 64, R = 16, T = 30, B = 70;
  auto px = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
  auto py = [&](double y) { return H - B - (y - y0) / (y1 - y0) * (H - T - B); };
  const std::string axis = HtmlText(AxisTitle(chart.name));
  std::string s = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {} {}" width="{}" height="{}" data-chart="{}" )"
      R"(font-family="sans-serif" font-size="11">)",
      W, H, W, H, HtmlText(chart.name));
  s += fmt::format(R"(<text x="{}" y="18" font-size="14" font-weight="bold">{}</text>)", L, axis);
  for (double t : xt)
    s += fmt::format(R"(<line x1="{0:.1f}" x2="{0:.1f}" y1="{1}" y2="{2}" stroke="#e5e5e5"/>)"
                     R"(<text x="{0:.1f}" y="{3}" text-anchor="middle">{4:.6g}</text>)",
                     px(t), T, H - B, H - B + 14, t);
  for (double t : yt)
    s += fmt::format(R"(<line x1="{0}" x2="{1}" y1="{2:.1f}" y2="{2:.1f}" stroke="#e5e5e5"/>)"
                     R"(<text x="{3}" y="{4:.1f}" text-anchor="end">{5:.6g}</text>)",
                     L, W - R, py(t), L - 6, py(t) + 4, t);
  s += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle" font-weight="bold">step</text>)",
                   (L + W - R) / 2, H - B + 32);
  s += fmt::format(R"svg(<text transform="translate(16 {}) rotate(-90)" text-anchor="middle" )svg"
                   R"(font-weight="bold">{}</text>)",
                   (T + H - B) / 2, axis);
  static constexpr const char* kEvalColors[] = {"#e6550d", "#31a354", "#756bb1", "#636363"};
  int evals = 0;
  double legend_x = L;
  for (const Series& ser : chart.series) {
    const bool eval = ser.kind == "eval";
    const char* color = eval ? kEvalColors[evals++ % 4] : ser.kind == "average" ? "#1f77b4" : "#9ecae1";
    std::string pts;
    for (auto [x, y] : ser.points)
      if (std::isfinite(y)) pts += fmt::format("{:.1f},{:.1f} ", px(static_cast<double>(x)), py(y));
    s += fmt::format(
        R"(<polyline data-series="{}" data-count="{}" fill="none" stroke="{}" stroke-width="{}"{} )"
        R"(points="{}"><title>{}</title></polyline>)",
        HtmlText(ser.key), ser.points.size(), color, ser.kind == "average" ? 2 : 1.2,
        eval ? R"( stroke-dasharray="5 3")" : "", pts, HtmlText(ser.label));
    // The legend: a row of line samples and labels under the axis title.
    s += fmt::format(R"(<line x1="{0}" x2="{1}" y1="{2}" y2="{2}" stroke="{3}" stroke-width="2"{4}/>)"
                     R"(<text x="{5}" y="{6}">{7}</text>)",
                     legend_x, legend_x + 22, H - 10, color, eval ? R"( stroke-dasharray="5 3")" : "",
                     legend_x + 27, H - 6, HtmlText(ser.label));
    legend_x += 40 + 6.0 * static_cast<double>(ser.label.size());
  }
  return s + "</svg>";
}

struct Recorder {
  std::string path;
  Options options;
  std::vector<Chart> charts;  // in the order their first point came
  bool running = false;
  int64_t start_step = 0, step = 0, end_step = -1;
  bool written = false;
  std::chrono::steady_clock::time_point last_write;

  /// The chart a metric's short name goes to ("~loss" and "loss" share "loss").
  static std::string ChartOf(const std::string& short_name) {
    std::string s = short_name;
    while (!s.empty() && (s[0] == '~' || s[0] == '#')) s.erase(0, 1);
    return s.empty() ? short_name : s;
  }

  /// Adds a point at `at` (replacing one already at that step: a repeated evaluation).
  void Add(const std::string& short_name, const std::string& key, const std::string& label,
           const std::string& kind, const std::string& dataset, int64_t at, float value) {
    const std::string name = ChartOf(short_name);
    auto c = std::find_if(charts.begin(), charts.end(), [&](const Chart& x) { return x.name == name; });
    if (c == charts.end()) c = charts.insert(charts.end(), Chart{name, {}});
    auto s = std::find_if(c->series.begin(), c->series.end(), [&](const Series& x) { return x.key == key; });
    if (s == c->series.end()) s = c->series.insert(c->series.end(), Series{key, label, kind, dataset, {}});
    if (!s->points.empty() && s->points.back().first == at)
      s->points.back().second = value;
    else
      s->points.emplace_back(at, value);
  }

  void AddTrain(const std::string& short_name, int64_t at, float value) {
    const bool average = !short_name.empty() && short_name[0] == '~';
    const std::string title = AxisTitle(ChartOf(short_name));
    Add(short_name, "train " + short_name,
        average ? "train " + title + " (moving average)" : "train " + title, average ? "average" : "train",
        "", at, value);
  }

  void AddEval(const std::string& dataset, const std::string& short_name, int64_t at, float value) {
    Add(short_name, "eval " + dataset + " " + short_name,
        "eval " + dataset + " " + AxisTitle(ChartOf(short_name)), "eval", dataset, at, value);
  }

  std::string Title() const { return options.title.empty() ? "Training" : options.title; }

  /// The line under the heading: the run's state and the last evaluation.
  std::string Status() const {
    std::string s = running ? R"(<span class="running">training</span> · step )" + std::to_string(step)
                            : R"(<span class="finished">finished</span> · step )" + std::to_string(step);
    if (running && end_step > 0) s += " of " + std::to_string(end_step);
    int64_t last_eval = -1;
    for (const Chart& c : charts)
      for (const Series& ser : c.series)
        if (ser.kind == "eval" && !ser.points.empty())
          last_eval = std::max(last_eval, ser.points.back().first);
    if (last_eval >= 0) {
      // "evaluation at step 300 · test: loss 0.333, accuracy 0.879", one group per dataset.
      s += " · evaluation at step " + std::to_string(last_eval);
      std::vector<std::string> datasets;
      for (const Chart& c : charts)
        for (const Series& ser : c.series)
          if (ser.kind == "eval" &&
              std::find(datasets.begin(), datasets.end(), ser.dataset) == datasets.end())
            datasets.push_back(ser.dataset);
      for (const std::string& ds : datasets) {
        std::string values;
        for (const Chart& c : charts)
          for (const Series& ser : c.series)
            if (ser.kind == "eval" && ser.dataset == ds && !ser.points.empty() &&
                ser.points.back().first == last_eval)
              values += fmt::format("{}{} {:.4g}", values.empty() ? "" : ", ", AxisTitle(c.name),
                                    ser.points.back().second);
        if (!values.empty()) s += " · " + HtmlText(ds) + ": " + values;
      }
    }
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char when[32];
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &local);
    return s + " · written " + when;
  }

  std::string Json() const {
    std::string j = "{\"title\":" + JsonString(Title()) + ",\"running\":" + (running ? "true" : "false") +
                    ",\"refresh\":" + std::to_string(running ? options.refresh_seconds : 0) +
                    ",\"start_step\":" + std::to_string(start_step) + ",\"step\":" + std::to_string(step) +
                    ",\"end_step\":" + std::to_string(end_step) + ",\"charts\":[";
    for (size_t i = 0; i < charts.size(); ++i) {
      const Chart& c = charts[i];
      j += std::string(i ? "," : "") + "\n{\"name\":" + JsonString(c.name) +
           ",\"axis\":" + JsonString(AxisTitle(c.name)) + ",\"series\":[";
      for (size_t k = 0; k < c.series.size(); ++k) {
        const Series& s = c.series[k];
        j += std::string(k ? "," : "") + "\n{\"key\":" + JsonString(s.key) +
             ",\"label\":" + JsonString(s.label) + ",\"kind\":" + JsonString(s.kind) + ",\"points\":[";
        for (size_t p = 0; p < s.points.size(); ++p)
          j += std::string(p ? "," : "") + "[" + std::to_string(s.points[p].first) + "," +
               JsonNumber(s.points[p].second) + "]";
        j += "]}";
      }
      j += "]}";
    }
    return j + "]}";
  }

  void Write() {
    if (distributed::Rank() != 0) return;  // A distributed job writes the page from rank 0 alone.
    const std::string title = HtmlText(Title());
    std::string html = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
    if (running && options.refresh_seconds > 0)
      html += fmt::format("<meta name=\"kiln-refresh\" content=\"{}\">\n", options.refresh_seconds);
    html += "<title>" + title + "</title>\n<style>" + kStyle + "</style>\n</head><body>\n";
    html += "<header><h1>" + title + "</h1><div id=\"status\">" + Status() + "</div></header>\n";
    html += "<div id=\"error\" hidden></div>\n<main id=\"charts\"></main>\n<noscript><main>";
    for (const Chart& c : charts) html += "<section class=\"card\">" + StaticSvg(c) + "</section>";
    html += "</main></noscript>\n";
    html +=
        "<footer>Hover over a chart for the values at a step; click a legend entry to hide or show its "
        "series.</footer>\n";
    html += "<script id=\"kiln-data\" type=\"application/json\">" + Json() + "</script>\n";
    html += "<script>\n" + internal::ChartJs() + "\n</script>\n";
    html += std::string("<script>") + kScript + "</script>\n</body></html>\n";
    io::WriteFileAtomically(path, [&](std::ostream& out) { out << html; });
    written = true;
    last_write = std::chrono::steady_clock::now();
  }

  /// Writes unless the page was written less than two seconds ago.
  void MaybeWrite() {
    if (!written || std::chrono::steady_clock::now() - last_write >= std::chrono::seconds(2)) Write();
  }
};

}  // namespace

void AttachToLoop(train::Loop& loop, const std::string& path, Options options) {
  if (path.empty()) detail::Throw("plots::AttachToLoop: the path of the page is empty");
  if (options.eval_every < 0 || options.record_every < 0 || options.refresh_seconds < 0)
    detail::Throw(
        "plots::AttachToLoop: eval_every ({}), record_every ({}) and refresh_seconds ({}) must not be "
        "negative",
        options.eval_every, options.record_every, options.refresh_seconds);
  auto rec = std::make_shared<Recorder>();
  rec->path = path;
  rec->options = std::move(options);
  train::Trainer& trainer = loop.trainer();
  const std::vector<std::string> train_names = trainer.TrainMetricShortNames();
  const std::vector<std::string> eval_names = trainer.EvalMetricShortNames();
  train::Loop* lp = &loop;
  trainer.OnEval([rec, eval_names, lp](const data::DatasetPtr& ds, const std::vector<Tensor>& results) {
    const int64_t step = lp->trainer().store().GlobalStep().Value().Item<int64_t>();
    for (size_t i = 0; i < results.size() && i < eval_names.size(); ++i)
      rec->AddEval(ds->Name(), eval_names[i], step, results[i].Item<float>());
    rec->Write();
  });
  loop.OnStart("plots", 2000, [rec](train::Loop& l) {
    rec->running = true;
    rec->start_step = l.StartStep();
    rec->step = l.StartStep();
    rec->end_step = l.EndStep();
    rec->Write();
  });
  loop.OnStep("plots", 2000, [rec, train_names](train::Loop& l, const std::vector<Tensor>& m) {
    int64_t every = rec->options.record_every;
    if (every <= 0) every = l.EndStep() >= 0 ? std::max<int64_t>(1, (l.EndStep() - l.StartStep()) / 200) : 10;
    const int64_t step = l.LoopStep() + 1;
    rec->step = step;
    if (step % every == 0) {
      for (size_t i = 0; i < m.size() && i < train_names.size(); ++i)
        rec->AddTrain(train_names[i], step, m[i].Item<float>());
      rec->MaybeWrite();
    }
    if (rec->options.eval_every > 0 && step % rec->options.eval_every == 0) {
      for (const data::DatasetPtr& ds : rec->options.eval_datasets) l.trainer().Eval(ds);
    }
  });
  loop.OnEnd("plots", 2000, [rec](train::Loop&) {
    rec->running = false;
    rec->Write();
  });
}

}  // namespace kiln::plots
