// Tests of kiln::Tensor's lifetime and locking: default tensors, finalization, and reads and
// writes from callbacks and concurrent threads.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/tensor_test_util.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using kiln::testing::ThrowsKilnError;

TEST(TensorTest, DefaultTensorIsNotOk) {
  Tensor t;
  EXPECT_FALSE(t.Ok());
  EXPECT_FALSE(t.HasLocal());
  EXPECT_FALSE(t.IsShared());
  EXPECT_TRUE(ThrowsKilnError([&] { (void)t.ToVector<float>(); }));
  EXPECT_TRUE(ThrowsKilnError([&] { t.ConstBytes([](std::span<const uint8_t>) {}); }));
  EXPECT_TRUE(ThrowsKilnError([&] { t.MutableBytes([](std::span<uint8_t>) {}); }));
  EXPECT_TRUE(ThrowsKilnError([&] { t.Reshape({}); }));
  EXPECT_TRUE(ThrowsKilnError([&] { t.MaterializeLocal(); }));
  EXPECT_TRUE(ThrowsKilnError([&] { (void)t.Clone(); }));
  t.FinalizeAll();  // Harmless.
  EXPECT_FALSE(t.Ok());
}

TEST(TensorTest, FinalizeAll) {
  Tensor t = Tensor::FromValue(std::vector<std::vector<float>>{{1, 2}, {3, 4}});
  Tensor copy = t;
  Tensor reshaped = t.Reshape({4});
  Tensor clone = t.Clone();
  ASSERT_TRUE(copy.Ok() && reshaped.Ok());
  t.FinalizeAll();
  for (Tensor* x : {&t, &copy, &reshaped}) {
    EXPECT_FALSE(x->Ok());
    EXPECT_FALSE(x->HasLocal());
    EXPECT_FALSE(x->IsShared());
    EXPECT_TRUE(ThrowsKilnError([&] { (void)x->ToVector<float>(); }, {"finalized"}));
    EXPECT_TRUE(ThrowsKilnError([&] { x->ConstFlatData<float>([](std::span<const float>) {}); }));
    EXPECT_TRUE(ThrowsKilnError([&] { x->MutableFlatData<float>([](std::span<float>) {}); }));
    EXPECT_TRUE(ThrowsKilnError([&] { x->ConstBytes([](std::span<const uint8_t>) {}); }));
    EXPECT_TRUE(ThrowsKilnError([&] { x->MutableBytes([](std::span<uint8_t>) {}); }));
    EXPECT_TRUE(ThrowsKilnError([&] { (void)x->Clone(); }));
    EXPECT_TRUE(ThrowsKilnError([&] { (void)x->Reshape({2, 2}); }));
    EXPECT_TRUE(ThrowsKilnError([&] { x->MaterializeLocal(); }));
    // Comparing needs the data when the shapes match.
    Tensor same_shape = clone.Reshape(x->shape().Dimensions());
    EXPECT_TRUE(ThrowsKilnError([&] { (void)x->Equal(same_shape); }));
    EXPECT_TRUE(ThrowsKilnError([&] { (void)same_shape.Equal(*x); }));
  }
  EXPECT_TRUE(ThrowsKilnError([&] { (void)t.Value<std::vector<std::vector<float>>>(); }));
  EXPECT_TRUE(ThrowsKilnError([&] { (void)reshaped.Value<std::vector<float>>(); }));
  EXPECT_TRUE(ThrowsKilnError([&] { (void)t.Item<float>(); }));
  // The shape stays readable.
  EXPECT_EQ(t.shape(), Shape(DType::Float32, {2, 2}));
  EXPECT_EQ(reshaped.shape(), Shape(DType::Float32, {4}));
  // Twice is harmless, also through another handle.
  t.FinalizeAll();
  copy.FinalizeAll();
  reshaped.FinalizeAll();
  EXPECT_FALSE(t.Ok());
  // A clone is independent.
  EXPECT_TRUE(clone.Ok());
  EXPECT_EQ(clone.ToVector<float>(), (std::vector<float>{1, 2, 3, 4}));
  // Finalizing a reshape finalizes the original.
  Tensor u = Tensor::FromScalarAndDimensions(int32_t{3}, {2, 2});
  Tensor v = u.Reshape({4});
  v.FinalizeAll();
  EXPECT_FALSE(u.Ok());
}

TEST(TensorTest, MaterializeLocalOnHostTensor) {
  Tensor t = Tensor::FromValue(std::vector<int32_t>{1, 2});
  t.MaterializeLocal();
  EXPECT_TRUE(t.HasLocal());
  EXPECT_EQ(t.ToVector<int32_t>(), (std::vector<int32_t>{1, 2}));
}

TEST(TensorTest, RecursiveReadInsideCallback) {
  Tensor t = Tensor::FromValue(std::vector<float>{1, 2, 3});
  float total = 0;
  t.ConstFlatData<float>([&](std::span<const float> outer) {
    // Reading the same tensor again from the callback must not deadlock.
    const std::vector<float> again = t.ToVector<float>();
    t.ConstFlatData<float>([&](std::span<const float> inner) { total = inner[2] + again[1] + outer[0]; });
    EXPECT_EQ(t.ToString().empty(), false);
    EXPECT_TRUE(t.Equal(t));
  });
  EXPECT_EQ(total, 6.0f);
  // And from a write callback, through a reshape of the same storage.
  Tensor r = t.Reshape({3, 1});
  t.MutableFlatData<float>([&](std::span<float> f) { f[0] = r.ToVector<float>()[2] * 10; });
  EXPECT_EQ(t.ToVector<float>(), (std::vector<float>{30, 2, 3}));
}

TEST(TensorTest, ConcurrentMutationsAreSerialised) {
  Tensor t = Tensor::FromScalar(int64_t{0});
  constexpr int kIterations = 10000;
  auto work = [&t] {
    for (int i = 0; i < kIterations; ++i) {
      t.MutableFlatData<int64_t>([](std::span<int64_t> f) {
        const int64_t v = f[0];
        f[0] = v + 1;
      });
    }
  };
  std::thread a(work);
  std::thread b(work);
  a.join();
  b.join();
  EXPECT_EQ(t.Item<int64_t>(), 2 * kIterations);
}

TEST(TensorTest, WriterWaitsForReader) {
  Tensor t = Tensor::FromScalar(int32_t{1});
  std::atomic<bool> reading{false};
  std::atomic<bool> writer_started{false};
  int32_t seen_after_wait = 0;
  std::thread reader([&] {
    t.ConstFlatData<int32_t>([&](std::span<const int32_t> f) {
      reading = true;
      while (!writer_started) std::this_thread::yield();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      seen_after_wait = f[0];  // The writer must still be blocked.
    });
  });
  while (!reading) std::this_thread::yield();
  std::thread writer([&] {
    writer_started = true;
    t.MutableFlatData<int32_t>([](std::span<int32_t> f) { f[0] = 2; });
  });
  reader.join();
  writer.join();
  EXPECT_EQ(seen_after_wait, 1);
  EXPECT_EQ(t.Item<int32_t>(), 2);
}

// a.Equal(b) and b.Equal(a) at the same time must not deadlock (each locks both tensors). The
// threads are detached and their state leaked so that a deadlock fails the test instead of
// hanging the binary.
TEST(TensorTest, ConcurrentEqualInOppositeOrderDoesNotDeadlock) {
  struct State {
    Tensor a = Tensor::FromValue(std::vector<float>{1, 2, 3});
    Tensor b = Tensor::FromValue(std::vector<float>{1, 2, 3});
    std::atomic<int> ready{0};
    std::atomic<int> done{0};
  };
  auto state = std::make_shared<State>();
  constexpr int kIterations = 200000;
  auto compare = [](std::shared_ptr<State> s, bool forward) {
    ++s->ready;
    while (s->ready < 2) std::this_thread::yield();  // Start together so the loops overlap.
    for (int i = 0; i < kIterations; ++i) (void)(forward ? s->a.Equal(s->b) : s->b.Equal(s->a));
    ++s->done;
  };
  std::thread(compare, state, true).detach();
  std::thread(compare, state, false).detach();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (state->done < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(state->done.load(), 2) << "a.Equal(b) and b.Equal(a) in two threads deadlocked";
}

TEST(TensorTest, ExceptionInsideCallbackReleasesTheLock) {
  Tensor t = Tensor::FromValue(std::vector<int32_t>{1, 2});
  EXPECT_THROW(t.ConstFlatData<int32_t>([](std::span<const int32_t>) { throw std::runtime_error("boom"); }),
               std::runtime_error);
  // Another thread can still take the lock.
  std::thread other([&] { t.MutableFlatData<int32_t>([](std::span<int32_t> f) { f[0] = 5; }); });
  other.join();
  EXPECT_EQ(t.ToVector<int32_t>()[0], 5);
}

}  // namespace
}  // namespace kiln
