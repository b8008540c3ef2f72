#pragma once
/// kiln: the umbrella header. `#include <kiln/kiln.h>` brings in the whole public API.

#include "kiln/compute/backend.h"
#include "kiln/compute/program.h"
#include "kiln/compute/shape_inference.h"
#include "kiln/core/dtype.h"
#include "kiln/core/error.h"
#include "kiln/core/half.h"
#include "kiln/core/shape.h"
#include "kiln/core/tensor.h"
#include "kiln/core/version.h"
#include "kiln/graph/exec.h"
#include "kiln/graph/graph.h"
#include "kiln/graph/ops.h"
#include "kiln/io/npy.h"
