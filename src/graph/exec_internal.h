#pragma once
// What graph::Exec and model::Exec share about dynamic axes.

#include <string>
#include <vector>

#include "kiln/core/shape.h"

namespace kiln::graph::exec_internal {

/// The shapes a graph is built for when `name`'s function is called with inputs of `shapes` and
/// dynamic axes `axes` (per input, one name per axis, "" static; an empty list keeps the input
/// static; `batch` non-empty: axis 0 of every other input of rank >= 1 is the dynamic axis
/// `batch`): those axes made kDynamic and named when `dynamic_backend`, else `shapes` unchanged.
/// Throws kiln::Error when an input's rank contradicts its names or axes of one name differ.
/// Throws kiln::Error when WithDynamicAxes names axes for more inputs than `num_inputs` (-1: any);
/// `what` names the Exec in the message ("exec \"f\"").
void CheckDynamicAxesInputs(const std::string& what, size_t lists, int num_inputs);

std::vector<Shape> DynamicSignature(const std::string& name,
                                    const std::vector<std::vector<std::string>>& axes,
                                    const std::string& batch, const std::vector<Shape>& shapes,
                                    bool dynamic_backend);

}  // namespace kiln::graph::exec_internal
