#pragma once
/// @file
/// Tensor: a shared handle to a shape and its data, on the host and/or on backend devices.

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "kiln/compute/fwd.h"
#include "kiln/core/dtype.h"
#include "kiln/core/shape.h"

namespace kiln {

namespace detail {
struct TensorStorage;
[[noreturn]] void ThrowError(const std::string& message);

// Rank and element type of a C++ value: a scalar Element or a nested std::vector of them.
template <typename T>
struct NestedValue {
  static constexpr int rank = 0;
  using element = T;
};
template <typename T, typename A>
struct NestedValue<std::vector<T, A>> {
  static constexpr int rank = 1 + NestedValue<T>::rank;
  using element = typename NestedValue<T>::element;
};
}  // namespace detail

/// A C++ value a tensor can be made from or read into: an Element (bool, integers, float,
/// double, float16, bfloat16) or a (nested) std::vector of one.
template <typename V>
concept TensorValue = Element<typename detail::NestedValue<std::remove_cvref_t<V>>::element>;

/// A multi-dimensional array: shape plus data. Copies of a Tensor are handles to the same data
/// (use Clone() for a deep copy). The data lives in at most one host buffer and in buffers on
/// backend devices, copied lazily: to a device when an execution needs it, to the host when it
/// is read. On backends that share memory with the host one buffer serves both.
class Tensor {
 public:
  /// An empty handle (Ok() is false).
  Tensor() = default;

  // ---- Creation ----------------------------------------------------------------------------

  /// From a scalar or a (nested) std::vector; nesting must be regular (else kiln::Error).
  template <TensorValue V>
  static Tensor FromValue(const V& value);
  /// Zeros of the given shape, on the host.
  static Tensor FromShape(const Shape& shape);
  /// A rank-0 tensor holding `value`.
  template <Element T>
  static Tensor FromScalar(T value) {
    return FromFlat(Shape(DTypeOf<T>), std::span<const T>(&value, 1));
  }
  /// A tensor of `dimensions` filled with `value`.
  template <Element T>
  static Tensor FromScalarAndDimensions(T value, const std::vector<int64_t>& dimensions);
  /// A tensor of `shape` with the flat (row-major) `data`; dtype and size must match.
  template <Element T>
  static Tensor FromFlat(const Shape& shape, std::span<const T> data);
  /// FromFlat from a vector (std::vector<bool> included); dtype and size must match `shape`.
  template <Element T>
  static Tensor FromFlat(const Shape& shape, const std::vector<T>& data) {
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<uint8_t> bytes(data.begin(), data.end());
      return FromFlatBytes(shape, bytes.data(), static_cast<int64_t>(bytes.size()), DType::Bool);
    } else {
      return FromFlat(shape, std::span<const T>(data));
    }
  }
  /// A tensor of `shape` from its raw bytes (row-major; packed types as DType documents).
  static Tensor FromBytes(const Shape& shape, std::span<const uint8_t> bytes);
  /// Zeros of `shape` in memory shared with `backend`'s `device` when the backend shares host
  /// memory (no copy when used in executions); a plain host tensor otherwise.
  static Tensor FromShapeForBackend(const compute::BackendPtr& backend, int device, const Shape& shape);
  /// Wraps a buffer that holds `shape`'s data on `backend`'s `device` (e.g. an execution's
  /// output). The data stays there until read.
  static Tensor FromBuffer(const compute::BackendPtr& backend, int device, const Shape& shape,
                           compute::BufferPtr buffer);

  // ---- Shape and state ----------------------------------------------------------------------

  /// The dtype and dimensions.
  const Shape& shape() const { return shape_; }
  /// The element type (shape().dtype()).
  DType dtype() const { return shape_.dtype(); }
  /// Number of axes (0 for a scalar).
  int rank() const { return shape_.Rank(); }
  /// Number of elements.
  int64_t Size() const { return shape_.Size(); }
  /// True while the tensor has data: false for an empty handle, after FinalizeAll(), and after
  /// its only buffer was donated to an execution.
  bool Ok() const;
  /// True when a valid host copy exists (a buffer shared with a backend counts).
  bool HasLocal() const;
  /// True when a valid copy exists on `backend`'s `device`.
  bool IsOnDevice(const compute::BackendPtr& backend, int device) const;
  /// True when the host memory is a buffer shared with a backend.
  bool IsShared() const;
  /// Number of handles sharing this tensor's data (copies and Reshapes of it): 1 when this
  /// handle is the only one (0 for an empty handle).
  int64_t HandleCount() const { return storage_ ? static_cast<int64_t>(storage_.use_count()) : 0; }
  /// Releases host and device memory now; every copy of this handle (and every Reshape of it)
  /// is no longer Ok(), and any later access to the data is a kiln::Error.
  void FinalizeAll();
  /// Releases the device copies, keeping (first making, if needed) the host copy.
  void MaterializeLocal() const;

  // ---- Reading and writing ------------------------------------------------------------------

  /// The value as a scalar or nested std::vector (rank and dtype must match V).
  template <TensorValue V>
  V Value() const;
  /// The elements in row-major order (dtype must match T).
  template <Element T>
  std::vector<T> ToVector() const;
  /// The single element of a tensor of size 1 (dtype must match T).
  template <Element T>
  T Item() const;
  /// The elements in row-major order as doubles, for any real dtype (packed integers unpacked,
  /// Bool as 0 or 1; half precision widened exactly); kiln::Error for complex dtypes.
  std::vector<double> ToDoubles() const;
  /// Calls fn(std::span<const T>) on the flat host data, with the tensor locked meanwhile. The
  /// data is first copied to the host if it is only on a device. dtype must match T.
  template <Element T, typename Fn>
  void ConstFlatData(Fn&& fn) const;
  /// Calls fn(std::span<T>) on the flat host data, locked; device copies become stale.
  template <Element T, typename Fn>
  void MutableFlatData(Fn&& fn);
  /// Calls fn(std::span<const uint8_t>) on the raw bytes (packed types as they are stored).
  void ConstBytes(const std::function<void(std::span<const uint8_t>)>& fn) const;
  /// Calls fn(std::span<uint8_t>) on the raw bytes; device copies become stale.
  void MutableBytes(const std::function<void(std::span<uint8_t>)>& fn);

  /// A tensor with new dimensions sharing this one's data; one -1 is inferred.
  Tensor Reshape(const std::vector<int64_t>& dimensions) const;
  /// A deep copy on the host.
  Tensor Clone() const;
  /// Same shape and bitwise-equal data (NaNs with equal bits compare equal).
  bool Equal(const Tensor& other) const;

  /// Printed as GoMLX prints: "float32(5)", "[2]float32{4, 12}", "[2][2]float32{{1, 2}, {3, 4}}";
  /// more than 8 values on an axis are elided with "..." in the middle.
  std::string ToString() const;
  /// ToString, with every element when `full` (long axes are not abbreviated with "...").
  std::string ToString(bool full) const;

  // ---- Devices and serialization --------------------------------------------------------------

  /// The tensor's buffer on `backend`'s `device`, copied there if it is not yet; a backend whose
  /// buffers are host memory may take the host copy over instead (Backend::AdoptHostMemory: the
  /// cpu backend does), and the tensor is shared from then on (IsShared()).
  compute::BufferPtr DeviceBuffer(const compute::BackendPtr& backend, int device) const;
  /// Hands the buffer on `backend`'s `device` to the caller (an execution that may reuse it).
  /// If no other valid copy remains (always the case for a shared buffer), the tensor and
  /// every copy of its handle stop being Ok().
  compute::BufferPtr DonateBuffer(const compute::BackendPtr& backend, int device);
  /// Marks the tensor so that the next execution it is passed to takes its buffer over
  /// (graph::Donate); IsMarkedForDonation() says whether the mark is set.
  void MarkForDonation();
  /// True between MarkForDonation() and the execution that takes the buffer.
  bool IsMarkedForDonation() const;
  /// Makes sure a copy is on `backend`'s `device` and releases the host copy (unless the host
  /// memory is that very buffer). Reading the data later copies it back.
  void MoveToDevice(const compute::BackendPtr& backend, int device);

  /// Writes shape and data in kiln's versioned binary format (with a CRC-32 checksum).
  void Serialize(std::ostream& out) const;
  /// Reads a tensor written by Serialize into host memory; corrupt input is a kiln::Error.
  static Tensor Deserialize(std::istream& in);
  /// Reads a serialized tensor straight onto `backend`'s `device`.
  static Tensor Deserialize(std::istream& in, const compute::BackendPtr& backend, int device);

 private:
  Tensor(Shape shape, std::shared_ptr<detail::TensorStorage> storage);
  void CheckDType(DType want, const char* method) const;
  void AccessBytes(bool write, const std::function<void(std::span<uint8_t>)>& fn) const;
  static Tensor FromFlatBytes(const Shape& shape, const void* data, int64_t count, DType dtype);

  Shape shape_;
  std::shared_ptr<detail::TensorStorage> storage_;
};

/// Writes tensor.ToString().
std::ostream& operator<<(std::ostream& os, const Tensor& tensor);

// ---- Template implementations ------------------------------------------------------------------

namespace detail {

template <typename V>
void CollectDims(const V& value, int level, std::vector<int64_t>& dims) {
  if constexpr (NestedValue<V>::rank > 0) {
    dims[level] = static_cast<int64_t>(value.size());
    if (!value.empty()) CollectDims(value.front(), level + 1, dims);
  }
}

template <typename V, typename E>
void Flatten(const V& value, int level, const std::vector<int64_t>& dims, std::vector<E>& out) {
  if constexpr (NestedValue<V>::rank == 0) {
    out.push_back(static_cast<E>(value));
  } else {
    if (static_cast<int64_t>(value.size()) != dims[level]) {
      ThrowError("Tensor::FromValue: irregular nested value: axis " + std::to_string(level) + " has sizes " +
                 std::to_string(dims[level]) + " and " + std::to_string(value.size()));
    }
    for (const auto& item : value)
      Flatten(static_cast<const std::remove_cvref_t<decltype(item)>&>(item), level + 1, dims, out);
  }
}

// std::vector<bool> yields proxies; flatten it element by element.
template <typename A, typename E>
void Flatten(const std::vector<bool, A>& value, int level, const std::vector<int64_t>& dims,
             std::vector<E>& out) {
  if (static_cast<int64_t>(value.size()) != dims[level]) {
    ThrowError("Tensor::FromValue: irregular nested value: axis " + std::to_string(level) + " has sizes " +
               std::to_string(dims[level]) + " and " + std::to_string(value.size()));
  }
  for (bool b : value) out.push_back(static_cast<E>(b));
}

template <typename V, typename T>
V Unflatten(const T*& data, const std::vector<int64_t>& dims, int level) {
  if constexpr (NestedValue<V>::rank == 0) {
    return static_cast<V>(*data++);
  } else {
    V result;
    result.reserve(static_cast<size_t>(dims[level]));
    for (int64_t i = 0; i < dims[level]; ++i)
      result.push_back(Unflatten<typename V::value_type, T>(data, dims, level + 1));
    return result;
  }
}

}  // namespace detail

template <TensorValue V>
Tensor Tensor::FromValue(const V& value) {
  using E = typename detail::NestedValue<V>::element;
  constexpr int rank = detail::NestedValue<V>::rank;
  std::vector<int64_t> dims(rank, 0);
  detail::CollectDims(value, 0, dims);
  // Storage element: bool is kept as one byte per value.
  using S = std::conditional_t<std::is_same_v<E, bool>, uint8_t, E>;
  std::vector<S> flat;
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  flat.reserve(static_cast<size_t>(total));
  detail::Flatten(value, 0, dims, flat);
  return FromFlatBytes(Shape(DTypeOf<E>, dims), flat.data(), static_cast<int64_t>(flat.size()), DTypeOf<E>);
}

template <Element T>
Tensor Tensor::FromScalarAndDimensions(T value, const std::vector<int64_t>& dimensions) {
  Shape shape(DTypeOf<T>, dimensions);
  Tensor t = FromShape(shape);
  t.MutableFlatData<T>([&](std::span<T> flat) {
    for (auto& x : flat) x = value;
  });
  return t;
}

template <Element T>
Tensor Tensor::FromFlat(const Shape& shape, std::span<const T> data) {
  return FromFlatBytes(shape, data.data(), static_cast<int64_t>(data.size()), DTypeOf<T>);
}

template <TensorValue V>
V Tensor::Value() const {
  using E = typename detail::NestedValue<V>::element;
  constexpr int rank = detail::NestedValue<V>::rank;
  CheckDType(DTypeOf<E>, "Value");
  if (shape_.Rank() != rank) {
    detail::ThrowError("Tensor::Value: tensor " + shape_.ToString() + " has rank " +
                       std::to_string(shape_.Rank()) + " but the requested C++ type has rank " +
                       std::to_string(rank));
  }
  V result{};
  ConstFlatData<E>([&](std::span<const E> flat) {
    const E* p = flat.data();
    result = detail::Unflatten<V, E>(p, shape_.Dimensions(), 0);
  });
  return result;
}

template <Element T>
std::vector<T> Tensor::ToVector() const {
  std::vector<T> result;
  ConstFlatData<T>([&](std::span<const T> flat) { result.assign(flat.begin(), flat.end()); });
  return result;
}

template <Element T>
T Tensor::Item() const {
  T result{};
  ConstFlatData<T>([&](std::span<const T> flat) {
    if (flat.size() != 1) {
      detail::ThrowError("Tensor::Item: tensor " + shape_.ToString() + " has " + std::to_string(flat.size()) +
                         " elements, not 1");
    }
    result = flat[0];
  });
  return result;
}

template <Element T, typename Fn>
void Tensor::ConstFlatData(Fn&& fn) const {
  CheckDType(DTypeOf<T>, "ConstFlatData");
  AccessBytes(false, [&](std::span<uint8_t> bytes) {
    fn(std::span<const T>(reinterpret_cast<const T*>(bytes.data()), bytes.size() / sizeof(T)));
  });
}

template <Element T, typename Fn>
void Tensor::MutableFlatData(Fn&& fn) {
  CheckDType(DTypeOf<T>, "MutableFlatData");
  AccessBytes(true, [&](std::span<uint8_t> bytes) {
    fn(std::span<T>(reinterpret_cast<T*>(bytes.data()), bytes.size() / sizeof(T)));
  });
}

}  // namespace kiln
