#pragma once
/// @file
/// Loss functions (kiln::losses), all of the type train::LossFn (kiln/train/trainer.h): labels
/// first, as in GoMLX, then predictions; each returns a scalar, the mean over examples (axis 0)
/// of the per-example loss.
/// Optional per-example weights ([batch] or [batch, 1], float) come as labels[1] and a mask
/// ([batch] or [batch, 1], Bool) as labels[2] (an invalid Node skips the weights): the result is
/// then sum(weight·mask·loss) / sum(weight·mask) (0 when nothing is selected).

#include <functional>
#include <vector>

#include "kiln/graph/ops.h"

namespace kiln::losses {

using graph::Node;

/// Mean over examples of the mean squared difference (over each example's elements).
Node MeanSquaredError(const std::vector<Node>& labels, const std::vector<Node>& predictions);
/// Mean over examples of the mean absolute difference.
Node MeanAbsoluteError(const std::vector<Node>& labels, const std::vector<Node>& predictions);
/// A loss function: labels, then predictions (the same type as train::LossFn).
using LossFn = std::function<Node(const std::vector<Node>& labels, const std::vector<Node>& predictions)>;

/// Huber loss with delta 1: 0.5·d² for |d| <= 1, |d| - 0.5 beyond.
Node Huber(const std::vector<Node>& labels, const std::vector<Node>& predictions);
/// Huber loss with threshold `delta` > 0 (GoMLX's MakeHuberLoss; torch's huber_loss): 0.5·d² for
/// |d| <= delta, delta·(|d| - 0.5·delta) beyond, averaged over each example's elements.
LossFn MakeHuberLoss(double delta);
/// Binary cross-entropy of probabilities (clipped to [1e-7, 1 - 1e-7]) against labels in [0, 1].
Node BinaryCrossentropy(const std::vector<Node>& labels, const std::vector<Node>& predictions);
/// Binary cross-entropy of logits, stable: max(z, 0) - z·y + log(1 + exp(-|z|)).
Node BinaryCrossentropyLogits(const std::vector<Node>& labels, const std::vector<Node>& predictions);
/// Cross-entropy of logits [batch, classes] against integer class ids ([batch, 1] or [batch]),
/// through log-softmax. An id outside [0, classes) selects no class and counts as a loss of 0.
/// Logits with leading axes [batch, ..., classes] (a language model's [batch, seq, vocab]) take
/// labels [batch, ...] or [batch, ..., 1]: the loss is the mean over every position, weighted by
/// labels[1] and masked by labels[2] given per example ([batch]) or per position.
Node SparseCategoricalCrossEntropyLogits(const std::vector<Node>& labels,
                                         const std::vector<Node>& predictions);
/// Cross-entropy of probabilities [batch, classes] against one-hot or soft labels of the same
/// shape; with leading axes [batch, ..., classes], the mean over every position.
Node CategoricalCrossEntropy(const std::vector<Node>& labels, const std::vector<Node>& predictions);
/// Cross-entropy of logits against one-hot or soft labels, through log-softmax (leading axes as
/// CategoricalCrossEntropy).
Node CategoricalCrossEntropyLogits(const std::vector<Node>& labels, const std::vector<Node>& predictions);

/// How TripletLoss picks its triplets (anchor a, positive p of a's class, negative n of another).
enum class TripletMiningStrategy {
  All,       ///< Every valid triplet of the batch.
  Hard,      ///< Per anchor, its farthest positive and its closest negative.
  SemiHard,  ///< Per anchor, its farthest positive and the closest negative farther than it (else
             ///< the farthest negative).
};

/// The distance between two embeddings in TripletLoss.
enum class PairwiseDistanceMetric {
  L2,         ///< Euclidean distance.
  SquaredL2,  ///< Squared Euclidean distance.
  Cosine,     ///< 1 - cosine similarity (at least 0).
};

/// GoMLX's triplet loss over a batch: labels[0] holds class ids ([batch] or [batch, 1], integer),
/// predictions[0] the embeddings [batch, dim]. Each triplet costs max(d(a,p) - d(a,n) + margin, 0),
/// or softplus(d(a,p) - d(a,n)) when margin <= 0 (a soft margin); the loss is the mean over the
/// triplets `mining` picks. An anchor with no positive or no negative forms no triplet; a batch
/// without triplets has loss 0. Weights and mask (labels[1], labels[2]) apply per anchor: the loss
/// becomes sum(w_a·S_a) / sum(w_a·C_a), S_a and C_a the sum and number of anchor a's triplets.
Node TripletLoss(const std::vector<Node>& labels, const std::vector<Node>& predictions,
                 TripletMiningStrategy mining = TripletMiningStrategy::SemiHard, double margin = 1.0,
                 PairwiseDistanceMetric metric = PairwiseDistanceMetric::L2);
/// TripletLoss with these settings as a LossFn (for a Trainer).
LossFn MakeTripletLoss(TripletMiningStrategy mining = TripletMiningStrategy::SemiHard, double margin = 1.0,
                       PairwiseDistanceMetric metric = PairwiseDistanceMetric::L2);

}  // namespace kiln::losses
