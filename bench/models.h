#pragma once
// The benchmarked networks as graph functions: the Fashion-MNIST MLP 784-512-512-10 and the
// CNN (conv5x5x32-relu-maxpool2, conv5x5x64-relu-maxpool2, dense512-relu, dense10), softmax
// cross-entropy, and Adam; the training step takes weights and Adam state as inputs (donated
// by the caller) and returns their new values. torch_bench.py builds the same networks.

#include <cstdint>
#include <string>
#include <vector>

#include <kiln/kiln.h>

namespace kiln::bench {

/// Which network.
enum class Model { kMlp, kCnn };

/// One weight: its dims and fan-in (He-uniform bound sqrt(6 / fan_in); 0: a bias, zeros).
struct ParamSpec {
  std::string name;
  std::vector<int64_t> dims;
  int64_t fan_in = 0;
};

/// The weights of `model` in order (kernels HWIO, dense weights [in, out]).
std::vector<ParamSpec> ModelParams(Model model);
/// Initial weights: He-uniform from the shared hash (seed 1000 + index), biases zero.
std::vector<Tensor> InitParams(Model model);
/// One example's input dims: {784} for the MLP, {28, 28, 1} for the CNN.
std::vector<int64_t> ExampleDims(Model model);
/// A batch of inputs (uniform [0, 1), seed `seed`) with `batch` examples.
Tensor InputBatch(Model model, int64_t batch, uint64_t seed);
/// Batch size of a model's training step (256 for the MLP, 128 for the CNN).
int64_t TrainBatch(Model model);
/// The fixed batch every training case steps on: inputs and Int32 labels.
void TrainData(Model model, Tensor& x, Tensor& labels);

/// The logits [batch, 10] of `model` for input `x`.
graph::Node Logits(Model model, const std::vector<graph::Node>& params, graph::Node x);
/// Mean softmax cross-entropy of `logits` [batch, classes] against Int32 `labels` [batch].
graph::Node SoftmaxCrossEntropy(graph::Node logits, graph::Node labels);
/// Adam (lr 1e-3, betas 0.9/0.999, eps 1e-8, PyTorch's bias correction) for step `step`
/// (Float32 scalar, 1-based): returns new params, then new m, then new v.
std::vector<graph::Node> AdamUpdate(const std::vector<graph::Node>& params,
                                    const std::vector<graph::Node>& grads, const std::vector<graph::Node>& m,
                                    const std::vector<graph::Node>& v, graph::Node step);

/// The training step's graph function. Inputs: P params, P m, P v, step (scalar), x, labels.
/// Outputs: P params, P m, P v, step + 1, loss.
graph::GraphFn TrainStepFn(Model model);
/// The inference graph function. Inputs: P params, x. Output: logits.
graph::GraphFn InferenceFn(Model model);

/// FLOPs of one example's forward pass (multiply-adds count two).
double ForwardFlops(Model model);
/// Training FLOPs per example: forward, weight gradients, and input gradients of every layer
/// but the first.
double TrainFlops(Model model);

}  // namespace kiln::bench
