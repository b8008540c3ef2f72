// Renders the training plot in headless Chromium (scripts/render-plot.sh) and checks that the
// page drew its charts: the marker its script sets once every chart is built (with the numbers of
// charts, series and points the page holds), and a 1200x800 screenshot that is not blank and
// shows the train and eval lines. Needs Chromium (scripts/install-deps.sh installs it); without
// it these tests fail.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kiln/io/image.h"
#include "kiln/kiln.h"
#include "kiln/train/plots.h"
#include "train/train_test_util.h"

namespace {

using namespace kiln;

namespace fs = std::filesystem;

struct Rendered {
  int status = -1;
  std::string output;  // stdout and stderr of render-plot.sh
};

/// Runs scripts/render-plot.sh on `html`, writing `png` at 1200x800.
Rendered Render(const std::string& html, const std::string& png) {
  const char* source = std::getenv("KILN_TEST_SOURCE_DIR");
  EXPECT_NE(source, nullptr) << "KILN_TEST_SOURCE_DIR is not set";
  const std::string script = (fs::path(source ? source : ".") / "scripts" / "render-plot.sh").string();
  const std::string command = "bash '" + script + "' '" + html + "' '" + png + "' 1200x800 2>&1";
  Rendered r;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) r.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// A page from the one-weight model: 200 steps, the train metrics every 4 steps, an evaluation
/// every 40. `during` gets a copy of the page as it stood at step 120.
/// Sets `loss_at_120` and `eval_at_120` to the train loss and the evaluation's loss at step 120.
void WritePlot(const std::string& path, const std::string& during, double* loss_at_120 = nullptr,
               double* eval_at_120 = nullptr) {
  kiln::test::ScaleFixture f({metrics::NewMovingAverageMeanAbsoluteError("Moving MAE", "~mae", 0.1)},
                             {metrics::NewMeanAbsoluteError("MAE", "#mae")});
  train::Loop loop(f.trainer);
  plots::Options o;
  o.record_every = 4;
  o.eval_datasets = {f.Data(8, 4)};
  o.eval_every = 40;
  o.title = "render test";
  plots::AttachToLoop(loop, path, o);
  loop.OnStep("copy", 3000, [&](train::Loop& l, const std::vector<Tensor>&) {
    if (l.LoopStep() + 1 != 120) return;
    fs::copy_file(path, during, fs::copy_options::overwrite_existing);
    if (loss_at_120) *loss_at_120 = l.LastMetrics()[0].Item<float>();
  });
  f.trainer.OnEval([&](const data::DatasetPtr&, const std::vector<Tensor>& r) {
    if (eval_at_120 && f.store.GlobalStep().Value().Item<int64_t>() == 120) *eval_at_120 = r[0].Item<float>();
  });
  loop.RunSteps(f.Data(8, 4), 200);
}

/// Pixels of `png` (Uint8 [H, W, C]) within 12 of `rgb` on each channel, in columns [x0, x1).
int64_t CountColour(const Tensor& image, std::array<int, 3> rgb, int64_t x0, int64_t x1) {
  const int64_t h = image.shape().Dim(0), w = image.shape().Dim(1), c = image.shape().Dim(2);
  const std::vector<uint8_t> px = image.ToVector<uint8_t>();
  int64_t n = 0;
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = x0; x < std::min(x1, w); ++x) {
      const uint8_t* p = &px[static_cast<size_t>((y * w + x) * c)];
      if (std::abs(p[0] - rgb[0]) <= 12 && std::abs(p[1] - rgb[1]) <= 12 && std::abs(p[2] - rgb[2]) <= 12)
        ++n;
    }
  return n;
}

std::set<uint32_t> Colours(const Tensor& image) {
  const int64_t c = image.shape().Dim(2);
  const std::vector<uint8_t> px = image.ToVector<uint8_t>();
  std::set<uint32_t> colours;
  for (size_t i = 0; i + static_cast<size_t>(c) <= px.size(); i += static_cast<size_t>(c))
    colours.insert(uint32_t{px[i]} << 16 | uint32_t{px[i + 1]} << 8 | px[i + 2]);
  return colours;
}

class PlotRender : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("kiln_plot_render_" + std::to_string(::getpid()));
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string In(const std::string& name) const { return (dir / name).string(); }
  fs::path dir;
};

TEST_F(PlotRender, FinishedAndRunningPagesDrawTheirCharts) {
  double want_loss = -1, want_eval = -1;
  WritePlot(In("plot.html"), In("during.html"), &want_loss, &want_eval);
  ASSERT_GT(want_loss, 0);
  ASSERT_GT(want_eval, 0);
  // 2 charts (loss: train loss, train ~loss, eval loss; mae: train ~mae, eval #mae), 50 train
  // points per train series and 5 evaluations.
  // "#step=120" shows the tooltips at step 120, where every series has a point.
  const Rendered done = Render(In("plot.html") + "#step=120", In("plot.png"));
  ASSERT_EQ(done.status, 0) << done.output;
  EXPECT_NE(done.output.find("render-plot: rendered charts=2 series=5 points=160\n"), std::string::npos)
      << done.output;
  static const std::regex tooltip(
      "render-plot: tooltip step 120 \\| train loss: ([0-9.e-]+) \\| train loss \\(moving average\\): "
      "([0-9.e-]+) \\| eval ones loss: ([0-9.e-]+)\n");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(done.output, m, tooltip)) << done.output;
  // The values shown are the recorded ones at step 120 (4 significant digits).
  EXPECT_NEAR(std::stod(m[1]), want_loss, 5e-4 * want_loss) << done.output;
  EXPECT_NEAR(std::stod(m[3]), want_eval, 5e-4 * want_eval) << done.output;
  // At step 120: 30 train points per series and 3 evaluations; the page still reloads itself.
  const Rendered during = Render(In("during.html"), In("during.png"));
  ASSERT_EQ(during.status, 0) << during.output;
  EXPECT_NE(during.output.find("render-plot: rendered charts=2 series=5 points=96\n"), std::string::npos)
      << during.output;

  for (const char* name : {"plot.png", "during.png"}) {
    SCOPED_TRACE(name);
    ASSERT_GT(fs::file_size(In(name)), 20000u);
    const Tensor image = io::ReadImage(In(name));
    ASSERT_EQ(image.shape().Rank(), 3);
    EXPECT_EQ(image.shape().Dim(0), 800);
    EXPECT_EQ(image.shape().Dim(1), 1200);
    ASSERT_GE(image.shape().Dim(2), 3);
    // Text, grid, lines and their antialiasing: many colours, not a blank or one-colour page.
    EXPECT_GT(Colours(image).size(), 200u);
    // The moving averages (solid blue) and the evaluations (orange) in both charts, side by side.
    for (auto [x0, x1] : {std::pair<int64_t, int64_t>{0, 600}, {600, 1200}}) {
      EXPECT_GT(CountColour(image, {31, 119, 180}, x0, x1), 150) << "train blue in columns " << x0;
      EXPECT_GT(CountColour(image, {230, 85, 13}, x0, x1), 60) << "eval orange in columns " << x0;
    }
  }
}

TEST_F(PlotRender, PageWhoseScriptFailsIsReported) {
  WritePlot(In("plot.html"), In("during.html"));
  std::ifstream in(In("plot.html"));
  std::string html((std::istreambuf_iterator<char>(in)), {});
  // Damaged data: the page's JSON no longer parses, so no chart can be drawn.
  const size_t at = html.find("\"charts\":[");
  ASSERT_NE(at, std::string::npos);
  html.insert(at, "}");
  std::ofstream(In("broken.html")) << html;
  const Rendered r = Render(In("broken.html"), In("broken.png"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("render-plot: the page failed to draw its charts: "), std::string::npos)
      << r.output;
  // A page without the script's marker at all (e.g. its script never ran) fails as well.
  std::ofstream(In("plain.html")) << "<!DOCTYPE html><html><body><p>no charts</p></body></html>\n";
  const Rendered plain = Render(In("plain.html"), In("plain.png"));
  EXPECT_EQ(plain.status, 1) << plain.output;
  EXPECT_NE(plain.output.find("set no data-rendered marker"), std::string::npos) << plain.output;
}

}  // namespace
