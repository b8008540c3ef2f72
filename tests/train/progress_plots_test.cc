// Tests for the progress bar (terminal and plain forms) and the HTML plots (SVG present, one
// polyline per series with the right point counts, eval points from Trainer::Eval).

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

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

TEST(Plots, HtmlWithSvgCurvesAndEvalPoints) {
  Fixture f;
  train::Loop loop(f.trainer);
  const std::string path = (std::filesystem::temp_directory_path() / "kiln_plots_test.html").string();
  plots::Options o;
  o.record_every = 5;
  o.eval_datasets = {f.Data()};
  o.eval_every = 25;
  plots::AttachToLoop(loop, path, o);
  loop.RunSteps(f.Data(), 100);
  f.trainer.Eval(f.Data());  // One more eval point, outside the periodic ones.
  std::ifstream in(path);
  const std::string html((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  // Self-contained: no scripts, no external resources.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);
  EXPECT_EQ(Count(html, "<svg"), 2);  // loss and mae charts
  EXPECT_NE(html.find(R"(data-series="train loss" data-count="20")"), std::string::npos);
  EXPECT_NE(html.find(R"(data-series="train ~loss" data-count="20")"), std::string::npos);
  EXPECT_NE(html.find(R"(data-series="train ~mae" data-count="20")"), std::string::npos);
  EXPECT_NE(html.find(R"(data-series="eval ones loss" data-count="5")"), std::string::npos)
      << html.substr(0, 2000);
  EXPECT_NE(html.find(R"(data-series="eval ones #mae" data-count="5")"), std::string::npos);
  std::filesystem::remove(path);
}

}  // namespace
