#pragma once
// The reference backend ("ref"): plain loops, obviously right. One device, the host's memory.

#include "compute/registry.h"

namespace kiln::compute {

BackendInfo RefBackendInfo();
BackendPtr NewRefBackend(BackendOptions& options);

}  // namespace kiln::compute
