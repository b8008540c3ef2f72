#pragma once
/// @file
/// data::Take: the first n batches of a dataset (GoMLX's data.Take), for quick evaluations and
/// smoke tests over a large or infinite source.
///
///   auto quick = data::Take(eval_ds, 10);  // 10 batches per evaluation

#include <any>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/data/dataset.h"

namespace kiln::data {

/// A dataset yielding at most `n` batches of `source` (fewer when the source ends first), then
/// ending; Reset resets the source and the count. It is finite even over an infinite source. Named
/// "<source> [Take n]". kiln::Error when `source` is null or n < 0.
DatasetPtr Take(DatasetPtr source, int64_t n);

}  // namespace kiln::data
