#pragma once
// The cpu backend's caching allocator: freed blocks are kept in size classes and handed out
// again, so a steady stream of executions does not go back to the system allocator (no
// mmap/munmap per call once warm).

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "backends/ref/ref_backend.h"

namespace kiln::compute::cpu {

class BufferPool {
 public:
  /// `max_cached`: bytes of free blocks kept at most (beyond, freed blocks go back to the system).
  explicit BufferPool(int64_t max_cached = int64_t{1} << 30) : max_cached_(max_cached) {}
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  /// A 64-byte aligned block of at least `bytes` (its capacity is the size class). Counted as
  /// `bytes` live bytes in Usage() until released.
  uint8_t* Allocate(int64_t bytes);
  /// Returns a block obtained from Allocate(bytes).
  void Release(uint8_t* data, int64_t bytes);
  /// Counts (and stops counting) `bytes` of memory a buffer took over from the host as live
  /// bytes in Usage(): not the pool's blocks, but the backend's buffers all the same.
  void CountAdopted(int64_t bytes) { counter_.Add(bytes); }
  void ForgetAdopted(int64_t bytes) { counter_.Remove(bytes); }

  MemoryUsage Usage() const { return counter_.Usage(); }
  void ResetPeak() { counter_.ResetPeak(); }
  /// Bytes held in free blocks.
  int64_t CachedBytes() const;
  /// Blocks obtained from the system so far (for tests: a warm pool stops growing).
  int64_t SystemAllocations() const;

  /// The capacity of the size class holding `bytes`: multiples of 64 bytes up to 4 KiB, then
  /// four classes per power of two (at most 25% slack).
  static int64_t SizeClass(int64_t bytes);

 private:
  ref::MemoryCounter counter_;
  const int64_t max_cached_;
  mutable std::mutex mu_;
  std::unordered_map<int64_t, std::vector<uint8_t*>> free_;
  int64_t cached_ = 0;
  int64_t system_allocations_ = 0;
};

}  // namespace kiln::compute::cpu
