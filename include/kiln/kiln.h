#pragma once
/// @file
/// kiln: the umbrella header. `#include <kiln/kiln.h>` brings in the whole public API.

#include "kiln/compute/backend.h"
#include "kiln/compute/dynamic.h"
#include "kiln/compute/program.h"
#include "kiln/compute/replicas.h"
#include "kiln/compute/shape_inference.h"
#include "kiln/core/dtype.h"
#include "kiln/core/error.h"
#include "kiln/core/float8.h"
#include "kiln/core/half.h"
#include "kiln/core/shape.h"
#include "kiln/core/tensor.h"
#include "kiln/core/version.h"
#include "kiln/data/batch.h"
#include "kiln/data/bucket.h"
#include "kiln/data/csv.h"
#include "kiln/data/dataset.h"
#include "kiln/data/image_folder.h"
#include "kiln/data/map.h"
#include "kiln/data/mnist.h"
#include "kiln/data/normalization.h"
#include "kiln/data/npz.h"
#include "kiln/data/parallel.h"
#include "kiln/data/take.h"
#include "kiln/distributed/distributed.h"
#include "kiln/graph/collective.h"
#include "kiln/graph/control_flow.h"
#include "kiln/graph/conv.h"
#include "kiln/graph/debug.h"
#include "kiln/graph/dynamic.h"
#include "kiln/graph/exec.h"
#include "kiln/graph/function.h"
#include "kiln/graph/gather.h"
#include "kiln/graph/gradient.h"
#include "kiln/graph/graph.h"
#include "kiln/graph/ops.h"
#include "kiln/graph/ops_complex.h"
#include "kiln/graph/ops_util.h"
#include "kiln/graph/ragged.h"
#include "kiln/graph/random.h"
#include "kiln/graph/sort.h"
#include "kiln/io/gguf.h"
#include "kiln/io/image.h"
#include "kiln/io/npy.h"
#include "kiln/io/safetensors.h"
#include "kiln/ml/activations.h"
#include "kiln/ml/attention.h"
#include "kiln/ml/fnn.h"
#include "kiln/ml/initializers.h"
#include "kiln/ml/kan.h"
#include "kiln/ml/layers.h"
#include "kiln/ml/losses.h"
#include "kiln/ml/metrics.h"
#include "kiln/ml/nn.h"
#include "kiln/ml/normalization.h"
#include "kiln/ml/optimizers.h"
#include "kiln/ml/quantized.h"
#include "kiln/ml/recurrent.h"
#include "kiln/ml/regularizers.h"
#include "kiln/model/model.h"
#include "kiln/onnx/onnx.h"
#include "kiln/quant/quant.h"
#include "kiln/tokenizers/tokenizer.h"
#include "kiln/train/loop.h"
#include "kiln/train/plots.h"
#include "kiln/train/progress.h"
#include "kiln/train/trainer.h"
#include "kiln/transformers/causal_lm.h"
#include "kiln/transformers/config.h"
#include "kiln/transformers/generate.h"
#include "kiln/transformers/hf.h"

/// @namespace kiln
/// kiln's public API: core types (DType, Shape, Tensor, Error, float16, bfloat16) here, each
/// area in a nested namespace.
/// @namespace kiln::compute
/// The backend interface (Backend, Buffer, Executable), the Program IR backends compile, the op
/// table and the shape rules.
/// @namespace kiln::graph
/// Graphs and their ops (GoMLX's names), Exec, automatic differentiation, random numbers and
/// control flow.
/// @namespace kiln::model
/// Store, Scope and Variable: a model's variables and hyperparameters; model::Exec.
/// @namespace kiln::checkpoint
/// Crash-safe checkpoints of a Store in a folder.
/// @namespace kiln::io
/// Files: NumPy .npy/.npz, safetensors, PNG and JPEG images.
/// @namespace kiln::data
/// Datasets: in memory, MNIST-format, CSV, NumPy files, image folders, maps and prefetching.
/// @namespace kiln::layers
/// Layers with variables in a Scope: dense, convolution, normalisation, attention, FNN, KAN.
/// @namespace kiln::nn
/// Stateless neural-network functions (softmax, normalisation, attention...).
/// @namespace kiln::activations
/// Activation functions, also by name (activations::FromName).
/// @namespace kiln::losses
/// Loss functions of the type train::LossFn (labels first, then predictions).
/// @namespace kiln::metrics
/// Training and evaluation metrics: mean and moving-average metrics.
/// @namespace kiln::optimizers
/// Optimizers (SGD, Adam, AdamW, RMSProp, Adagrad) and learning-rate schedules.
/// @namespace kiln::initializers
/// Variable initializers (Glorot, He, orthogonal, constants...).
/// @namespace kiln::regularizers
/// L1 and L2 regularization of variables, added to the training loss.
/// @namespace kiln::tokenizers
/// Tokenizers: HuggingFace tokenizer.json (BPE, WordPiece, Unigram), GPT-2's vocab.json and
/// merges.txt, SentencePiece .model files, and byte-level BPE training.
/// @namespace kiln::train
/// Trainer, Loop and their callbacks (train::EveryNSteps...).
/// @namespace kiln::plots
/// The training plot: a self-contained HTML page of the losses and metrics.
/// @namespace kiln::transformers
/// Decoder-only language models in HuggingFace's layout (Llama, GPT-2), their checkpoints, and
/// text generation with a key/value cache.
/// @namespace kiln::commandline
/// The progress bar of command-line training programs (GoMLX's commandline package).
