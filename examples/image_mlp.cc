// An MLP that learns a picture: f(x, y) -> (r, g, b) for every pixel, from the pixel's
// coordinates alone, then draws the picture it learned into a PNG. A small end-to-end tour of
// training: an in-memory dataset, the layers library, Adam, a Trainer and a Loop with a callback.
//
//   image_mlp [--steps=5000] [--image=FILE] [--out=reconstructed.png] [--seed=42]
//
// Without --image it learns a 64x64 synthetic picture (a disc over two smooth gradients);
// --image takes a PNG or JPEG of at most 256x256 pixels.

#include <kiln/kiln.h>

#include <any>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::graph;

namespace {

struct Flags {
  int64_t steps = 5000;
  std::string image, out = "reconstructed.png";
  uint64_t seed = 42;
};

Flags Parse(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const size_t eq = a.find('=');
    const std::string key = a.substr(0, eq), value = eq == std::string::npos ? "" : a.substr(eq + 1);
    if (key == "--steps")
      f.steps = std::stoll(value);
    else if (key == "--image")
      f.image = value;
    else if (key == "--out")
      f.out = value;
    else if (key == "--seed")
      f.seed = std::stoull(value);
    else {
      std::cerr << "unknown flag " << a << " (valid: --steps --image --out --seed)\n";
      std::exit(2);
    }
  }
  if (f.steps < 1) {
    std::cerr << "--steps must be at least 1\n";
    std::exit(2);
  }
  return f;
}

/// The target picture as (Float32)[height, width, 3] in [0, 1].
Tensor Target(const std::string& path) {
  if (path.empty()) {
    const int64_t h = 64, w = 64;
    std::vector<float> rgb;
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t x = 0; x < w; ++x) {
        const double nx = 2.0 * x / w - 1, ny = 2.0 * y / h - 1;
        rgb.push_back(nx * nx + ny * ny < 0.5 ? 0.95f : 0.1f);
        rgb.push_back(static_cast<float>(0.5 + 0.5 * std::sin(3 * nx)));
        rgb.push_back(static_cast<float>(0.5 + 0.5 * std::cos(2 * ny)));
      }
    }
    return Tensor::FromFlat(Shape(DType::Float32, {h, w, 3}), rgb);
  }
  Tensor img = io::ReadImage(path);  // (Uint8)[H, W, C]
  const int64_t h = img.shape().Dim(0), w = img.shape().Dim(1), c = img.shape().Dim(2);
  if (h > 256 || w > 256) {
    throw Error(path + " is " + std::to_string(w) + "x" + std::to_string(h) +
                " pixels; at most 256x256 keeps training short");
  }
  const std::vector<uint8_t> px = img.ToVector<uint8_t>();
  std::vector<float> rgb;
  for (int64_t i = 0; i < h * w; ++i)
    for (int64_t k = 0; k < 3; ++k)
      rgb.push_back(px[static_cast<size_t>(i * c + std::min(k, c - 1))] / 255.0f);
  return Tensor::FromFlat(Shape(DType::Float32, {h, w, 3}), rgb);
}

/// Every pixel's coordinates scaled to [-1, 1): (Float32)[height * width, 2], row by row.
Tensor Coordinates(int64_t h, int64_t w) {
  std::vector<float> xy;
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      xy.push_back(static_cast<float>(2.0 * x / w - 1));
      xy.push_back(static_cast<float>(2.0 * y / h - 1));
    }
  }
  return Tensor::FromFlat(Shape(DType::Float32, {h * w, 2}), xy);
}

/// Three hidden layers of 64 with relu; a sigmoid keeps the colours in [0, 1].
std::vector<Node> Mlp(model::Scope scope, const std::any&, std::vector<Node> in) {
  Node h = in[0];
  for (const char* name : {"hidden1", "hidden2", "hidden3"})
    h = activations::Relu(layers::Dense(scope.In(name), h, true, 64));
  return {Sigmoid(layers::Dense(scope.In("rgb"), h, true, 3))};
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = Parse(argc, argv);
  try {
    const Tensor target = Target(flags.image);
    const int64_t h = target.shape().Dim(0), w = target.shape().Dim(1);
    compute::BackendPtr backend = compute::New();
    model::Store store;
    store.SetRNGStateFromSeed(flags.seed);

    auto pixels =
        data::InMemoryFromData(backend, "pixels", {Coordinates(h, w)}, {target.Reshape({h * w, 3})});
    pixels->BatchSize(512, true).Shuffle(flags.seed).Infinite(true);

    train::Trainer trainer(backend, store, Mlp, losses::MeanSquaredError,
                           optimizers::Adam().LearningRate(0.003).Done(), {}, {});
    train::Loop loop(trainer);
    train::NTimesDuringLoop(loop, 5, "log", 0, [](train::Loop& l, const std::vector<Tensor>& m) {
      std::cout << "step " << l.LoopStep() + 1 << ": mse " << m[0].Item<float>() << " (moving average "
                << m[1].Item<float>() << ")\n";
    });
    std::cout << "learning a " << w << "x" << h << " picture in " << flags.steps << " steps of 512 pixels on "
              << backend->Description() << "\n";
    loop.RunSteps(pixels, flags.steps);

    // The whole picture through the trained network, and its error against the target.
    model::Exec predict =
        model::NewExec(backend, store, [](model::Scope scope, Node xy) { return Mlp(scope, {}, {xy})[0]; });
    Tensor rgb = predict.Call1(Coordinates(h, w));
    const std::vector<float> got = rgb.ToVector<float>(), want = target.ToVector<float>();
    double se = 0;
    for (size_t i = 0; i < got.size(); ++i) se += (got[i] - want[i]) * (got[i] - want[i]);
    const double mse = se / static_cast<double>(got.size());
    std::cout << "final mse over the picture: " << mse << " (PSNR " << 10 * std::log10(1 / mse) << " dB)\n";
    io::WriteImage(flags.out, rgb.Reshape({h, w, 3}));
    std::cout << "wrote " << flags.out << ": " << io::ReadImage(flags.out).shape() << "\n";
  } catch (const Error& e) {
    std::cerr << "image_mlp: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
