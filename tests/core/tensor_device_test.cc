// Tests of a Tensor's host and device copies with the ref backend, in both of its modes: "ref"
// shares host memory with tensors; "ref:shared=false" behaves like a discrete device.

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/tensor_test_util.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using kiln::testing::BytesOf;
using kiln::testing::ThrowsKilnError;

constexpr const char* kShared = "ref";
constexpr const char* kDiscrete = "ref:shared=false";

template <typename T>
std::vector<T> BufferValues(const compute::BackendPtr& backend, const compute::BufferPtr& buffer) {
  std::vector<T> out(static_cast<size_t>(buffer->ByteSize()) / sizeof(T));
  backend->BufferToHost(*buffer, out.data());
  return out;
}

TEST(TensorDeviceTest, FromShapeForBackendShared) {
  compute::BackendPtr backend = compute::NewWithConfig(kShared);
  ASSERT_TRUE(backend->HasSharedBuffers());
  EXPECT_EQ(backend->MemoryStats().live_bytes, 0);
  Tensor t = Tensor::FromShapeForBackend(backend, 0, Shape(DType::Float32, {4, 4}));
  EXPECT_TRUE(t.Ok());
  EXPECT_TRUE(t.IsShared());
  EXPECT_TRUE(t.HasLocal());
  EXPECT_TRUE(t.IsOnDevice(backend, 0));
  EXPECT_EQ(t.shape(), Shape(DType::Float32, {4, 4}));
  EXPECT_EQ(t.ToVector<float>(), std::vector<float>(16, 0.0f));
  for (uint8_t b : BytesOf(t)) EXPECT_EQ(b, 0);
  EXPECT_EQ(backend->MemoryStats().live_bytes, 64);
  EXPECT_EQ(backend->MemoryStats().live_buffers, 1);

  // The tensor's host memory is the buffer's.
  compute::BufferPtr buffer = t.DeviceBuffer(backend, 0);
  ASSERT_NE(buffer->HostData(), nullptr);
  EXPECT_EQ(buffer->ByteSize(), 64);
  EXPECT_EQ(buffer->Device(), 0);
  EXPECT_EQ(buffer->backend(), backend.get());
  t.ConstBytes([&](std::span<const uint8_t> bytes) { EXPECT_EQ(bytes.data(), buffer->HostData()); });
  t.MutableFlatData<float>([](std::span<float> f) { f[5] = 2.5f; });
  EXPECT_EQ(static_cast<const float*>(buffer->HostData())[5], 2.5f);
  EXPECT_EQ(t.DeviceBuffer(backend, 0), buffer);  // Still the one buffer.
  EXPECT_EQ(backend->MemoryStats().live_buffers, 1);
  buffer.reset();

  // The memory goes when the last handle does.
  Tensor copy = t;
  Tensor reshaped = t.Reshape({16});
  t = Tensor();
  EXPECT_EQ(backend->MemoryStats().live_bytes, 64);
  copy = Tensor();
  EXPECT_EQ(backend->MemoryStats().live_bytes, 64);
  EXPECT_EQ(reshaped.ToVector<float>()[5], 2.5f);
  reshaped = Tensor();
  EXPECT_EQ(backend->MemoryStats().live_bytes, 0);
  EXPECT_EQ(backend->MemoryStats().live_buffers, 0);
  EXPECT_EQ(backend->MemoryStats().peak_bytes, 64);
}

TEST(TensorDeviceTest, FromShapeForBackendDiscrete) {
  compute::BackendPtr backend = compute::NewWithConfig(kDiscrete);
  ASSERT_FALSE(backend->HasSharedBuffers());
  Tensor t = Tensor::FromShapeForBackend(backend, 0, Shape(DType::Int16, {3}));
  EXPECT_TRUE(t.Ok());
  EXPECT_FALSE(t.IsShared());
  EXPECT_TRUE(t.HasLocal());
  EXPECT_FALSE(t.IsOnDevice(backend, 0));
  EXPECT_EQ(t.ToVector<int16_t>(), (std::vector<int16_t>{0, 0, 0}));
  EXPECT_EQ(backend->MemoryStats().live_bytes, 0);
  EXPECT_EQ(backend->MemoryStats().live_buffers, 0);
}

TEST(TensorDeviceTest, FromShapeForBackendErrors) {
  for (const char* config : {kShared, kDiscrete}) {
    SCOPED_TRACE(config);
    compute::BackendPtr backend = compute::NewWithConfig(config);
    const Shape shape(DType::Float32, {2});
    EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromShapeForBackend(backend, -1, shape); }, {"ref", "-1"}));
    EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromShapeForBackend(backend, 1, shape); }, {"ref", "1"}));
    EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromShapeForBackend(nullptr, 0, shape); }));
    EXPECT_TRUE(ThrowsKilnError(
        [&] { Tensor::FromShapeForBackend(backend, 0, Shape(DType::Float32, {Shape::kDynamic})); }));
    EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromShapeForBackend(backend, 0, Shape()); }));
    EXPECT_EQ(backend->MemoryStats().live_buffers, 0);
  }
}

TEST(TensorDeviceTest, PackedAndEmptySharedTensors) {
  compute::BackendPtr backend = compute::NewWithConfig(kShared);
  Tensor p = Tensor::FromShapeForBackend(backend, 0, Shape(DType::Int4, {5}));
  EXPECT_EQ(BytesOf(p), (std::vector<uint8_t>{0, 0, 0}));
  EXPECT_EQ(backend->MemoryStats().live_bytes, 3);
  Tensor e = Tensor::FromShapeForBackend(backend, 0, Shape(DType::Float32, {0, 2}));
  EXPECT_TRUE(e.Ok());
  EXPECT_EQ(e.Size(), 0);
  EXPECT_TRUE(BytesOf(e).empty());
  EXPECT_EQ(e.ToString(), "[0][2]float32{}");
}

TEST(TensorDeviceTest, DeviceBufferUploadsOnce) {
  for (const char* config : {kShared, kDiscrete}) {
    SCOPED_TRACE(config);
    compute::BackendPtr backend = compute::NewWithConfig(config);
    Tensor t = Tensor::FromValue(std::vector<int32_t>{1, 2, 3});
    EXPECT_FALSE(t.IsOnDevice(backend, 0));
    compute::BufferPtr a = t.DeviceBuffer(backend, 0);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->ByteSize(), 12);
    EXPECT_TRUE(t.IsOnDevice(backend, 0));
    EXPECT_TRUE(t.HasLocal());
    EXPECT_FALSE(t.IsShared());  // A host tensor stays one with its own memory.
    compute::BufferPtr b = t.DeviceBuffer(backend, 0);
    EXPECT_EQ(a, b);
    EXPECT_EQ(backend->MemoryStats().live_buffers, 1);
    EXPECT_EQ(backend->MemoryStats().live_bytes, 12);
    EXPECT_EQ(BufferValues<int32_t>(backend, a), (std::vector<int32_t>{1, 2, 3}));
    // A copy of the handle or a reshape shares the device copy.
    Tensor r = t.Reshape({3, 1});
    EXPECT_TRUE(r.IsOnDevice(backend, 0));
    EXPECT_EQ(r.DeviceBuffer(backend, 0), a);
    EXPECT_EQ(backend->MemoryStats().live_buffers, 1);
    // The device copy is released with the tensor.
    a.reset();
    b.reset();
    t = Tensor();
    r = Tensor();
    EXPECT_EQ(backend->MemoryStats().live_buffers, 0);
    EXPECT_EQ(backend->MemoryStats().live_bytes, 0);
  }
}

TEST(TensorDeviceTest, MutationMakesDeviceCopiesStale) {
  for (const char* config : {kShared, kDiscrete}) {
    SCOPED_TRACE(config);
    compute::BackendPtr backend = compute::NewWithConfig(config);
    Tensor t = Tensor::FromValue(std::vector<float>{1, 2, 3, 4});
    compute::BufferPtr old_buffer = t.DeviceBuffer(backend, 0);
    t.MutableFlatData<float>([](std::span<float> f) { f[1] = 20; });
    EXPECT_FALSE(t.IsOnDevice(backend, 0));
    EXPECT_TRUE(t.HasLocal());
    compute::BufferPtr new_buffer = t.DeviceBuffer(backend, 0);
    EXPECT_NE(new_buffer, old_buffer);
    EXPECT_EQ(BufferValues<float>(backend, new_buffer), (std::vector<float>{1, 20, 3, 4}));
    EXPECT_EQ(BufferValues<float>(backend, old_buffer), (std::vector<float>{1, 2, 3, 4}));
    old_buffer.reset();
    EXPECT_EQ(backend->MemoryStats().live_buffers, 1);
    // MutableBytes too, also through a reshape.
    Tensor r = t.Reshape({2, 2});
    r.MutableBytes([](std::span<uint8_t> b) {
      b[0] = 0;
      b[1] = 0;
      b[2] = 0;
      b[3] = 0;
    });
    EXPECT_FALSE(t.IsOnDevice(backend, 0));
    compute::BufferPtr third = t.DeviceBuffer(backend, 0);
    EXPECT_NE(third, new_buffer);
    EXPECT_EQ(BufferValues<float>(backend, third), (std::vector<float>{0, 20, 3, 4}));
    // Reading does not invalidate.
    EXPECT_EQ(t.ToVector<float>(), (std::vector<float>{0, 20, 3, 4}));
    EXPECT_TRUE(t.IsOnDevice(backend, 0));
    EXPECT_EQ(t.DeviceBuffer(backend, 0), third);
  }
}

TEST(TensorDeviceTest, MutatingASharedTensorKeepsItsBuffer) {
  compute::BackendPtr backend = compute::NewWithConfig(kShared);
  Tensor t = Tensor::FromShapeForBackend(backend, 0, Shape(DType::Int64, {2}));
  compute::BufferPtr buffer = t.DeviceBuffer(backend, 0);
  t.MutableFlatData<int64_t>([](std::span<int64_t> f) { f[1] = -9; });
  EXPECT_TRUE(t.IsOnDevice(backend, 0));
  EXPECT_EQ(t.DeviceBuffer(backend, 0), buffer);
  EXPECT_EQ(BufferValues<int64_t>(backend, buffer), (std::vector<int64_t>{0, -9}));
  EXPECT_EQ(backend->MemoryStats().live_buffers, 1);
}

TEST(TensorDeviceTest, MoveToDeviceDropsTheHostCopy) {
  for (const char* config : {kShared, kDiscrete}) {
    SCOPED_TRACE(config);
    compute::BackendPtr backend = compute::NewWithConfig(config);
    Tensor t = Tensor::FromValue(std::vector<std::vector<int32_t>>{{1, 2}, {3, 4}});
    Tensor copy = t;
    t.MoveToDevice(backend, 0);
    EXPECT_TRUE(t.Ok());
    EXPECT_FALSE(t.HasLocal());
    EXPECT_FALSE(copy.HasLocal());
    EXPECT_TRUE(t.IsOnDevice(backend, 0));
    EXPECT_EQ(backend->MemoryStats().live_bytes, 16);
    // Printing, cloning, comparing and reading copy the data back.
    EXPECT_EQ(t.ToString(), "[2][2]int32{{1, 2}, {3, 4}}");
    t.MoveToDevice(backend, 0);
    EXPECT_FALSE(t.HasLocal());
    Tensor clone = t.Clone();
    EXPECT_TRUE(clone.HasLocal());
    EXPECT_FALSE(clone.IsOnDevice(backend, 0));
    t.MoveToDevice(backend, 0);
    EXPECT_TRUE(t.Equal(Tensor::FromValue(std::vector<std::vector<int32_t>>{{1, 2}, {3, 4}})));
    t.MoveToDevice(backend, 0);
    EXPECT_EQ(copy.Value<std::vector<std::vector<int32_t>>>(),
              (std::vector<std::vector<int32_t>>{{1, 2}, {3, 4}}));
    EXPECT_TRUE(t.HasLocal());
    EXPECT_TRUE(t.IsOnDevice(backend, 0));
    EXPECT_EQ(backend->MemoryStats().live_buffers, 1);  // One upload only.
    // A write after moving: read back, modified, device copy stale.
    t.MoveToDevice(backend, 0);
    t.MutableFlatData<int32_t>([](std::span<int32_t> f) { f[3] = 40; });
    EXPECT_TRUE(t.HasLocal());
    EXPECT_FALSE(t.IsOnDevice(backend, 0));
    EXPECT_EQ(t.ToVector<int32_t>(), (std::vector<int32_t>{1, 2, 3, 40}));
    EXPECT_EQ(backend->MemoryStats().live_buffers, 0);
  }
}

TEST(TensorDeviceTest, MoveToDeviceKeepsSharedMemory) {
  compute::BackendPtr backend = compute::NewWithConfig(kShared);
  Tensor t = Tensor::FromShapeForBackend(backend, 0, Shape(DType::Uint8, {3}));
  t.MoveToDevice(backend, 0);
  EXPECT_TRUE(t.HasLocal());  // The host memory is the device buffer.
  EXPECT_TRUE(t.IsShared());
  EXPECT_EQ(backend->MemoryStats().live_buffers, 1);
}

TEST(TensorDeviceTest, MaterializeLocal) {
  for (const char* config : {kShared, kDiscrete}) {
    SCOPED_TRACE(config);
    compute::BackendPtr backend = compute::NewWithConfig(config);
    Tensor t = Tensor::FromValue(std::vector<uint16_t>{7, 8});
    t.MoveToDevice(backend, 0);
    t.MaterializeLocal();
    EXPECT_TRUE(t.HasLocal());
    EXPECT_FALSE(t.IsOnDevice(backend, 0));
    EXPECT_EQ(backend->MemoryStats().live_buffers, 0);
    EXPECT_EQ(t.ToVector<uint16_t>(), (std::vector<uint16_t>{7, 8}));
  }
}

TEST(TensorDeviceTest, FinalizeAllReleasesDeviceMemory) {
  for (const char* config : {kShared, kDiscrete}) {
    SCOPED_TRACE(config);
    compute::BackendPtr backend = compute::NewWithConfig(config);
    Tensor t = Tensor::FromValue(std::vector<double>{1, 2});
    t.MoveToDevice(backend, 0);
    Tensor copy = t;
    EXPECT_EQ(backend->MemoryStats().live_bytes, 16);
    t.FinalizeAll();
    EXPECT_EQ(backend->MemoryStats().live_bytes, 0);
    EXPECT_FALSE(copy.Ok());
    EXPECT_FALSE(copy.IsOnDevice(backend, 0));
    EXPECT_TRUE(ThrowsKilnError([&] { (void)copy.DeviceBuffer(backend, 0); }));
    EXPECT_TRUE(ThrowsKilnError([&] { copy.MoveToDevice(backend, 0); }));
    EXPECT_TRUE(ThrowsKilnError([&] { (void)copy.DonateBuffer(backend, 0); }));
    EXPECT_TRUE(ThrowsKilnError([&] { (void)copy.ToVector<double>(); }));
    EXPECT_EQ(backend->MemoryStats().live_bytes, 0);
  }
  compute::BackendPtr backend = compute::NewWithConfig(kShared);
  Tensor s = Tensor::FromShapeForBackend(backend, 0, Shape(DType::Float32, {8}));
  EXPECT_EQ(backend->MemoryStats().live_bytes, 32);
  s.FinalizeAll();
  EXPECT_EQ(backend->MemoryStats().live_bytes, 0);
}

TEST(TensorDeviceTest, FromBuffer) {
  for (const char* config : {kShared, kDiscrete}) {
    SCOPED_TRACE(config);
    compute::BackendPtr backend = compute::NewWithConfig(config);
    const std::vector<int32_t> values = {5, -6, 7};
    compute::BufferPtr buffer = backend->BufferFromHost(0, values.data(), 12);
    Tensor t = Tensor::FromBuffer(backend, 0, Shape(DType::Int32, {3}), buffer);
    EXPECT_TRUE(t.Ok());
    EXPECT_TRUE(t.IsOnDevice(backend, 0));
    EXPECT_EQ(t.DeviceBuffer(backend, 0), buffer);
    const bool shared = backend->HasSharedBuffers();
    EXPECT_EQ(t.IsShared(), shared);
    EXPECT_EQ(t.HasLocal(), shared);
    EXPECT_EQ(t.ToVector<int32_t>(), values);
    EXPECT_TRUE(t.HasLocal());
    EXPECT_EQ(backend->MemoryStats().live_buffers, 1);
    // The same bytes as another shape.
    Tensor u = Tensor::FromBuffer(backend, 0, Shape(DType::Uint8, {12}), buffer);
    EXPECT_EQ(u.ToVector<uint8_t>()[0], 5);

    EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromBuffer(backend, 0, Shape(DType::Int32, {4}), buffer); }));
    EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromBuffer(backend, 0, Shape(DType::Int64, {1}), buffer); }));
    EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromBuffer(backend, 0, Shape(DType::Int32, {3}), nullptr); }));
    EXPECT_TRUE(ThrowsKilnError([&] { Tensor::FromBuffer(nullptr, 0, Shape(DType::Int32, {3}), buffer); }));
    EXPECT_TRUE(ThrowsKilnError(
        [&] { Tensor::FromBuffer(backend, 0, Shape(DType::Int32, {Shape::kDynamic}), buffer); }));
  }
}

TEST(TensorDeviceTest, FromBufferRejectsInvalidDevice) {
  compute::BackendPtr backend = compute::NewWithConfig(kDiscrete);
  compute::BufferPtr buffer = backend->BufferFromHost(0, "abcd", 4);
  for (int device : {-1, 1}) {
    EXPECT_TRUE(
        ThrowsKilnError([&] { Tensor::FromBuffer(backend, device, Shape(DType::Int32), buffer); }, {"ref"}));
  }
}

TEST(TensorDeviceTest, DonateSharedInvalidatesEveryHandle) {
  compute::BackendPtr backend = compute::NewWithConfig(kShared);
  Tensor t = Tensor::FromShapeForBackend(backend, 0, Shape(DType::Float32, {2}));
  t.MutableFlatData<float>([](std::span<float> f) {
    f[0] = 1.5f;
    f[1] = -1;
  });
  Tensor copy = t;
  Tensor reshaped = t.Reshape({1, 2});
  compute::BufferPtr buffer = t.DonateBuffer(backend, 0);
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(BufferValues<float>(backend, buffer), (std::vector<float>{1.5f, -1}));
  for (Tensor* x : {&t, &copy, &reshaped}) {
    EXPECT_FALSE(x->Ok());
    EXPECT_FALSE(x->HasLocal());
    EXPECT_FALSE(x->IsShared());
    EXPECT_FALSE(x->IsOnDevice(backend, 0));
    EXPECT_TRUE(ThrowsKilnError([&] { (void)x->ToVector<float>(); }));
    EXPECT_TRUE(ThrowsKilnError([&] { (void)x->DeviceBuffer(backend, 0); }));
  }
  // The buffer now belongs to the caller alone.
  EXPECT_EQ(backend->MemoryStats().live_buffers, 1);
  buffer.reset();
  EXPECT_EQ(backend->MemoryStats().live_buffers, 0);
}

TEST(TensorDeviceTest, DonateWithHostCopyKeepsTheTensor) {
  for (const char* config : {kShared, kDiscrete}) {
    SCOPED_TRACE(config);
    compute::BackendPtr backend = compute::NewWithConfig(config);
    Tensor t = Tensor::FromValue(std::vector<int8_t>{1, -2, 3});
    compute::BufferPtr buffer = t.DonateBuffer(backend, 0);
    ASSERT_NE(buffer, nullptr);
    EXPECT_EQ(BufferValues<int8_t>(backend, buffer), (std::vector<int8_t>{1, -2, 3}));
    EXPECT_TRUE(t.Ok());
    EXPECT_TRUE(t.HasLocal());
    EXPECT_FALSE(t.IsOnDevice(backend, 0));
    EXPECT_EQ(t.ToVector<int8_t>(), (std::vector<int8_t>{1, -2, 3}));
    // A new device buffer is made on the next request.
    compute::BufferPtr again = t.DeviceBuffer(backend, 0);
    EXPECT_NE(again, buffer);
  }
}

TEST(TensorDeviceTest, DonateOnlyCopyInvalidates) {
  for (const char* config : {kShared, kDiscrete}) {
    SCOPED_TRACE(config);
    compute::BackendPtr backend = compute::NewWithConfig(config);
    Tensor t = Tensor::FromValue(std::vector<uint32_t>{10, 20});
    t.MoveToDevice(backend, 0);
    Tensor copy = t;
    compute::BufferPtr buffer = copy.DonateBuffer(backend, 0);
    EXPECT_EQ(BufferValues<uint32_t>(backend, buffer), (std::vector<uint32_t>{10, 20}));
    EXPECT_FALSE(t.Ok());
    EXPECT_FALSE(copy.Ok());
    EXPECT_TRUE(ThrowsKilnError([&] { (void)t.ToVector<uint32_t>(); }));
  }
  // A tensor wrapping an execution's output.
  compute::BackendPtr backend = compute::NewWithConfig(kDiscrete);
  const int32_t value = 77;
  Tensor out = Tensor::FromBuffer(backend, 0, Shape(DType::Int32), backend->BufferFromHost(0, &value, 4));
  compute::BufferPtr buffer = out.DonateBuffer(backend, 0);
  EXPECT_FALSE(out.Ok());
  EXPECT_EQ(BufferValues<int32_t>(backend, buffer), (std::vector<int32_t>{77}));
}

TEST(TensorDeviceTest, DonateKeepsOtherDeviceCopies) {
  compute::BackendPtr a = compute::NewWithConfig(kDiscrete);
  compute::BackendPtr b = compute::NewWithConfig(kDiscrete);
  Tensor t = Tensor::FromValue(std::vector<int32_t>{4, 5});
  t.DeviceBuffer(a, 0);
  t.MoveToDevice(b, 0);
  EXPECT_FALSE(t.HasLocal());
  EXPECT_TRUE(t.IsOnDevice(a, 0));
  EXPECT_TRUE(t.IsOnDevice(b, 0));
  compute::BufferPtr donated = t.DonateBuffer(a, 0);
  EXPECT_TRUE(t.Ok());  // The copy on b remains.
  EXPECT_FALSE(t.IsOnDevice(a, 0));
  EXPECT_EQ(t.ToVector<int32_t>(), (std::vector<int32_t>{4, 5}));
}

TEST(TensorDeviceTest, InvalidDeviceNumbers) {
  for (const char* config : {kShared, kDiscrete}) {
    SCOPED_TRACE(config);
    compute::BackendPtr backend = compute::NewWithConfig(config);
    Tensor t = Tensor::FromValue(std::vector<float>{1});
    for (int device : {-1, 1, 100}) {
      SCOPED_TRACE(device);
      EXPECT_TRUE(ThrowsKilnError([&] { (void)t.DeviceBuffer(backend, device); }, {"ref", "device"}));
      EXPECT_TRUE(ThrowsKilnError([&] { t.MoveToDevice(backend, device); }, {"ref"}));
      EXPECT_TRUE(ThrowsKilnError([&] { (void)t.DonateBuffer(backend, device); }, {"ref"}));
      EXPECT_TRUE(ThrowsKilnError([&] { backend->CheckDevice(device); }, {"ref"}));
      EXPECT_FALSE(t.IsOnDevice(backend, device));
    }
    EXPECT_TRUE(ThrowsKilnError([&] { (void)t.DeviceBuffer(nullptr, 0); }));
    EXPECT_TRUE(t.Ok());
    EXPECT_TRUE(t.HasLocal());
    EXPECT_EQ(backend->MemoryStats().live_buffers, 0);
  }
}

TEST(TensorDeviceTest, TwoBackends) {
  compute::BackendPtr a = compute::NewWithConfig(kDiscrete);
  compute::BackendPtr b = compute::NewWithConfig(kShared);
  Tensor t = Tensor::FromValue(std::vector<int64_t>{1, 2, 3});
  compute::BufferPtr ba = t.DeviceBuffer(a, 0);
  compute::BufferPtr bb = t.DeviceBuffer(b, 0);
  EXPECT_NE(ba, bb);
  EXPECT_TRUE(t.IsOnDevice(a, 0));
  EXPECT_TRUE(t.IsOnDevice(b, 0));
  EXPECT_EQ(a->MemoryStats().live_buffers, 1);
  EXPECT_EQ(b->MemoryStats().live_buffers, 1);
  ba.reset();
  bb.reset();
  t.MutableFlatData<int64_t>([](std::span<int64_t> f) { f[0] = 100; });
  EXPECT_FALSE(t.IsOnDevice(a, 0));
  EXPECT_FALSE(t.IsOnDevice(b, 0));
  EXPECT_EQ(a->MemoryStats().live_buffers, 0);
  EXPECT_EQ(b->MemoryStats().live_buffers, 0);
  // Moving to one backend, then reading onto another.
  t.MoveToDevice(a, 0);
  EXPECT_EQ(BufferValues<int64_t>(b, t.DeviceBuffer(b, 0)), (std::vector<int64_t>{100, 2, 3}));
}

TEST(TensorDeviceTest, TensorKeepsItsBackendAlive) {
  compute::BackendPtr backend = compute::NewWithConfig(kDiscrete);
  Tensor t = Tensor::FromValue(std::vector<float>{3, 1, 4});
  t.MoveToDevice(backend, 0);
  backend.reset();
  EXPECT_EQ(t.ToVector<float>(), (std::vector<float>{3, 1, 4}));
}

TEST(TensorDeviceTest, MemoryStatsPeak) {
  compute::BackendPtr backend = compute::NewWithConfig(kShared);
  EXPECT_EQ(backend->MemoryStats().live_bytes, 0);
  EXPECT_EQ(backend->MemoryStats().peak_bytes, 0);
  EXPECT_EQ(backend->MemoryStats().live_buffers, 0);
  Tensor a = Tensor::FromShapeForBackend(backend, 0, Shape(DType::Float32, {16}));
  Tensor b = Tensor::FromShapeForBackend(backend, 0, Shape(DType::Int8, {32}));
  EXPECT_EQ(backend->MemoryStats().live_bytes, 96);
  EXPECT_EQ(backend->MemoryStats().peak_bytes, 96);
  EXPECT_EQ(backend->MemoryStats().live_buffers, 2);
  a = Tensor();
  EXPECT_EQ(backend->MemoryStats().live_bytes, 32);
  EXPECT_EQ(backend->MemoryStats().peak_bytes, 96);
  EXPECT_EQ(backend->MemoryStats().live_buffers, 1);
  backend->ResetPeakMemory();
  EXPECT_EQ(backend->MemoryStats().peak_bytes, 32);
  Tensor c = Tensor::FromShapeForBackend(backend, 0, Shape(DType::Int8, {8}));
  EXPECT_EQ(backend->MemoryStats().peak_bytes, 40);
  c = Tensor();
  b = Tensor();
  EXPECT_EQ(backend->MemoryStats().live_bytes, 0);
  EXPECT_EQ(backend->MemoryStats().peak_bytes, 40);
  backend->ResetPeakMemory();
  EXPECT_EQ(backend->MemoryStats().peak_bytes, 0);
  // Each backend counts its own buffers.
  compute::BackendPtr other = compute::NewWithConfig(kShared);
  Tensor d = Tensor::FromShapeForBackend(other, 0, Shape(DType::Int8, {5}));
  EXPECT_EQ(other->MemoryStats().live_bytes, 5);
  EXPECT_EQ(backend->MemoryStats().live_bytes, 0);
}

}  // namespace
}  // namespace kiln
