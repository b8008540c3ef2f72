#include "kiln/core/tensor.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "core/check.h"
#include "core/checked.h"
#include "core/tensor_storage.h"
#include "kiln/core/float8.h"

namespace kiln {

namespace detail {

void HostMemory::Free::operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t(64)); }

std::unique_ptr<uint8_t, HostMemory::Free> HostMemory::Allocate(int64_t bytes) {
  // Always allocate at least one byte so data() is never null, even for empty tensors.
  CheckAllocationSize(bytes, "Tensor");
  const size_t n = (static_cast<size_t>(std::max<int64_t>(bytes, 1)) + 63) / 64 * 64;
  uint8_t* p = nullptr;
  try {
    p = static_cast<uint8_t*>(::operator new[](n, std::align_val_t(64)));
  } catch (const std::bad_alloc&) {
    Throw("Tensor: cannot allocate {} bytes of host memory (out of memory)", bytes);
  }
  std::memset(p, 0, n);
  return std::unique_ptr<uint8_t, Free>(p);
}

uint8_t* TensorStorage::HostData() const {
  return shared ? static_cast<uint8_t*>(shared->HostData()) : host.get();
}

void TensorStorage::CheckAlive(const char* what) const {
  if (finalized.load()) {
    Throw("Tensor::{}: the tensor was finalized (FinalizeAll) or its buffer donated; its data is gone", what);
  }
}

void TensorStorage::EnsureHost() {
  if (host_valid) return;
  if (devices.empty()) Throw("Tensor: no valid copy of the data on the host or any device");
  if (!host) host = HostMemory::Allocate(bytes);
  const DeviceCopy& from = devices.front();
  from.backend->BufferToHost(*from.buffer, host.get());
  host_valid = true;
}

void TensorStorage::InvalidateDevices() {
  std::erase_if(devices, [this](const DeviceCopy& c) { return c.buffer != shared; });
}

void TensorStorage::Release() {
  devices.clear();
  shared.reset();
  host.reset();
  host_valid = false;
  finalized = true;
}

}  // namespace detail

using detail::TensorStorage;

Tensor::Tensor(Shape shape, std::shared_ptr<TensorStorage> storage)
    : shape_(std::move(shape)), storage_(std::move(storage)) {}

namespace {

void CheckStaticShape(const Shape& shape, const char* what) {
  if (!shape.Ok()) detail::Throw("Tensor::{}: invalid shape (dtype Invalid)", what);
  if (!IsValid(shape.dtype()))
    detail::Throw("Tensor::{}: invalid dtype {}", what, static_cast<int>(shape.dtype()));
  if (shape.IsDynamic())
    detail::Throw("Tensor::{}: shape {} has dynamic axes; tensors have concrete shapes", what, shape);
}

std::shared_ptr<TensorStorage> NewHostStorage(const Shape& shape) {
  auto storage = std::make_shared<TensorStorage>(shape.ByteSize());
  storage->host = detail::HostMemory::Allocate(storage->bytes);
  storage->host_valid = true;
  return storage;
}

}  // namespace

Tensor Tensor::FromShape(const Shape& shape) {
  CheckStaticShape(shape, "FromShape");
  return Tensor(shape, NewHostStorage(shape));
}

Tensor Tensor::FromBytes(const Shape& shape, std::span<const uint8_t> bytes) {
  CheckStaticShape(shape, "FromBytes");
  const int64_t want = shape.ByteSize();
  if (static_cast<int64_t>(bytes.size()) != want) {
    detail::Throw("Tensor::FromBytes: shape {} takes {} bytes, got {}", shape, want, bytes.size());
  }
  auto storage = NewHostStorage(shape);
  if (want > 0) std::memcpy(storage->host.get(), bytes.data(), bytes.size());
  if (shape.dtype() == DType::Bool) {
    // Keep bools canonical (0 or 1) so reading them as C++ bool is well defined.
    for (int64_t i = 0; i < want; ++i) storage->host.get()[i] = storage->host.get()[i] != 0;
  }
  return Tensor(shape, std::move(storage));
}

Tensor Tensor::FromFlatBytes(const Shape& shape, const void* data, int64_t count, DType dtype) {
  CheckStaticShape(shape, "FromFlat");
  if (shape.dtype() != dtype) {
    detail::Throw("Tensor::FromFlat: shape {} has dtype {} but the data is {}", shape, shape.dtype(), dtype);
  }
  if (count != shape.Size()) {
    detail::Throw("Tensor::FromFlat: shape {} has {} elements but {} values were given", shape, shape.Size(),
                  count);
  }
  return FromBytes(shape, std::span<const uint8_t>(static_cast<const uint8_t*>(data),
                                                   static_cast<size_t>(shape.ByteSize())));
}

Tensor Tensor::FromShapeForBackend(const compute::BackendPtr& backend, int device, const Shape& shape) {
  CheckStaticShape(shape, "FromShapeForBackend");
  if (!backend) detail::Throw("Tensor::FromShapeForBackend: null backend");
  backend->CheckDevice(device);
  if (!backend->HasSharedBuffers()) return FromShape(shape);
  return FromBuffer(backend, device, shape, backend->NewSharedBuffer(device, shape.ByteSize()));
}

Tensor Tensor::FromBuffer(const compute::BackendPtr& backend, int device, const Shape& shape,
                          compute::BufferPtr buffer) {
  CheckStaticShape(shape, "FromBuffer");
  if (!backend || !buffer) detail::Throw("Tensor::FromBuffer: null backend or buffer");
  backend->CheckDevice(device);
  if (buffer->ByteSize() != shape.ByteSize()) {
    detail::Throw("Tensor::FromBuffer: buffer holds {} bytes but shape {} takes {}", buffer->ByteSize(),
                  shape, shape.ByteSize());
  }
  auto storage = std::make_shared<TensorStorage>(shape.ByteSize());
  if (buffer->HostData() != nullptr) {
    storage->shared = buffer;
    storage->host_valid = true;
  }
  storage->devices.push_back({backend, device, std::move(buffer)});
  return Tensor(shape, std::move(storage));
}

bool Tensor::Ok() const { return storage_ && !storage_->finalized.load(); }

bool Tensor::HasLocal() const {
  if (!Ok()) return false;
  std::lock_guard lock(storage_->mu);
  return storage_->host_valid;
}

bool Tensor::IsShared() const {
  if (!Ok()) return false;
  std::lock_guard lock(storage_->mu);
  return storage_->shared != nullptr;
}

bool Tensor::IsOnDevice(const compute::BackendPtr& backend, int device) const {
  if (!Ok()) return false;
  std::lock_guard lock(storage_->mu);
  return std::any_of(
      storage_->devices.begin(), storage_->devices.end(),
      [&](const TensorStorage::DeviceCopy& c) { return c.backend == backend && c.device == device; });
}

void Tensor::FinalizeAll() {
  if (!storage_) return;
  std::lock_guard lock(storage_->mu);
  storage_->Release();
}

void Tensor::MaterializeLocal() const {
  if (!storage_) detail::Throw("Tensor::MaterializeLocal: empty tensor handle");
  std::lock_guard lock(storage_->mu);
  storage_->CheckAlive("MaterializeLocal");
  storage_->EnsureHost();
  storage_->InvalidateDevices();
}

void Tensor::CheckDType(DType want, const char* method) const {
  if (!storage_) detail::Throw("Tensor::{}: empty tensor handle", method);
  if (IsStorageOnly(shape_.dtype())) {
    detail::Throw(
        "Tensor::{}: {} is a storage-only dtype with no C++ element type; use ConstBytes/MutableBytes "
        "(or ToDoubles)",
        method, shape_.dtype());
  }
  if (want != shape_.dtype()) {
    detail::Throw("Tensor::{}: tensor {} holds {} but {} was requested", method, shape_, shape_.dtype(),
                  want);
  }
}

void Tensor::AccessBytes(bool write, const std::function<void(std::span<uint8_t>)>& fn) const {
  if (!storage_) detail::Throw("Tensor: access to an empty tensor handle");
  std::lock_guard lock(storage_->mu);
  storage_->CheckAlive(write ? "MutableFlatData" : "ConstFlatData");
  storage_->EnsureHost();
  if (write) storage_->InvalidateDevices();
  fn(std::span<uint8_t>(storage_->HostData(), static_cast<size_t>(storage_->bytes)));
}

void Tensor::ConstBytes(const std::function<void(std::span<const uint8_t>)>& fn) const {
  AccessBytes(false, [&](std::span<uint8_t> b) { fn(std::span<const uint8_t>(b.data(), b.size())); });
}

void Tensor::MutableBytes(const std::function<void(std::span<uint8_t>)>& fn) {
  AccessBytes(true, [&](std::span<uint8_t> b) {
    fn(b);
    if (shape_.dtype() == DType::Bool) {
      for (auto& x : b) x = x != 0;
    }
  });
}

Tensor Tensor::Reshape(const std::vector<int64_t>& dimensions) const {
  if (!Ok()) detail::Throw("Tensor::Reshape: the tensor is not Ok (empty, finalized or donated)");
  std::vector<int64_t> dims = dimensions;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      if (infer >= 0) detail::Throw("Tensor::Reshape: more than one -1 in [{}]", fmt::join(dimensions, ", "));
      infer = static_cast<int>(i);
    } else if (dims[i] < 0) {
      detail::Throw("Tensor::Reshape: negative dimension in [{}]", fmt::join(dimensions, ", "));
    } else if (__builtin_mul_overflow(known, dims[i], &known)) {
      detail::Throw("Tensor::Reshape: [{}] overflows int64", fmt::join(dimensions, ", "));
    }
  }
  const int64_t size = shape_.Size();
  if (infer >= 0) {
    if (known == 0 || size % known != 0) {
      detail::Throw("Tensor::Reshape: cannot infer the -1 in [{}] for {} ({} elements)",
                    fmt::join(dimensions, ", "), shape_, size);
    }
    dims[infer] = size / known;
  } else if (known != size) {
    detail::Throw("Tensor::Reshape: [{}] holds {} elements but {} has {}", fmt::join(dimensions, ", "), known,
                  shape_, size);
  }
  return Tensor(Shape(shape_.dtype(), std::move(dims)), storage_);
}

std::vector<double> Tensor::ToDoubles() const {
  if (!Ok()) detail::ThrowError("Tensor::ToDoubles: the tensor is empty, finalized or donated");
  std::vector<double> out;
  if (IsComplex(dtype())) {
    detail::Throw("Tensor::ToDoubles: {} is complex; read it with ToVector<std::complex<{}>>()", shape_,
                  dtype() == DType::Complex64 ? "float" : "double");
  }
  out.reserve(static_cast<size_t>(Size()));
  if (IsPacked(dtype())) {
    const bool is_signed = IsSigned(dtype());
    const int bits = DTypeBits(dtype());
    const int per_byte = 8 / bits;
    ConstBytes([&](std::span<const uint8_t> bytes) {
      for (int64_t i = 0; i < Size(); ++i) {
        int v = (bytes[static_cast<size_t>(i / per_byte)] >> ((i % per_byte) * bits)) & ((1 << bits) - 1);
        if (is_signed && v >= (1 << (bits - 1))) v -= 1 << bits;
        out.push_back(v);
      }
    });
    return out;
  }
  if (IsFloat8(dtype())) {
    double (*decode)(uint8_t) = dtype() == DType::Float8E4M3FN ? Float8E4M3FNToDouble : Float8E5M2ToDouble;
    ConstBytes([&](std::span<const uint8_t> bytes) {
      for (uint8_t b : bytes) out.push_back(decode(b));
    });
    return out;
  }
  DispatchDType(dtype(), [&](auto zero) {
    using T = decltype(zero);
    ConstFlatData<T>([&](std::span<const T> flat) {
      for (const T& x : flat) {
        if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
          out.push_back(static_cast<double>(static_cast<float>(x)));
        } else {
          out.push_back(static_cast<double>(x));
        }
      }
    });
  });
  return out;
}

Tensor Tensor::Clone() const {
  Tensor result;
  ConstBytes([&](std::span<const uint8_t> bytes) { result = FromBytes(shape_, bytes); });
  return result;
}

bool Tensor::Equal(const Tensor& other) const {
  if (shape_ != other.shape_) return false;
  // Copy one side first: holding both locks at once could deadlock against other.Equal(*this).
  std::vector<uint8_t> theirs;
  other.ConstBytes([&](std::span<const uint8_t> b) { theirs.assign(b.begin(), b.end()); });
  bool equal = false;
  ConstBytes([&](std::span<const uint8_t> a) {
    equal = std::equal(a.begin(), a.end(), theirs.begin(), theirs.end());
  });
  return equal;
}

compute::BufferPtr Tensor::DeviceBuffer(const compute::BackendPtr& backend, int device) const {
  if (!storage_) detail::Throw("Tensor::DeviceBuffer: empty tensor handle");
  if (!backend) detail::Throw("Tensor::DeviceBuffer: null backend");
  backend->CheckDevice(device);
  std::lock_guard lock(storage_->mu);
  storage_->CheckAlive("DeviceBuffer");
  for (const auto& c : storage_->devices) {
    if (c.backend == backend && c.device == device) return c.buffer;
  }
  storage_->EnsureHost();
  if (!storage_->shared && backend->HasSharedBuffers()) {
    // A backend whose buffers are host memory takes the host copy over: no copy, and from now on
    // that buffer is both (as for a tensor made in a shared buffer).
    if (compute::BufferPtr adopted = backend->AdoptHostMemory(device, storage_->host, storage_->bytes)) {
      storage_->shared = adopted;
      storage_->host.reset();
      storage_->devices.push_back({backend, device, adopted});
      return adopted;
    }
  }
  compute::BufferPtr buffer = backend->BufferFromHost(device, storage_->HostData(), storage_->bytes);
  storage_->devices.push_back({backend, device, buffer});
  return buffer;
}

compute::BufferPtr Tensor::DonateBuffer(const compute::BackendPtr& backend, int device) {
  compute::BufferPtr buffer = DeviceBuffer(backend, device);
  std::lock_guard lock(storage_->mu);
  std::erase_if(storage_->devices, [&](const TensorStorage::DeviceCopy& c) { return c.buffer == buffer; });
  storage_->donate = false;
  if (storage_->shared == buffer) {
    storage_->shared.reset();
    storage_->host_valid = false;
  }
  if (!storage_->host_valid && storage_->devices.empty()) storage_->Release();
  return buffer;
}

void Tensor::MarkForDonation() {
  if (!Ok()) detail::Throw("Tensor::MarkForDonation: the tensor is not Ok (empty, finalized or donated)");
  storage_->donate = true;
}

bool Tensor::IsMarkedForDonation() const { return storage_ && storage_->donate.load(); }

void Tensor::MoveToDevice(const compute::BackendPtr& backend, int device) {
  DeviceBuffer(backend, device);
  std::lock_guard lock(storage_->mu);
  if (!storage_->shared) {
    storage_->host.reset();
    storage_->host_valid = false;
  }
}

}  // namespace kiln
