#include "backends/ref/ref_backend.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>

#include "core/check.h"

namespace kiln::compute {

namespace {

/// Counts live and peak bytes across a backend's buffers.
class MemoryCounter {
 public:
  void Add(int64_t bytes) {
    const int64_t live = live_.fetch_add(bytes) + bytes;
    buffers_.fetch_add(1);
    int64_t peak = peak_.load();
    while (live > peak && !peak_.compare_exchange_weak(peak, live)) {
    }
  }
  void Remove(int64_t bytes) {
    live_.fetch_sub(bytes);
    buffers_.fetch_sub(1);
  }
  MemoryUsage Usage() const { return {live_.load(), peak_.load(), buffers_.load()}; }
  void ResetPeak() { peak_.store(live_.load()); }

 private:
  std::atomic<int64_t> live_{0}, peak_{0}, buffers_{0};
};

/// Host memory standing in for a device buffer. When `shared` it is handed to tensors as their
/// host copy; otherwise the backend behaves like a discrete device (every transfer copies).
class RefBuffer final : public Buffer {
 public:
  RefBuffer(Backend* backend, std::shared_ptr<MemoryCounter> counter, int device, int64_t bytes, bool shared)
      : Buffer(backend, device, bytes), counter_(std::move(counter)), shared_(shared) {
    data_ = static_cast<uint8_t*>(
        ::operator new[](static_cast<size_t>(std::max<int64_t>(bytes, 1)), std::align_val_t(64)));
    std::memset(data_, 0, static_cast<size_t>(std::max<int64_t>(bytes, 1)));
    counter_->Add(bytes);
  }
  ~RefBuffer() override {
    ::operator delete[](data_, std::align_val_t(64));
    counter_->Remove(ByteSize());
  }
  void* HostData() const override { return shared_ ? data_ : nullptr; }
  uint8_t* data() const { return data_; }

 private:
  std::shared_ptr<MemoryCounter> counter_;
  bool shared_;
  uint8_t* data_;
};

class RefBackend final : public Backend {
 public:
  explicit RefBackend(bool shared) : shared_(shared) {}

  std::string Name() const override { return "ref"; }
  std::string Description() const override {
    return fmt::format("ref: reference interpreter (plain loops, obviously right){}",
                       shared_ ? "" : "; shared=false (buffers behave as on a discrete device)");
  }
  int NumDevices() const override { return 1; }
  bool HasSharedBuffers() const override { return shared_; }

  BufferPtr NewSharedBuffer(int device, int64_t bytes) override {
    CheckDevice(device);
    if (!shared_) detail::Throw("backend \"ref\" with shared=false has no buffers shared with the host");
    return std::make_shared<RefBuffer>(this, counter_, device, CheckBytes(bytes), true);
  }

  BufferPtr BufferFromHost(int device, const void* data, int64_t bytes) override {
    CheckDevice(device);
    auto buffer = std::make_shared<RefBuffer>(this, counter_, device, CheckBytes(bytes), shared_);
    if (bytes > 0) std::memcpy(buffer->data(), data, static_cast<size_t>(bytes));
    return buffer;
  }

  void BufferToHost(const Buffer& buffer, void* dst) override {
    const auto* ref = dynamic_cast<const RefBuffer*>(&buffer);
    if (ref == nullptr || buffer.backend() != this) {
      detail::Throw("backend \"ref\": BufferToHost given a buffer of another backend");
    }
    if (buffer.ByteSize() > 0) std::memcpy(dst, ref->data(), static_cast<size_t>(buffer.ByteSize()));
  }

  MemoryUsage MemoryStats() const override { return counter_->Usage(); }
  void ResetPeakMemory() override { counter_->ResetPeak(); }

 private:
  static int64_t CheckBytes(int64_t bytes) {
    if (bytes < 0) detail::Throw("backend \"ref\": negative buffer size {}", bytes);
    return bytes;
  }

  bool shared_;
  std::shared_ptr<MemoryCounter> counter_ = std::make_shared<MemoryCounter>();
};

}  // namespace

BackendInfo RefBackendInfo() {
  return {
      "ref",
      "reference interpreter: plain loops, obviously right; the yardstick other backends are tested against",
      {{"shared",
        "true (default): buffers are host memory shared with tensors; false: behave like a "
        "discrete device, copying on every transfer (for testing)"}}};
}

BackendPtr NewRefBackend(BackendOptions& options) {
  const bool shared = options.TakeBool("shared", true);
  return std::make_shared<RefBackend>(shared);
}

}  // namespace kiln::compute
