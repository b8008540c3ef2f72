#pragma once
// The shared state behind Tensor handles: one host copy and per-device copies, synchronised
// lazily. Every member is guarded by `mu` (recursive: a ConstFlatData callback may read the
// same tensor again).

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "kiln/compute/backend.h"

namespace kiln::detail {

/// 64-byte aligned, zero-filled host memory, padded to a multiple of 64 bytes (so a backend may
/// take it over as a buffer: Backend::AdoptHostMemory).
struct HostMemory {
  struct Free {
    void operator()(uint8_t* p) const;
  };
  static std::unique_ptr<uint8_t, Free> Allocate(int64_t bytes);
};

struct TensorStorage {
  explicit TensorStorage(int64_t byte_size) : bytes(byte_size) {}

  struct DeviceCopy {
    compute::BackendPtr backend;
    int device;
    compute::BufferPtr buffer;
  };

  mutable std::recursive_mutex mu;
  const int64_t bytes;
  std::atomic<bool> finalized{false};
  std::atomic<bool> donate{false};  // Marked by graph::Donate for the next execution.
  // Host copy: owned memory, or (when `shared` is set) a backend buffer the host addresses
  // (possibly memory that was `host` until a backend took it over: Tensor::DeviceBuffer).
  std::shared_ptr<uint8_t> host;
  compute::BufferPtr shared;
  bool host_valid = false;
  // Valid device copies (the shared buffer, when there is one, is listed here too).
  std::vector<DeviceCopy> devices;

  uint8_t* HostData() const;
  /// Throws kiln::Error if finalized; `what` names the operation for the message.
  void CheckAlive(const char* what) const;
  /// Makes the host copy valid, copying from a device if needed. Requires `mu` held.
  void EnsureHost();
  /// Drops device copies other than the shared buffer (after a host write). Requires `mu`.
  void InvalidateDevices();
  /// Frees everything and marks the storage finalized. Requires `mu`.
  void Release();
};

}  // namespace kiln::detail
