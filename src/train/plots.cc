// Training curves: recorded points and a self-contained HTML page with one SVG chart per metric.

#include "kiln/train/plots.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <ostream>

#include "core/check.h"
#include "io/atomic_file.h"

namespace kiln::plots {

namespace {

struct Series {
  std::string label;
  std::vector<std::pair<double, double>> points;  // (global step, value)
};

struct Recorder {
  std::string path;
  Options options;
  // Chart (metric short name without "~"/"#") -> series in creation order.
  std::map<std::string, std::vector<Series>> charts;
  std::vector<std::string> order;

  Series& Get(const std::string& chart, const std::string& label) {
    if (!charts.count(chart)) order.push_back(chart);
    for (Series& s : charts[chart])
      if (s.label == label) return s;
    charts[chart].push_back({label, {}});
    return charts[chart].back();
  }

  static std::string ChartOf(const std::string& short_name) {
    std::string s = short_name;
    while (!s.empty() && (s[0] == '~' || s[0] == '#')) s.erase(0, 1);
    return s.empty() ? short_name : s;
  }

  std::string Svg(const std::string& title, const std::vector<Series>& series) const {
    static constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c",
                                              "#d62728", "#9467bd", "#8c564b"};
    double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
    for (const Series& s : series)
      for (auto [x, y] : s.points) {
        if (!std::isfinite(y)) continue;
        x0 = std::min(x0, x);
        x1 = std::max(x1, x);
        y0 = std::min(y0, y);
        y1 = std::max(y1, y);
      }
    if (x0 > x1) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
    if (x1 == x0) x1 = x0 + 1;
    if (y1 == y0) y1 = y0 + 1;
    const double W = 640, H = 320, L = 60, R = 20, T = 30, B = 40;
    auto px = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
    auto py = [&](double y) { return H - B - (y - y0) / (y1 - y0) * (H - T - B); };
    std::string s = fmt::format(
        R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" data-chart="{}">)", W, H, title);
    s += fmt::format(R"(<text x="{}" y="18" font-size="14" font-family="sans-serif">{}</text>)", L, title);
    s += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#999"/>)", L, T,
                     W - L - R, H - T - B);
    s += fmt::format(
        R"(<text x="5" y="{}" font-size="11">{:.4g}</text><text x="5" y="{}" font-size="11">{:.4g}</text>)",
        T + 10, y1, H - B, y0);
    s += fmt::format(
        R"(<text x="{}" y="{}" font-size="11">{:.0f}</text><text x="{}" y="{}" font-size="11">{:.0f}</text>)",
        L, H - B + 15, x0, W - R - 40, H - B + 15, x1);
    for (size_t i = 0; i < series.size(); ++i) {
      const Series& ser = series[i];
      std::string pts;
      for (auto [x, y] : ser.points)
        if (std::isfinite(y)) pts += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
      const char* color = kColors[i % 6];
      s += fmt::format(
          R"(<polyline data-series="{}" data-count="{}" fill="none" stroke="{}" stroke-width="1.5" points="{}"/>)",
          ser.label, ser.points.size(), color, pts);
      if (ser.points.size() <= 50) {
        for (auto [x, y] : ser.points)
          if (std::isfinite(y))
            s += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="2.5" fill="{}"/>)", px(x), py(y), color);
      }
      s += fmt::format(R"(<text x="{}" y="{}" font-size="11" fill="{}">{}</text>)", W - R - 160,
                       T + 15 + 14 * static_cast<double>(i), color, ser.label);
    }
    return s + "</svg>";
  }

  void Write() const {
    std::string html =
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>kiln training</title></head>"
        "<body style=\"font-family:sans-serif\"><h1>Training curves</h1>\n";
    for (const std::string& c : order) html += "<div>" + Svg(c, charts.at(c)) + "</div>\n";
    html += "</body></html>\n";
    io::WriteFileAtomically(path, [&](std::ostream& out) { out << html; });
  }
};

}  // namespace

void AttachToLoop(train::Loop& loop, const std::string& path, Options options) {
  auto rec = std::make_shared<Recorder>();
  rec->path = path;
  rec->options = std::move(options);
  train::Trainer& trainer = loop.trainer();
  const std::vector<std::string> train_names = trainer.TrainMetricShortNames();
  const std::vector<std::string> eval_names = trainer.EvalMetricShortNames();
  train::Loop* lp = &loop;
  trainer.OnEval([rec, eval_names, lp](const data::DatasetPtr& ds, const std::vector<Tensor>& results) {
    const double step = static_cast<double>(lp->trainer().store().GlobalStep().Value().Item<int64_t>());
    for (size_t i = 0; i < results.size() && i < eval_names.size(); ++i) {
      rec->Get(Recorder::ChartOf(eval_names[i]), "eval " + ds->Name() + " " + eval_names[i])
          .points.emplace_back(step, results[i].Item<float>());
    }
    rec->Write();
  });
  loop.OnStep("plots", 2000, [rec, train_names](train::Loop& l, const std::vector<Tensor>& m) {
    int64_t every = rec->options.record_every;
    if (every <= 0) every = l.EndStep() >= 0 ? std::max<int64_t>(1, (l.EndStep() - l.StartStep()) / 200) : 10;
    const int64_t step = l.LoopStep() + 1;
    if (step % every == 0) {
      for (size_t i = 0; i < m.size() && i < train_names.size(); ++i)
        rec->Get(Recorder::ChartOf(train_names[i]), "train " + train_names[i])
            .points.emplace_back(static_cast<double>(step), m[i].Item<float>());
      if ((step / every) % 50 == 0) rec->Write();
    }
    if (rec->options.eval_every > 0 && step % rec->options.eval_every == 0) {
      for (const data::DatasetPtr& ds : rec->options.eval_datasets) l.trainer().Eval(ds);
    }
  });
  loop.OnEnd("plots", 2000, [rec](train::Loop&) { rec->Write(); });
}

}  // namespace kiln::plots
