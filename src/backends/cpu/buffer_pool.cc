// The cpu backend's caching allocator.

#include "backends/cpu/buffer_pool.h"

#include <bit>
#include <new>

#include "core/check.h"
#include "core/checked.h"

namespace kiln::compute::cpu {

namespace {

uint8_t* SystemAllocate(int64_t capacity) {
  try {
    return static_cast<uint8_t*>(::operator new[](static_cast<size_t>(capacity), std::align_val_t(64)));
  } catch (const std::bad_alloc&) {
    kiln::detail::Throw("backend \"cpu\": cannot allocate a buffer of {} bytes (out of memory)", capacity);
  }
}

void SystemFree(uint8_t* p) { ::operator delete[](p, std::align_val_t(64)); }

}  // namespace

int64_t BufferPool::SizeClass(int64_t bytes) {
  if (bytes <= 64) return 64;
  if (bytes <= 4096) return (bytes + 63) / 64 * 64;
  // Four classes per power of two: 2^k, 1.25·2^k, 1.5·2^k, 1.75·2^k.
  const int64_t top = int64_t{1} << (63 - std::countl_zero(static_cast<uint64_t>(bytes - 1)));
  const int64_t step = top / 4;
  return (bytes + step - 1) / step * step;
}

BufferPool::~BufferPool() {
  for (auto& [size, blocks] : free_)
    for (uint8_t* p : blocks) SystemFree(p);
}

uint8_t* BufferPool::Allocate(int64_t bytes) {
  kiln::detail::CheckAllocationSize(bytes, "backend \"cpu\"");  // Also keeps SizeClass exact.
  const int64_t capacity = SizeClass(bytes);
  counter_.Add(bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(capacity);
    if (it != free_.end() && !it->second.empty()) {
      uint8_t* p = it->second.back();
      it->second.pop_back();
      cached_ -= capacity;
      return p;
    }
    ++system_allocations_;
  }
  try {
    return SystemAllocate(capacity);
  } catch (...) {
    counter_.Remove(bytes);
    throw;
  }
}

void BufferPool::Release(uint8_t* data, int64_t bytes) {
  if (data == nullptr) return;
  const int64_t capacity = SizeClass(bytes);
  counter_.Remove(bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_ + capacity <= max_cached_) {
      free_[capacity].push_back(data);
      cached_ += capacity;
      return;
    }
  }
  SystemFree(data);
}

int64_t BufferPool::CachedBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_;
}

int64_t BufferPool::SystemAllocations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return system_allocations_;
}

}  // namespace kiln::compute::cpu
