#pragma once
// The reference backend ("ref"): plain loops, obviously right. The host's memory; one device, or
// `devices=N` standing in for several (for tests of multi-device code).
// Declares the backend, its counted buffers and the compile entry point of its interpreter.

#include <atomic>
#include <cstdint>
#include <memory>

#include "compute/registry.h"
#include "kiln/compute/dynamic.h"

namespace kiln::compute {

BackendInfo RefBackendInfo();
BackendPtr NewRefBackend(BackendOptions& options);

namespace ref {

/// Counts live and peak bytes across a backend's buffers (thread-safe).
class MemoryCounter {
 public:
  void Add(int64_t bytes);
  void Remove(int64_t bytes);
  MemoryUsage Usage() const { return {live_.load(), peak_.load(), buffers_.load()}; }
  void ResetPeak() { peak_.store(live_.load()); }

 private:
  std::atomic<int64_t> live_{0}, peak_{0}, buffers_{0};
};

/// Host memory standing in for a device buffer (64-byte aligned, zero-filled). When `shared` it
/// is handed to tensors as their host copy; otherwise the backend behaves like a discrete device
/// (every transfer copies).
class RefBuffer final : public Buffer {
 public:
  RefBuffer(Backend* backend, std::shared_ptr<MemoryCounter> counter, int device, int64_t bytes, bool shared);
  ~RefBuffer() override;
  void* HostData() const override { return shared_ ? data_ : nullptr; }
  /// The memory, whether or not it is shared with tensors.
  uint8_t* data() const { return data_; }

 private:
  std::shared_ptr<MemoryCounter> counter_;
  bool shared_;
  uint8_t* data_;
};

class RefBackend final : public Backend {
 public:
  /// `shared`: buffers shared with the host; `dynamic`: run dynamic axes natively (else static
  /// shapes only); `dynamic_cache`: concrete executables a dynamic program keeps.
  /// `devices`: how many devices it offers (all in host memory; for tests of multi-device code).
  RefBackend(bool shared, bool dynamic, int dynamic_cache, int devices = 1);

  std::string Name() const override { return "ref"; }
  std::string Description() const override;
  int NumDevices() const override { return devices_; }
  bool HasSharedBuffers() const override { return shared_; }

  BufferPtr NewSharedBuffer(int device, int64_t bytes) override;
  BufferPtr BufferFromHost(int device, const void* data, int64_t bytes) override;
  void BufferToHost(const Buffer& buffer, void* dst) override;

  const BackendCapabilities& Capabilities() const override;
  std::unique_ptr<Executable> Compile(std::shared_ptr<const Program> program) override;

  MemoryUsage MemoryStats() const override { return counter_->Usage(); }
  void ResetPeakMemory() override { counter_->ResetPeak(); }

  /// A new counted buffer on device 0 (shared with the host when the backend is): what
  /// executions allocate their intermediate values and outputs in.
  std::shared_ptr<RefBuffer> NewBuffer(int64_t bytes);
  /// `buffer` as a RefBuffer of this backend, or nullptr when it belongs to another one.
  const RefBuffer* AsRefBuffer(const Buffer& buffer) const;

 private:
  bool shared_;
  int dynamic_cache_;
  int devices_ = 1;
  BackendCapabilities caps_;
  std::shared_ptr<MemoryCounter> counter_ = std::make_shared<MemoryCounter>();
};

/// Compiles `program` (already verified) for `backend` (ref_executable.cc): checks what the
/// interpreter cannot run, then precomputes every instruction's kernel and the values' last uses.
std::unique_ptr<Executable> CompileRef(RefBackend* backend, std::shared_ptr<const Program> program);

}  // namespace ref
}  // namespace kiln::compute
