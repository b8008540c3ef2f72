// transformers::Sampling: greedy choice, temperature, top-k, top-p and the repetition penalty.

#include "transformers/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_set>

#include "core/check.h"

namespace kiln::transformers::internal {

void CheckSampling(const char* fn, const Sampling& s) {
  if (!(s.temperature >= 0) || !std::isfinite(s.temperature))
    kiln::detail::Throw("{}: sampling temperature {} must be >= 0 (0: greedy)", fn, s.temperature);
  if (s.top_k < 0) kiln::detail::Throw("{}: sampling top_k {} must be >= 0 (0: no limit)", fn, s.top_k);
  if (!(s.top_p > 0 && s.top_p <= 1))
    kiln::detail::Throw("{}: sampling top_p {} must be in (0, 1]", fn, s.top_p);
  if (!(s.repetition_penalty > 0) || !std::isfinite(s.repetition_penalty))
    kiln::detail::Throw("{}: repetition penalty {} must be positive (1: none)", fn, s.repetition_penalty);
}

int32_t ChooseToken(std::vector<float>& logits, const Sampling& s, const std::vector<int32_t>& history,
                    std::mt19937_64& rng) {
  const int64_t n = static_cast<int64_t>(logits.size());
  if (s.repetition_penalty != 1) {
    std::unordered_set<int32_t> seen(history.begin(), history.end());
    const float p = static_cast<float>(s.repetition_penalty);
    for (int32_t id : seen) {
      if (id < 0 || id >= n) continue;
      float& z = logits[static_cast<size_t>(id)];
      z = z > 0 ? z / p : z * p;
    }
  }
  // Greedy: the first largest (a NaN never wins).
  if (s.temperature == 0 || s.top_k == 1) {
    int64_t best = 0;
    for (int64_t i = 1; i < n; ++i) {
      if (logits[static_cast<size_t>(i)] > logits[static_cast<size_t>(best)] ||
          std::isnan(logits[static_cast<size_t>(best)]))
        best = i;
    }
    return static_cast<int32_t>(best);
  }
  // Candidates by decreasing logit (ties by id), cut to top_k.
  std::vector<int32_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  auto greater = [&](int32_t a, int32_t b) {
    const float za = logits[static_cast<size_t>(a)], zb = logits[static_cast<size_t>(b)];
    return za > zb || (za == zb && a < b);
  };
  int64_t keep = s.top_k > 0 ? std::min<int64_t>(s.top_k, n) : n;
  std::partial_sort(order.begin(), order.begin() + keep, order.end(), greater);
  order.resize(static_cast<size_t>(keep));
  // Softmax at the temperature over the candidates, then the top_p nucleus (at least one token).
  const double zmax = logits[static_cast<size_t>(order[0])];
  std::vector<double> prob(order.size());
  double total = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const double z = logits[static_cast<size_t>(order[i])];
    prob[i] = std::isfinite(z) ? std::exp((z - zmax) / s.temperature) : 0.0;
    total += prob[i];
  }
  if (!(total > 0)) return order[0];
  if (s.top_p < 1) {
    double cum = 0;
    size_t cut = prob.size();
    for (size_t i = 0; i < prob.size(); ++i) {
      cum += prob[i] / total;
      if (cum >= s.top_p) {
        cut = i + 1;
        break;
      }
    }
    prob.resize(cut);
    total = std::accumulate(prob.begin(), prob.end(), 0.0);
  }
  std::uniform_real_distribution<double> u(0.0, total);
  double x = u(rng), acc = 0;
  for (size_t i = 0; i < prob.size(); ++i) {
    acc += prob[i];
    if (x < acc) return order[i];
  }
  return order[prob.size() - 1];
}

}  // namespace kiln::transformers::internal
