// Tests for data::ImageFolder and data::ResizeImage: a class tree of PNGs and JPEGs written by
// the test, labels in sorted class order, channel conversion, resizing (values worked out by
// hand from the half-pixel bilinear formula), dtypes, and errors naming the offending file.

#include "kiln/data/image_folder.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
namespace fs = std::filesystem;
using kiln::test::TempDir;
using kiln::test::Throws;

// An h x w x c image whose every byte is `value`.
Tensor Flat(int64_t h, int64_t w, int64_t c, uint8_t value) {
  return Tensor::FromFlat(Shape(DType::Uint8, {h, w, c}),
                          std::vector<uint8_t>(static_cast<size_t>(h * w * c), value));
}

void Save(const TempDir& dir, const std::string& rel, const Tensor& img) {
  fs::create_directories((dir.path() / rel).parent_path());
  io::WriteImage(dir / rel, img);
}

TEST(ImageFolder, ClassesLabelsAndPixels) {
  TempDir dir;
  // Classes "zebra", "ant", "cat" (sorted: ant=0, cat=1, zebra=2); a JPEG among the PNGs; a text
  // file and a hidden folder that are ignored.
  Save(dir, "zebra/1.png", Flat(2, 3, 3, 200));
  Save(dir, "ant/b.png", Flat(2, 3, 3, 10));
  Save(dir, "ant/a.PNG", Flat(2, 3, 3, 20));
  Save(dir, "cat/x.jpg", Flat(2, 3, 3, 120));
  Save(dir, ".hidden/h.png", Flat(2, 3, 3, 0));
  std::ofstream(dir / "cat/notes.txt") << "not an image";
  for (const char* config : {"cpu", "ref"}) {
    SCOPED_TRACE(config);
    auto ds = data::ImageFolder(compute::NewWithConfig(config), dir.str(), {.dtype = DType::Uint8});
    EXPECT_EQ(ds->ClassNames(), (std::vector<std::string>{"ant", "cat", "zebra"}));
    ASSERT_EQ(ds->NumExamples(), 4);
    EXPECT_EQ(fs::path(ds->Files()[0]).filename(), "a.PNG");
    ds->BatchSize(4, false);
    std::any spec;
    std::vector<Tensor> x, y;
    ASSERT_TRUE(ds->Yield(spec, x, y));
    EXPECT_EQ(x[0].shape(), Shape(DType::Uint8, {4, 2, 3, 3}));
    EXPECT_EQ(y[0].shape(), Shape(DType::Int32, {4, 1}));
    EXPECT_EQ(y[0].ToVector<int32_t>(), (std::vector<int32_t>{0, 0, 1, 2}));
    const std::vector<uint8_t> px = x[0].ToVector<uint8_t>();
    EXPECT_EQ(px[0], 20);
    EXPECT_EQ(px[18], 10);
    EXPECT_NEAR(px[36], 120, 2);  // The JPEG: a flat colour survives nearly exactly.
    EXPECT_EQ(px[54], 200);
  }
  // Float32 in [0, 1].
  auto f = data::ImageFolder(compute::New(), dir.str());
  f->BatchSize(1, false);
  std::any spec;
  std::vector<Tensor> x, y;
  ASSERT_TRUE(f->Yield(spec, x, y));
  EXPECT_EQ(x[0].shape(), Shape(DType::Float32, {1, 2, 3, 3}));
  EXPECT_FLOAT_EQ(x[0].ToVector<float>()[0], 20.0f / 255);
}

TEST(ImageFolder, ChannelsAndResizing) {
  TempDir dir;
  // A gray 1x2 image [0, 255] and an RGB 2x2 one.
  Save(dir, "a/gray.png", Tensor::FromFlat(Shape(DType::Uint8, {1, 2, 1}), std::vector<uint8_t>{0, 255}));
  Save(dir, "b/rgb.png",
       Tensor::FromFlat(Shape(DType::Uint8, {2, 2, 3}),
                        std::vector<uint8_t>{255, 0, 0, 0, 255, 0, 0, 0, 255, 100, 100, 100}));
  EXPECT_TRUE(Throws([&] { data::ImageFolder(compute::New(), dir.str()); },
                     {"rgb.png has 3 channels", "gray.png has 1"}));
  EXPECT_TRUE(Throws([&] { data::ImageFolder(compute::New(), dir.str(), {.channels = 3}); },
                     {"rgb.png is 2x2", "gray.png is 1x2", "height and width"}));
  auto ds = data::ImageFolder(compute::New(), dir.str(),
                              {.height = 1, .width = 4, .channels = 1, .dtype = DType::Uint8});
  ds->BatchSize(2, false);
  std::any spec;
  std::vector<Tensor> x, y;
  ASSERT_TRUE(ds->Yield(spec, x, y));
  ASSERT_EQ(x[0].shape(), Shape(DType::Uint8, {2, 1, 4, 1}));
  const std::vector<uint8_t> px = x[0].ToVector<uint8_t>();
  // Widening [0, 255] to 4: source x = (i + 0.5) / 2 - 0.5 = -0.25 (clamped to 0), 0.25, 0.75,
  // 1.25 (clamped to the last pixel): 0, 63.75, 191.25, 255.
  EXPECT_EQ(std::vector<uint8_t>(px.begin(), px.begin() + 4), (std::vector<uint8_t>{0, 64, 191, 255}));
  // The RGB image to gray (luma 0.299, 0.587, 0.114): rows [76, 150] and [29, 100]; resized to
  // 1x4: source y = 0.5 (the rows' mean), x as above: [52.5, 52.5+0.25*(125-52.5), ...].
  const double top[2] = {76, 150}, bottom[2] = {29, 100};
  const double col[4][2] = {{1, 0}, {0.75, 0.25}, {0.25, 0.75}, {0, 1}};
  for (int i = 0; i < 4; ++i) {
    const double v = 0.5 * (top[0] + bottom[0]) * col[i][0] + 0.5 * (top[1] + bottom[1]) * col[i][1];
    EXPECT_NEAR(px[static_cast<size_t>(4 + i)], v, 0.5 + 1e-9) << i;
  }
  // Gray to RGBA: replicated, opaque.
  auto rgba = data::ImageFolder(compute::New(), dir.str(),
                                {.height = 1, .width = 2, .channels = 4, .dtype = DType::Uint8});
  ASSERT_TRUE(rgba->Yield(spec, x, y));
  EXPECT_EQ(x[0].ToVector<uint8_t>(), (std::vector<uint8_t>{0, 0, 0, 255, 255, 255, 255, 255}));
}

TEST(ImageFolder, ResizeImageDownAndIdentity) {
  // 4x4 -> 2x2 halves exactly between pixel pairs: source 0.5 and 2.5 in each axis.
  std::vector<uint8_t> v(16);
  for (size_t i = 0; i < 16; ++i) v[i] = static_cast<uint8_t>(i * 10);
  Tensor img = Tensor::FromFlat(Shape(DType::Uint8, {4, 4, 1}), v);
  // Output (0, 0): mean of pixels (0,0),(0,1),(1,0),(1,1) = (0 + 10 + 40 + 50) / 4 = 25.
  EXPECT_EQ(data::ResizeImage(img, 2, 2).ToVector<uint8_t>(), (std::vector<uint8_t>{25, 45, 105, 125}));
  EXPECT_TRUE(data::ResizeImage(img, 4, 4).Equal(img));
  EXPECT_TRUE(Throws([&] { data::ResizeImage(img, 0, 2); }, {"0x2"}));
}

TEST(ImageFolder, Errors) {
  TempDir dir;
  EXPECT_TRUE(Throws([&] { data::ImageFolder(compute::New(), dir / "nope"); }, {"nope", "not a directory"}));
  EXPECT_TRUE(Throws([&] { data::ImageFolder(compute::New(), dir.str()); }, {"no class subfolders"}));
  fs::create_directories(dir / "empty");
  EXPECT_TRUE(Throws([&] { data::ImageFolder(compute::New(), dir.str()); }, {"no .png, .jpg or .jpeg"}));
  std::ofstream(dir / "empty/broken.png") << "garbage";
  EXPECT_TRUE(Throws([&] { data::ImageFolder(compute::New(), dir.str()); }, {"broken.png"}));
  EXPECT_TRUE(Throws([&] { data::ImageFolder(compute::New(), dir.str(), {.channels = 2}); }, {"channels 2"}));
  EXPECT_TRUE(Throws([&] { data::ImageFolder(compute::New(), dir.str(), {.height = 5}); }, {"5x0"}));
  EXPECT_TRUE(
      Throws([&] { data::ImageFolder(compute::New(), dir.str(), {.dtype = DType::Int32}); }, {"Int32"}));
}

}  // namespace
