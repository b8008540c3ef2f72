// The benchmarked networks, softmax cross-entropy and Adam, as kiln graph functions.

#include "models.h"

#include <cmath>

#include "bench_util.h"

namespace kiln::bench {

using graph::Node;

// MLP: three dense layers; CNN: two 5x5 convs, two dense layers.
std::vector<ParamSpec> ModelParams(Model model) {
  if (model == Model::kMlp) {
    return {{"w1", {784, 512}, 784}, {"b1", {512}, 0},       {"w2", {512, 512}, 512},
            {"b2", {512}, 0},        {"w3", {512, 10}, 512}, {"b3", {10}, 0}};
  }
  return {{"k1", {5, 5, 1, 32}, 25},       {"c1", {32}, 0},  {"k2", {5, 5, 32, 64}, 800}, {"c2", {64}, 0},
          {"w3", {7 * 7 * 64, 512}, 3136}, {"b3", {512}, 0}, {"w4", {512, 10}, 512},      {"b4", {10}, 0}};
}

// He-uniform weights, zero biases.
std::vector<Tensor> InitParams(Model model) {
  std::vector<Tensor> out;
  const std::vector<ParamSpec> specs = ModelParams(model);
  for (size_t i = 0; i < specs.size(); ++i) {
    const ParamSpec& spec = specs[i];
    if (spec.fan_in == 0) {
      out.push_back(Tensor::FromShape(Shape(DType::Float32, spec.dims)));
      continue;
    }
    const auto bound = static_cast<float>(std::sqrt(6.0 / static_cast<double>(spec.fan_in)));
    out.push_back(UniformTensor(1000 + i, spec.dims, -bound, bound));
  }
  return out;
}

// Flat pixels for the MLP, a channels-last image for the CNN.
std::vector<int64_t> ExampleDims(Model model) {
  return model == Model::kMlp ? std::vector<int64_t>{784} : std::vector<int64_t>{28, 28, 1};
}

// Uniform [0, 1) pixels.
Tensor InputBatch(Model model, int64_t batch, uint64_t seed) {
  std::vector<int64_t> dims = ExampleDims(model);
  dims.insert(dims.begin(), batch);
  return UniformTensor(seed, dims, 0.0F, 1.0F);
}

// 256 for the MLP, 128 for the CNN.
int64_t TrainBatch(Model model) { return model == Model::kMlp ? 256 : 128; }

// Seeds 1 and 2 for the MLP, 3 and 4 for the CNN (torch_bench.py uses the same).
void TrainData(Model model, Tensor& x, Tensor& labels) {
  const bool mlp = model == Model::kMlp;
  x = InputBatch(model, TrainBatch(model), mlp ? 1 : 3);
  labels = LabelTensor(mlp ? 2 : 4, TrainBatch(model), 10);
}

namespace {

// x·w + b, b broadcast over the batch.
Node Dense(Node x, Node w, Node b) {
  return graph::MatMul(x, w) + graph::Reshape(b, {1, b.shape().Dimensions()[0]});
}

// Same-padded stride-1 convolution plus bias (channels last).
Node Conv(Node x, Node k, Node b) {
  return graph::Convolve(x, k).PadSame().Done() + graph::Reshape(b, {1, 1, 1, b.shape().Dimensions()[0]});
}

// max(x, 0).
Node Relu(Node x) { return graph::MaxScalar(x, 0.0F); }

}  // namespace

// The forward pass.
Node Logits(Model model, const std::vector<Node>& p, Node x) {
  if (model == Model::kMlp) {
    Node h = Relu(Dense(x, p[0], p[1]));
    h = Relu(Dense(h, p[2], p[3]));
    return Dense(h, p[4], p[5]);
  }
  Node h = graph::MaxPool(Relu(Conv(x, p[0], p[1]))).Window(2).Done();
  h = graph::MaxPool(Relu(Conv(h, p[2], p[3]))).Window(2).Done();
  h = graph::DynamicReshape(h,
                            {graph::DimensionSpecFor(h, 0), graph::InferredDim()});  // Batch may be dynamic.
  h = Relu(Dense(h, p[4], p[5]));
  return Dense(h, p[6], p[7]);
}

// mean(logsumexp(logits) - logits[label]), with the max subtracted first.
Node SoftmaxCrossEntropy(Node logits, Node labels) {
  const int64_t classes = logits.shape().Dimensions()[1];
  Node shifted = logits - graph::StopGradient(graph::ReduceAndKeep(logits, graph::ReduceMax, {1}));
  Node log_sum = graph::Log(graph::ReduceSum(graph::Exp(shifted), {1}));
  Node picked = graph::ReduceSum(shifted * graph::OneHot(labels, classes, DType::Float32), {1});
  return graph::ReduceAllMean(log_sum - picked);
}

// Adam as torch.optim.Adam computes it: p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps), through
// the library's update of one tensor (one kiln.adam_update Composite per parameter).
std::vector<Node> AdamUpdate(const std::vector<Node>& params, const std::vector<Node>& grads,
                             const std::vector<Node>& m, const std::vector<Node>& v, Node step) {
  constexpr double kLr = 1e-3, kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;
  Node bc1 = 1.0F - graph::Exp(step * static_cast<float>(std::log(kBeta1)));
  Node bc2 = 1.0F - graph::Exp(step * static_cast<float>(std::log(kBeta2)));
  Node step_size = static_cast<float>(kLr) / bc1;
  Node sqrt_bc2 = graph::Sqrt(bc2);
  std::vector<Node> new_p, new_m, new_v;
  for (size_t i = 0; i < params.size(); ++i) {
    const std::vector<Node> r =
        optimizers::AdamUpdate(params[i], grads[i], m[i], v[i], step_size, sqrt_bc2, kBeta1, kBeta2, kEps);
    new_m.push_back(r[0]);
    new_v.push_back(r[1]);
    new_p.push_back(r[2]);
  }
  std::vector<Node> out = new_p;
  out.insert(out.end(), new_m.begin(), new_m.end());
  out.insert(out.end(), new_v.begin(), new_v.end());
  return out;
}

// Forward, loss, Gradient, Adam.
graph::GraphFn TrainStepFn(Model model) {
  return [model](graph::Graph&, const std::vector<Node>& in) {
    const size_t n = ModelParams(model).size();
    const std::vector<Node> params(in.begin(), in.begin() + static_cast<long>(n));
    const std::vector<Node> m(in.begin() + static_cast<long>(n), in.begin() + static_cast<long>(2 * n));
    const std::vector<Node> v(in.begin() + static_cast<long>(2 * n), in.begin() + static_cast<long>(3 * n));
    Node step = in[3 * n] + 1.0F;
    Node loss = SoftmaxCrossEntropy(Logits(model, params, in[3 * n + 1]), in[3 * n + 2]);
    std::vector<Node> out = AdamUpdate(params, graph::Gradient(loss, params), m, v, step);
    out.push_back(step);
    out.push_back(loss);
    return out;
  };
}

// Forward only.
graph::GraphFn InferenceFn(Model model) {
  return [model](graph::Graph&, const std::vector<Node>& in) {
    const size_t n = ModelParams(model).size();
    const std::vector<Node> params(in.begin(), in.begin() + static_cast<long>(n));
    return std::vector<Node>{Logits(model, params, in[n])};
  };
}

// 2 * (multiply-adds) of the convolutions and dense layers.
double ForwardFlops(Model model) {
  if (model == Model::kMlp) return 2.0 * (784 * 512 + 512 * 512 + 512 * 10);
  return 2.0 * (28 * 28 * 32 * 25 * 1 + 14 * 14 * 64 * 25 * 32 + 3136 * 512 + 512 * 10);
}

// Every layer's input gradient is needed except the first's (its input is the data).
double TrainFlops(Model model) {
  const double first = model == Model::kMlp ? 2.0 * 784 * 512 : 2.0 * 28 * 28 * 32 * 25;
  return 3 * ForwardFlops(model) - first;
}

}  // namespace kiln::bench
