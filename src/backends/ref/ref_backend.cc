// The reference backend: its registration, counted host-memory buffers and capabilities.
#include "backends/ref/ref_backend.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>

#include "core/check.h"
#include "core/checked.h"

namespace kiln::compute {

namespace ref {

void MemoryCounter::Add(int64_t bytes) {
  const int64_t live = live_.fetch_add(bytes) + bytes;
  buffers_.fetch_add(1);
  int64_t peak = peak_.load();
  while (live > peak && !peak_.compare_exchange_weak(peak, live)) {
  }
}

void MemoryCounter::Remove(int64_t bytes) {
  live_.fetch_sub(bytes);
  buffers_.fetch_sub(1);
}

RefBuffer::RefBuffer(Backend* backend, std::shared_ptr<MemoryCounter> counter, int device, int64_t bytes,
                     bool shared)
    : Buffer(backend, device, bytes), counter_(std::move(counter)), shared_(shared) {
  kiln::detail::CheckAllocationSize(bytes, "backend \"ref\"");
  try {
    data_ = static_cast<uint8_t*>(
        ::operator new[](static_cast<size_t>(std::max<int64_t>(bytes, 1)), std::align_val_t(64)));
  } catch (const std::bad_alloc&) {
    kiln::detail::Throw("backend \"ref\": cannot allocate a buffer of {} bytes (out of memory)", bytes);
  }
  std::memset(data_, 0, static_cast<size_t>(std::max<int64_t>(bytes, 1)));
  counter_->Add(bytes);
}

RefBuffer::~RefBuffer() {
  ::operator delete[](data_, std::align_val_t(64));
  counter_->Remove(ByteSize());
}

namespace {

int64_t CheckBytes(int64_t bytes) {
  if (bytes < 0) detail::Throw("backend \"ref\": negative buffer size {}", bytes);
  return bytes;
}

}  // namespace

RefBackend::RefBackend(bool shared, bool dynamic, int dynamic_cache, int devices)
    : shared_(shared), dynamic_cache_(dynamic_cache), devices_(devices) {
  // Packed dtypes included: ref runs the storage ops (Parameter, Constant, Reshape,
  // ConvertDType) on them, which are the only ops the shape rules accept for them.
  for (DType d : kAllDTypes) caps_.dtypes.push_back(d);
  caps_.ops = AllOps();
  caps_.dynamic_shapes = dynamic ? DynamicShapes::Native : DynamicShapes::None;
}

std::string RefBackend::Description() const {
  return fmt::format("ref: reference interpreter (plain loops, obviously right){}{}{}",
                     devices_ == 1 ? std::string() : fmt::format("; {} devices", devices_),
                     shared_ ? "" : "; shared=false (buffers behave as on a discrete device)",
                     caps_.HasDynamicShapes() ? "" : "; dynamic=false (static shapes only)");
}

BufferPtr RefBackend::NewSharedBuffer(int device, int64_t bytes) {
  CheckDevice(device);
  if (!shared_) detail::Throw("backend \"ref\" with shared=false has no buffers shared with the host");
  return std::make_shared<RefBuffer>(this, counter_, device, CheckBytes(bytes), true);
}

BufferPtr RefBackend::BufferFromHost(int device, const void* data, int64_t bytes) {
  CheckDevice(device);
  auto buffer = std::make_shared<RefBuffer>(this, counter_, device, CheckBytes(bytes), shared_);
  if (bytes > 0) std::memcpy(buffer->data(), data, static_cast<size_t>(bytes));
  return buffer;
}

void RefBackend::BufferToHost(const Buffer& buffer, void* dst) {
  const RefBuffer* ref = AsRefBuffer(buffer);
  if (ref == nullptr) detail::Throw("backend \"ref\": BufferToHost given a buffer of another backend");
  if (buffer.ByteSize() > 0) std::memcpy(dst, ref->data(), static_cast<size_t>(buffer.ByteSize()));
}

const BackendCapabilities& RefBackend::Capabilities() const { return caps_; }

std::unique_ptr<Executable> RefBackend::Compile(std::shared_ptr<const Program> program) {
  if (!program) detail::Throw("backend \"ref\": Compile given a null program");
  program->Verify();
  if (IsDynamic(*program)) {
    if (!caps_.HasDynamicShapes()) {
      detail::Throw(
          "backend \"ref\" (dynamic=false): the program has dynamic axes, and this backend runs static "
          "shapes "
          "only (build per concrete shape)");
    }
    // Each input signature is specialised (sizes resolved and checked) at its first call; the
    // interpreter's kernels then read those sizes.
    return std::make_unique<DynamicExecutable>(
        std::move(program),
        [this](std::shared_ptr<const Program> p) { return CompileRef(this, std::move(p)); }, dynamic_cache_);
  }
  return CompileRef(this, std::move(program));
}

std::shared_ptr<RefBuffer> RefBackend::NewBuffer(int64_t bytes) {
  return std::make_shared<RefBuffer>(this, counter_, 0, CheckBytes(bytes), shared_);
}

const RefBuffer* RefBackend::AsRefBuffer(const Buffer& buffer) const {
  if (buffer.backend() != this) return nullptr;
  return dynamic_cast<const RefBuffer*>(&buffer);
}

}  // namespace ref

BackendInfo RefBackendInfo() {
  return {
      "ref",
      "reference interpreter: plain loops, obviously right; the yardstick other backends are tested against",
      {{"shared",
        "true (default): buffers are host memory shared with tensors; false: behave like a "
        "discrete device, copying on every transfer (for testing)"},
       {"dynamic",
        "true (default): one compilation serves every size of a program's dynamic axes; false: static "
        "shapes only (for testing the fallback of static backends)"},
       {"dynamic_cache",
        "concrete executables a program with dynamic axes keeps, one per input signature (default 32)"},
       {"devices", "devices it offers, all in host memory (default 1; for tests of multi-device code)"}}};
}

BackendPtr NewRefBackend(BackendOptions& options) {
  const bool shared = options.TakeBool("shared", true);
  const bool dynamic = options.TakeBool("dynamic", true);
  const int cache = options.TakeInt("dynamic_cache", kDefaultDynamicCache);
  if (cache < 1) detail::Throw("backend \"ref\": dynamic_cache={} must be at least 1", cache);
  const int devices = options.TakeInt("devices", 1);
  if (devices < 1 || devices > 4096)
    detail::Throw("backend \"ref\": devices={} must be between 1 and 4096", devices);
  return std::make_shared<ref::RefBackend>(shared, dynamic, cache, devices);
}

}  // namespace kiln::compute
