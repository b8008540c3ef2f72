// Tests for the progress bar (terminal and plain forms) and the HTML plots (Chart.js inlined, the
// recorded points in the page's JSON, eval points from Trainer::Eval, the refresh while training).

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/train/plots.h"
#include "kiln/train/progress.h"
#include "train/train_test_util.h"

namespace {

using namespace kiln;
using namespace kiln::graph;

/// The one-weight model with a moving-average MAE while training and the MAE in evaluations.
struct Fixture : kiln::test::ScaleFixture {
  Fixture()
      : ScaleFixture({metrics::NewMovingAverageMeanAbsoluteError("Moving MAE", "~mae", 0.1)},
                     {metrics::NewMeanAbsoluteError("MAE", "#mae")}) {}
  data::DatasetPtr Data() { return ScaleFixture::Data(8, 4); }
};

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

TEST(ProgressBar, PlainLinesEveryFivePercentAndTerminalRedraws) {
  Fixture f;
  train::Loop loop(f.trainer);
  std::ostringstream plain;
  commandline::AttachProgressBar(loop, plain, false);
  loop.RunSteps(f.Data(), 100);
  const std::string text = plain.str();
  EXPECT_EQ(Count(text, "\n"), 21) << text;  // the first step, then one line per 5%
  EXPECT_NE(text.find("step 100/100 (100%)"), std::string::npos) << text;
  EXPECT_NE(text.find("ex/s"), std::string::npos);
  EXPECT_NE(text.find("~mae="), std::string::npos);
  EXPECT_NE(text.find("loss="), std::string::npos);
  Fixture g;
  train::Loop tty(g.trainer);
  std::ostringstream term;
  commandline::AttachProgressBar(tty, term, true);
  tty.RunSteps(g.Data(), 10);
  EXPECT_NE(term.str().find("\r\033[K"), std::string::npos);
  EXPECT_EQ(Count(term.str(), "\n"), 1);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

/// The points of the series `key` in the page's JSON (<script id="kiln-data">): (step, value)
/// pairs, NaN for null. Fails the test if the series is missing.
std::vector<std::pair<int64_t, double>> PointsOf(const std::string& html, const std::string& key) {
  std::vector<std::pair<int64_t, double>> points;
  const size_t at = html.find("{\"key\":\"" + key + "\"");
  if (at == std::string::npos) {
    ADD_FAILURE() << "no series " << key;
    return points;
  }
  const size_t begin = html.find("\"points\":[", at) + 10;
  const size_t end = html.find("]}", begin);
  const std::string list = html.substr(begin, end - begin);
  static const std::regex pair(R"(\[(-?[0-9]+),([^\]]+)\])");
  for (auto it = std::sregex_iterator(list.begin(), list.end(), pair); it != std::sregex_iterator(); ++it) {
    const std::string v = (*it)[2];
    points.emplace_back(std::stoll((*it)[1]), v == "null" ? std::nan("") : std::stod(v));
  }
  return points;
}

/// The train metrics every `every` steps and the evaluation results, as a test callback sees them.
struct Recorded {
  std::map<std::string, std::vector<std::pair<int64_t, double>>> series;
  void Add(const std::string& key, int64_t step, const Tensor& value) {
    auto& s = series[key];
    if (!s.empty() && s.back().first == step) s.pop_back();  // the page keeps one point per step
    s.emplace_back(step, value.Item<float>());
  }
};

TEST(Plots, PageEmbedsChartJsAndTheRecordedPoints) {
  Fixture f;
  train::Loop loop(f.trainer);
  const std::string path = (std::filesystem::temp_directory_path() / "kiln_plots_test.html").string();
  std::filesystem::remove(path);
  plots::Options o;
  o.record_every = 5;
  o.eval_datasets = {f.Data()};
  o.eval_every = 25;
  o.title = "scale <model> & run";
  plots::AttachToLoop(loop, path, o);

  // What the page should hold, recorded by callbacks that run after the plots' own.
  Recorded want;
  const std::vector<std::string> train_names = f.trainer.TrainMetricShortNames();
  const std::vector<std::string> eval_names = f.trainer.EvalMetricShortNames();
  ASSERT_EQ(train_names, (std::vector<std::string>{"loss", "~loss", "~mae"}));
  ASSERT_EQ(eval_names, (std::vector<std::string>{"loss", "#mae"}));
  loop.OnStep("test", 3000, [&](train::Loop& l, const std::vector<Tensor>& m) {
    const int64_t step = l.LoopStep() + 1;
    if (step % 5 == 0)
      for (size_t i = 0; i < train_names.size(); ++i) want.Add("train " + train_names[i], step, m[i]);
  });
  f.trainer.OnEval([&](const data::DatasetPtr& ds, const std::vector<Tensor>& r) {
    const int64_t step = f.store.GlobalStep().Value().Item<int64_t>();
    for (size_t i = 0; i < eval_names.size(); ++i)
      want.Add("eval " + ds->Name() + " " + eval_names[i], step, r[i]);
  });
  // During training (read right after the evaluation at step 50 rewrote the page): the refresh.
  std::string during;
  loop.OnStep("read", 3001, [&](train::Loop& l, const std::vector<Tensor>&) {
    if (l.LoopStep() + 1 == 50) during = ReadFile(path);
  });

  loop.RunSteps(f.Data(), 100);
  f.trainer.Eval(f.Data());  // One more evaluation after the run, at the same global step 100.
  const std::string html = ReadFile(path);

  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  // Chart.js is inlined (its banner and its global), and nothing is loaded from elsewhere.
  EXPECT_NE(html.find("Chart.js v3."), std::string::npos);
  EXPECT_NE(html.find("window.Chart="), std::string::npos);
  EXPECT_GT(html.size(), 150000u);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  // The title, escaped.
  EXPECT_NE(html.find("<title>scale &lt;model&gt; &amp; run</title>"), std::string::npos);
  EXPECT_NE(html.find(R"("title":"scale \u003cmodel\u003e \u0026 run")"), std::string::npos);

  // Two charts (loss, mae) with the series in the order their first point came.
  EXPECT_NE(html.find(R"({"name":"loss","axis":"loss","series":[)"), std::string::npos);
  EXPECT_NE(html.find(R"({"name":"mae","axis":"mean absolute error","series":[)"), std::string::npos);
  EXPECT_NE(html.find(R"x({"key":"train ~loss","label":"train loss (moving average)","kind":"average")x"),
            std::string::npos);
  EXPECT_NE(html.find(R"({"key":"eval ones #mae","label":"eval ones mean absolute error","kind":"eval")"),
            std::string::npos);
  EXPECT_LT(html.find(R"("key":"train loss")"), html.find(R"("key":"train ~loss")"));
  EXPECT_LT(html.find(R"("key":"train ~loss")"), html.find(R"("key":"eval ones loss")"));

  // Every point matches what the callbacks saw: 20 train points per series (steps 5..100), and
  // evaluations at 25, 50, 75 and 100 (the one after the run replaces the periodic one at 100).
  ASSERT_EQ(want.series.size(), 5u);
  for (const auto& [key, points] : want.series) {
    SCOPED_TRACE(key);
    const auto got = PointsOf(html, key);
    ASSERT_EQ(got.size(), points.size());
    EXPECT_EQ(got.size(), key.rfind("eval", 0) == 0 ? 4u : 20u);
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].first, points[i].first) << i;
      EXPECT_FLOAT_EQ(static_cast<float>(got[i].second), static_cast<float>(points[i].second)) << i;
    }
  }
  // For readers that run no scripts, <noscript> holds each chart as an SVG image with one
  // polyline per series, a vertex per recorded point.
  const size_t ns = html.find("<noscript>"), ne = html.find("</noscript>");
  ASSERT_NE(ns, std::string::npos);
  ASSERT_NE(ne, std::string::npos);
  const std::string fallback = html.substr(ns, ne - ns);
  EXPECT_EQ(Count(fallback, "<svg "), 2);
  EXPECT_NE(fallback.find(R"(data-chart="mae")"), std::string::npos);
  EXPECT_NE(fallback.find(R"(font-weight="bold">mean absolute error</text>)"), std::string::npos);
  for (const auto& [key, points] : want.series) {
    SCOPED_TRACE(key);
    const size_t at = fallback.find("<polyline data-series=\"" + key + "\" data-count=\"" +
                                    std::to_string(points.size()) + "\"");
    ASSERT_NE(at, std::string::npos);
    const size_t p0 = fallback.find("points=\"", at) + 8;
    EXPECT_EQ(Count(fallback.substr(p0, fallback.find('"', p0) - p0), ","), static_cast<int>(points.size()));
  }
  EXPECT_EQ(PointsOf(html, "train loss").front().first, 5);
  EXPECT_EQ(PointsOf(html, "eval ones loss").back().first, 100);
  // The loss falls as w goes from 0.5 towards 1.
  EXPECT_LT(PointsOf(html, "train ~loss").back().second, PointsOf(html, "train ~loss").front().second);

  // While training the page reloads itself and says so; the last page does not.
  ASSERT_FALSE(during.empty());
  EXPECT_NE(during.find(R"(<meta name="kiln-refresh" content="10">)"), std::string::npos);
  EXPECT_NE(during.find(R"("running":true,"refresh":10,"start_step":0,"step":50,"end_step":100,)"),
            std::string::npos);
  EXPECT_NE(during.find(R"(<span class="running">training</span> · step 50 of 100)"), std::string::npos);
  EXPECT_EQ(PointsOf(during, "train loss").size(), 10u);
  EXPECT_EQ(PointsOf(during, "eval ones loss").size(), 2u);
  EXPECT_EQ(html.find("kiln-refresh"), std::string::npos);
  EXPECT_NE(html.find(R"("running":false,"refresh":0,"start_step":0,"step":100,"end_step":100,)"),
            std::string::npos);
  EXPECT_NE(html.find(R"(<span class="finished">finished</span> · step 100)"), std::string::npos);
  EXPECT_NE(html.find("evaluation at step 100 · ones: loss "), std::string::npos) << html.substr(0, 3000);
  EXPECT_NE(html.find(", mean absolute error "), std::string::npos);
  std::filesystem::remove(path);
}

TEST(Plots, PageWrittenAtTheStartAndNoRefreshWhenAskedFor) {
  Fixture f;
  train::Loop loop(f.trainer);
  const std::string path = (std::filesystem::temp_directory_path() / "kiln_plots_start_test.html").string();
  std::filesystem::remove(path);
  plots::Options o;
  o.refresh_seconds = 0;
  plots::AttachToLoop(loop, path, o);
  std::string first;
  loop.OnStart("read", 3000, [&](train::Loop&) { first = ReadFile(path); });
  loop.RunSteps(f.Data(), 30);
  // Written as the run starts (no points yet), without the refresh asked off.
  EXPECT_NE(first.find(R"("running":true,"refresh":0,"start_step":0,"step":0,"end_step":30,"charts":[])"),
            std::string::npos);
  EXPECT_EQ(first.find("kiln-refresh"), std::string::npos);
  EXPECT_NE(first.find("<title>Training</title>"), std::string::npos);
  // record_every 0: about 200 points per run, so every step of a 30-step run.
  EXPECT_EQ(PointsOf(ReadFile(path), "train ~mae").size(), 30u);
  std::filesystem::remove(path);
}

TEST(Plots, BadOptionsAreErrors) {
  Fixture f;
  train::Loop loop(f.trainer);
  plots::Options o;
  o.refresh_seconds = -1;
  try {
    plots::AttachToLoop(loop, "plot.html", o);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("refresh_seconds (-1)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(plots::AttachToLoop(loop, "", {}), Error);
}

}  // namespace
