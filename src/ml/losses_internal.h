#pragma once
// Helpers shared by the loss files (losses.cc, losses_triplet.cc): argument checks and the
// per-example weights and mask of labels[1] and labels[2].

#include <cstdint>
#include <vector>

#include "kiln/graph/ops.h"

namespace kiln::losses::internal {

using graph::Node;

/// Checks the label and prediction lists of loss `fn` (present, float predictions with a batch axis).
void CheckArgs(const char* fn, const std::vector<Node>& labels, const std::vector<Node>& predictions);

/// `v` ([batch] or [batch, 1]) as a [batch] vector of `dtype`; the error names `fn` and `what`.
Node PerExample(const char* fn, const char* what, Node v, int64_t batch, DType dtype);

/// The product of the weights (labels[1]) and the mask (labels[2]) as a [batch] vector of `dt`;
/// an invalid Node when labels hold neither.
Node ExampleWeights(const char* fn, const std::vector<Node>& labels, int64_t batch, DType dt);

/// Class ids for logits [..., classes]: labels [...] or [..., 1] returned as [...] (for rank-2
/// logits, [batch] or [batch, 1] as [batch]); kiln::Error naming `fn` otherwise.
Node PositionLabels(const char* fn, Node ids, Node logits);

}  // namespace kiln::losses::internal
