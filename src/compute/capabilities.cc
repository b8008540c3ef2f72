#include <algorithm>

#include "kiln/compute/backend.h"

namespace kiln::compute {

bool BackendCapabilities::HasDType(DType dtype) const {
  return std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end();
}

bool BackendCapabilities::HasOp(OpType op) const {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

bool BackendCapabilities::HasFusedOp(const std::string& name) const {
  return std::find(fused_ops.begin(), fused_ops.end(), name) != fused_ops.end();
}

}  // namespace kiln::compute
