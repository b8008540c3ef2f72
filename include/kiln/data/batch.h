#pragma once
/// @file
/// data::Batch and data::Buffer (GoMLX's dataset.Batch and dataset.Buffer): batches made from a
/// dataset that yields one example at a time, and a dataset read ahead on a background thread.
///
///   auto batches = data::Buffer(data::Batch(examples, 64, true, false));

#include <cstdint>

#include "kiln/data/dataset.h"
#include "kiln/data/parallel.h"

namespace kiln::data {

/// Batches of `batch_size` consecutive items of `source`. With `create_leading_axis` each item
/// is one example and gets stacked along a new axis 0 (items of shape [28, 28] make [n, 28, 28]);
/// otherwise items are concatenated along their axis 0 (to make larger batches of batches). The
/// last batch of a finite source holds what is left unless `drop_incomplete`. A batch's spec is
/// its first item's. Named "<source> [Batch]"; infinite when the source is. kiln::Error naming
/// the dataset when `source` is null, batch_size < 1, items of one batch differ in count, dtype
/// or shape (but for axis 0 when concatenating), or a tensor is packed or not Ok.
DatasetPtr Batch(DatasetPtr source, int64_t batch_size, bool create_leading_axis = true,
                 bool drop_incomplete = false);

/// `source` read ahead by one background thread into a queue of `buffer` batches, in order
/// (GoMLX's dataset.Buffer: data::Parallel(source).Buffer(buffer).NumWorkers(1).Done()).
std::shared_ptr<ParallelDataset> Buffer(DatasetPtr source, int buffer = 1);

}  // namespace kiln::data
