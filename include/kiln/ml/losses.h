#pragma once
/// @file
/// Loss functions (kiln::losses), all of the type train::LossFn (kiln/train/trainer.h): labels
/// first, as in GoMLX, then predictions; each returns a scalar, the mean over examples (axis 0)
/// of the per-example loss.
/// Optional per-example weights ([batch] or [batch, 1], float) come as labels[1] and a mask
/// ([batch] or [batch, 1], Bool) as labels[2] (an invalid Node skips the weights): the result is
/// then sum(weight·mask·loss) / sum(weight·mask) (0 when nothing is selected).

#include <vector>

#include "kiln/graph/ops.h"

namespace kiln::losses {

using graph::Node;

/// Mean over examples of the mean squared difference (over each example's elements).
Node MeanSquaredError(const std::vector<Node>& labels, const std::vector<Node>& predictions);
/// Mean over examples of the mean absolute difference.
Node MeanAbsoluteError(const std::vector<Node>& labels, const std::vector<Node>& predictions);
/// Huber loss with delta 1: 0.5·d² for |d| <= 1, |d| - 0.5 beyond.
Node Huber(const std::vector<Node>& labels, const std::vector<Node>& predictions);
/// Binary cross-entropy of probabilities (clipped to [1e-7, 1 - 1e-7]) against labels in [0, 1].
Node BinaryCrossentropy(const std::vector<Node>& labels, const std::vector<Node>& predictions);
/// Binary cross-entropy of logits, stable: max(z, 0) - z·y + log(1 + exp(-|z|)).
Node BinaryCrossentropyLogits(const std::vector<Node>& labels, const std::vector<Node>& predictions);
/// Cross-entropy of logits [batch, classes] against integer class ids ([batch, 1] or [batch]),
/// through log-softmax. An id outside [0, classes) selects no class and counts as a loss of 0.
Node SparseCategoricalCrossEntropyLogits(const std::vector<Node>& labels,
                                         const std::vector<Node>& predictions);
/// Cross-entropy of probabilities [batch, classes] against one-hot or soft labels.
Node CategoricalCrossEntropy(const std::vector<Node>& labels, const std::vector<Node>& predictions);
/// Cross-entropy of logits against one-hot or soft labels, through log-softmax.
Node CategoricalCrossEntropyLogits(const std::vector<Node>& labels, const std::vector<Node>& predictions);

}  // namespace kiln::losses
