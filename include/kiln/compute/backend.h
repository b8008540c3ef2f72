#pragma once
/// @file
/// The backend interface: devices and their memory (buffers), compiling a Program into an
/// Executable and running it, capabilities, and the registry that makes backends by name.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/compute/fwd.h"
#include "kiln/compute/program.h"
#include "kiln/core/dtype.h"

namespace kiln::compute {

/// Memory on one of a backend's devices: an untyped block of bytes. The tensor that owns it
/// knows its shape. Released when the last BufferPtr goes.
class Buffer {
 public:
  virtual ~Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  /// Size of the block in bytes.
  int64_t ByteSize() const { return bytes_; }
  /// The device number (0 to backend()->NumDevices()-1) the memory lives on.
  int Device() const { return device_; }
  /// The backend that owns this buffer.
  Backend* backend() const { return backend_; }
  /// Host-addressable memory of the buffer when the backend shares memory with the host
  /// (CPU backends); nullptr for buffers on a discrete device.
  virtual void* HostData() const { return nullptr; }

 protected:
  /// Records the owner, device and size; a backend's buffer type allocates the memory itself.
  Buffer(Backend* backend, int device, int64_t bytes) : backend_(backend), device_(device), bytes_(bytes) {}

 private:
  Backend* backend_;
  int device_;
  int64_t bytes_;
};

/// Live and peak bytes held in a backend's buffers (all devices). Tests of memory behaviour
/// assert on this, not on the process's resident size.
struct MemoryUsage {
  int64_t live_bytes = 0;    ///< Bytes in buffers not yet released.
  int64_t peak_bytes = 0;    ///< Highest live_bytes since the backend was made or ResetPeakMemory().
  int64_t live_buffers = 0;  ///< Number of buffers not yet released.
};

/// How a backend handles shapes that vary between calls (GoMLX's DynamicShapes).
enum class DynamicShapes {
  None,         ///< Static shapes only: graphs are rebuilt and recompiled per concrete shape.
  Native,       ///< One compilation serves every size of the dynamic axes.
  Recompiling,  ///< Accepts dynamic graphs and specialises kernels internally.
};

/// What a backend runs.
struct BackendCapabilities {
  std::vector<DType> dtypes;                           ///< DTypes its kernels accept.
  std::vector<OpType> ops;                             ///< Primitive ops it executes.
  DynamicShapes dynamic_shapes = DynamicShapes::None;  ///< How shapes varying between calls run.
  std::vector<std::string> fused_ops;  ///< Optional fused kernels for composites ("Softmax"...).

  /// True when `dtype` is in `dtypes`.
  bool HasDType(DType dtype) const;
  /// True when `op` is in `ops`.
  bool HasOp(OpType op) const;
  /// True when the fused kernel `name` is in `fused_ops`; else the frontend decomposes.
  bool HasFusedOp(const std::string& name) const;
  /// True unless `dynamic_shapes` is DynamicShapes::None.
  bool HasDynamicShapes() const { return dynamic_shapes != DynamicShapes::None; }
};

/// A compiled Program, ready to run many times (from several threads at once).
class Executable {
 public:
  virtual ~Executable() = default;
  /// Runs on `device`: `inputs` hold the program's parameters in order; `donated[i]` says the
  /// caller gave input i up (its buffer may be reused for an output). Outputs never alias a
  /// non-donated input.
  virtual std::vector<BufferPtr> Execute(const std::vector<BufferPtr>& inputs,
                                         const std::vector<bool>& donated, int device) = 0;
  /// Execute for inputs of the concrete `shapes`, writing the outputs' concrete shapes to
  /// `output_shapes`: how programs with dynamic axes run (DynamicExecutable). For a static program
  /// the shapes must be its parameters' (else kiln::Error) and the outputs are its own.
  virtual std::vector<BufferPtr> ExecuteWithShapes(const std::vector<BufferPtr>& inputs,
                                                   const std::vector<Shape>& shapes,
                                                   const std::vector<bool>& donated, int device,
                                                   std::vector<Shape>& output_shapes);
  /// The program this executable was compiled from.
  virtual const Program& program() const = 0;
};

/// A backend: devices, their memory, and compiling and running programs. Obtain one with
/// compute::New() or compute::NewWithConfig().
class Backend : public std::enable_shared_from_this<Backend> {
 public:
  virtual ~Backend() = default;

  /// Short registry name: "ref", "cpu"...
  virtual std::string Name() const = 0;
  /// One-line human description, with the options in effect.
  virtual std::string Description() const = 0;
  /// Number of devices; device numbers go from 0 to NumDevices()-1.
  virtual int NumDevices() const = 0;
  /// True when the device memory is host memory and buffers can be shared with tensors
  /// without copies (CPU backends).
  virtual bool HasSharedBuffers() const = 0;

  /// A zero-filled buffer whose memory the host addresses directly (HostData() non-null).
  /// Throws kiln::Error where HasSharedBuffers() is false.
  virtual BufferPtr NewSharedBuffer(int device, int64_t bytes) = 0;
  /// A new buffer on `device` holding a copy of `bytes` bytes at `data`.
  virtual BufferPtr BufferFromHost(int device, const void* data, int64_t bytes) = 0;
  /// A buffer on `device` that takes `memory` over instead of copying it: `bytes` bytes of
  /// 64-byte aligned host memory, padded to a multiple of 64 bytes, which the buffer keeps alive
  /// (and the host addresses: HostData() is memory.get()). Null where the backend cannot (its
  /// buffers are not host memory, or the memory does not suit it); the caller then copies with
  /// BufferFromHost. The default returns null.
  virtual BufferPtr AdoptHostMemory(int device, std::shared_ptr<uint8_t> memory, int64_t bytes);
  /// Copies the buffer's contents into `dst`, which holds `buffer.ByteSize()` bytes.
  virtual void BufferToHost(const Buffer& buffer, void* dst) = 0;

  /// DTypes, ops, dynamic-shape support and fused ops.
  virtual const BackendCapabilities& Capabilities() const = 0;
  /// Compiles `program` (verified first); throws kiln::Error naming what it cannot run.
  virtual std::unique_ptr<Executable> Compile(std::shared_ptr<const Program> program) = 0;

  /// Current and peak buffer memory of this backend.
  virtual MemoryUsage MemoryStats() const = 0;
  /// Resets the peak to the current live bytes (for measuring one phase).
  virtual void ResetPeakMemory() = 0;

  /// Throws kiln::Error naming the backend unless 0 <= device < NumDevices().
  void CheckDevice(int device) const;
};

/// A registered backend kind: its name, a description, the options its configuration accepts,
/// and its factory. Backends are registered explicitly from one place (compute/registry.cc).
struct BackendInfo {
  std::string name;         ///< The name New() and NewWithConfig() take ("ref", "cpu").
  std::string description;  ///< One line saying what the backend is.
  /// Option name -> one-line description (the valid keys of "name:key=value,...").
  std::map<std::string, std::string> options;
  /// Configurations besides the default that run different code on this machine and that the
  /// conformance and differential suites also run ("cpu:simd=avx2": each SIMD target the CPU
  /// runs other than the best, which the default uses).
  std::vector<std::string> variants = {};
};

/// Backends linked into this build, best first.
std::vector<BackendInfo> RegisteredBackends();

/// The backend named by $KILN_BACKEND ("ref", "cpu:threads=2"...), else the best one linked in.
BackendPtr New();
/// The backend for a configuration string "name" or "name:key=value,key=value".
/// An unknown name or option is a kiln::Error listing the valid ones.
BackendPtr NewWithConfig(const std::string& config);

}  // namespace kiln::compute
