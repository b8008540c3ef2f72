#pragma once
/// @file
/// Normalisation statistics of a dataset's input (GoMLX's data.Normalization): the mean and
/// standard deviation to apply as (x - mean) / stddev, computed over a whole finite dataset.
///
///   auto [mean, stddev] = data::Normalization(ds, 0, {-1});  // one pair per feature (last axis)
///   stddev = data::ReplaceZerosByOnes(stddev);                // constant features stay as they are

#include <utility>
#include <vector>

#include "kiln/core/tensor.h"
#include "kiln/data/dataset.h"

namespace kiln::data {

/// The mean and (population) standard deviation of input `input_index` over every batch of
/// `dataset`, which is Reset first and read to its end (and Reset again after). Every axis is
/// reduced but `independent_axes` (negative from the end), which keep one statistic per index:
/// the results have the input's rank, with dimension 1 on the reduced axes, and its dtype (float
/// inputs; Float64 for integer ones). Sums run in double precision. kiln::Error for an infinite
/// dataset, an empty one, an input index or axis out of range, or batches whose independent axes
/// change size.
std::pair<Tensor, Tensor> Normalization(const DatasetPtr& dataset, int input_index,
                                        const std::vector<int>& independent_axes = {});

/// `t` (float) with its zeros replaced by ones: a standard deviation safe to divide by.
Tensor ReplaceZerosByOnes(const Tensor& t);

}  // namespace kiln::data
