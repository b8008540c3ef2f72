#pragma once
// Internal: choosing the next token from a row's logits (transformers::Sampling's rules).

#include <random>
#include <vector>

#include "kiln/transformers/generate.h"

namespace kiln::transformers::internal {

/// kiln::Error naming `fn` for a negative temperature or top_k, top_p outside (0, 1], or a
/// repetition penalty that is not positive.
void CheckSampling(const char* fn, const Sampling& s);

/// The next token for `logits` (one row, modified in place) given the row's tokens so far.
int32_t ChooseToken(std::vector<float>& logits, const Sampling& s, const std::vector<int32_t>& history,
                    std::mt19937_64& rng);

}  // namespace kiln::transformers::internal
