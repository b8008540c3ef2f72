#pragma once
/// @file
/// Forward declarations of the compute layer's handles.

#include <memory>

namespace kiln::compute {

class Backend;
class Buffer;
class ReplicaGroup;
/// Shared handle to a backend; a backend lives as long as any handle, tensor or executable uses it
/// (a bare Buffer does not keep its backend alive).
using BackendPtr = std::shared_ptr<Backend>;
/// Shared handle to memory on a backend's device; released when the last handle goes.
using BufferPtr = std::shared_ptr<Buffer>;

}  // namespace kiln::compute
