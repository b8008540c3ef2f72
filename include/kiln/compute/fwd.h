#pragma once
/// Forward declarations of the compute layer's handles.

#include <memory>

namespace kiln::compute {

class Backend;
class Buffer;
/// Shared handle to a backend; backends live as long as any handle, tensor or buffer uses them.
using BackendPtr = std::shared_ptr<Backend>;
/// Shared handle to memory on a backend's device; released when the last handle goes.
using BufferPtr = std::shared_ptr<Buffer>;

}  // namespace kiln::compute
