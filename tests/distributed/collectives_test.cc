// Collectives and replicated runs without MPI: the devices of one process (cpu:devices=N,
// ref:devices=N) and replica groups of threads. The collectives' values are checked by the
// conformance rows (conformance/src/cases_collective.cc); here: their gradients, checked
// numerically on every backend, the devices, and the failures (replicas that disagree, a replica
// that throws, one that never arrives).

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kiln/compute/backend.h"
#include "kiln/compute/replicas.h"
#include "kiln/graph/collective.h"
#include "kiln/graph/exec.h"
#include "kiln/graph/gradient.h"
#include "kiln/graph/ops.h"
#include "test_util.h"

namespace kiln {
namespace {

using graph::Node;
using test::Throws;

/// The two-device configurations of every backend.
std::vector<std::string> TwoDeviceBackends() { return {"ref:devices=2", "cpu:threads=2,devices=2"}; }

/// Replica r's loss is sum(w * f(x_r)) for fixed weights w; the job's loss is their sum. Runs
/// the replicas on the backend's two devices and returns, per replica, {loss, d(job loss)/dx_r}.
std::vector<std::vector<Tensor>> RunLoss(const compute::BackendPtr& backend,
                                         const std::function<Node(Node)>& f, const std::vector<Tensor>& xs) {
  compute::ReplicaGroup group(static_cast<int>(xs.size()), 1, 0, nullptr, std::chrono::seconds(30));
  graph::Exec exec = graph::NewExec(backend, [f](Node x) {
    Node y = f(x);
    Node w = graph::Iota(x.graph(), Shape(DType::Float64, y.shape().Dimensions()), 0);
    if (y.rank() > 1) w = w + graph::Iota(x.graph(), Shape(DType::Float64, y.shape().Dimensions()), 1);
    Node loss = graph::ReduceAllSum(y * graph::AddScalar(graph::MulScalar(w, 0.25), 1.0));
    return std::vector<Node>{loss, graph::Gradient(loss, {x})[0]};
  });
  std::vector<std::vector<Tensor>> inputs;
  for (const Tensor& x : xs) inputs.push_back({x});
  return exec.CallReplicas(group, inputs);
}

double JobLoss(const std::vector<std::vector<Tensor>>& out) {
  double sum = 0;
  for (const auto& r : out) sum += r[0].Item<double>();
  return sum;
}

/// Checks every element of every replica's gradient against central differences of the job loss.
void CheckGradients(const std::string& config, const std::function<Node(Node)>& f,
                    const std::vector<int64_t>& dims) {
  SCOPED_TRACE(config);
  const compute::BackendPtr backend = compute::NewWithConfig(config);
  std::vector<Tensor> xs;
  for (int r = 0; r < 2; ++r) {
    std::vector<double> v;
    for (int64_t i = 0; i < Shape(DType::Float64, dims).Size(); ++i)
      v.push_back(0.3 + 0.37 * i + 1.13 * r * (i % 3));
    xs.push_back(Tensor::FromFlat(Shape(DType::Float64, dims), v));
  }
  const std::vector<std::vector<Tensor>> out = RunLoss(backend, f, xs);
  const double eps = 1e-6;
  for (int r = 0; r < 2; ++r) {
    const std::vector<double> analytic = out[static_cast<size_t>(r)][1].ToVector<double>();
    for (int64_t i = 0; i < xs[0].Size(); ++i) {
      auto at = [&](double delta) {
        std::vector<Tensor> moved = {xs[0].Clone(), xs[1].Clone()};
        moved[static_cast<size_t>(r)].MutableFlatData<double>(
            [&](std::span<double> d) { d[static_cast<size_t>(i)] += delta; });
        return JobLoss(RunLoss(backend, f, moved));
      };
      const double numeric = (at(eps) - at(-eps)) / (2 * eps);
      EXPECT_NEAR(analytic[static_cast<size_t>(i)], numeric, 1e-5 * (1 + std::fabs(numeric)))
          << "replica " << r << " element " << i;
    }
  }
}

TEST(CollectiveGradients, AllReduceSumAndMean) {
  for (const std::string& config : TwoDeviceBackends()) {
    CheckGradients(config, [](Node x) { return graph::AllReduce(x * x); }, {2, 3});
    CheckGradients(config, [](Node x) { return graph::AllReduce(graph::Sin(x), graph::ReduceOp::Mean); },
                   {2, 3});
  }
}

TEST(CollectiveGradients, AllReduceMaxAndMinGoToTheReplicaHoldingTheResult) {
  for (const std::string& config : TwoDeviceBackends()) {
    CheckGradients(config, [](Node x) { return graph::AllReduce(x * x, graph::ReduceOp::Max); }, {2, 3});
    CheckGradients(config, [](Node x) { return graph::AllReduce(x, graph::ReduceOp::Min); }, {2, 3});
  }
}

TEST(CollectiveGradients, AllGatherReduceScatterAndBroadcast) {
  for (const std::string& config : TwoDeviceBackends()) {
    CheckGradients(config, [](Node x) { return graph::AllGather(x * x, 1); }, {2, 3});
    CheckGradients(config, [](Node x) { return graph::ReduceScatter(graph::Sin(x), 0); }, {4, 3});
    CheckGradients(config, [](Node x) { return graph::CollectiveBroadcast(x * x, 1); }, {2, 3});
  }
}

TEST(Devices, CpuSplitsItsThreadsIntoDevices) {
  const compute::BackendPtr b = compute::NewWithConfig("cpu:threads=2,devices=2");
  EXPECT_EQ(b->NumDevices(), 2);
  EXPECT_NE(b->Description().find("2 devices of 1 thread"), std::string::npos) << b->Description();
  EXPECT_EQ(compute::NewWithConfig("ref:devices=3")->NumDevices(), 3);
  // A tensor placed on device 1, an Exec run there, and a copy back to device 0.
  Tensor t = Tensor::FromShapeForBackend(b, 1, Shape(DType::Float32, {3}));
  t.MutableFlatData<float>([](std::span<float> v) { v[0] = 1, v[1] = 2, v[2] = 3; });
  graph::Exec exec = graph::NewExec(b, [](Node x) { return x * x; });
  exec.InDevice(1);
  Tensor y = exec.Call1(t);
  EXPECT_TRUE(y.IsOnDevice(b, 1));
  EXPECT_EQ(y.ToVector<float>(), (std::vector<float>{1, 4, 9}));
  y.MoveToDevice(b, 0);
  EXPECT_TRUE(y.IsOnDevice(b, 0));
  EXPECT_EQ(y.ToVector<float>(), (std::vector<float>{1, 4, 9}));
}

TEST(Devices, OutOfRangeDevicesAreErrorsNamingTheBackend) {
  const compute::BackendPtr b = compute::NewWithConfig("cpu:threads=2,devices=2");
  EXPECT_TRUE(Throws([&] { Tensor::FromShapeForBackend(b, 2, Shape(DType::Float32, {1})); }, {"cpu"}));
  graph::Exec exec = graph::NewExec(b, [](Node x) { return x; });
  EXPECT_TRUE(Throws([&] { exec.InDevice(5); }, {"cpu"}));
  EXPECT_TRUE(Throws([] { compute::NewWithConfig("cpu:threads=2,devices=3"); }, {"devices=3"}));
  EXPECT_TRUE(Throws([] { compute::NewWithConfig("ref:devices=0"); }, {"devices=0"}));
}

TEST(Replicas, ReplicasThatDisagreeAreAnErrorNamingThem) {
  const compute::BackendPtr b = compute::NewWithConfig("ref:devices=2");
  compute::ReplicaGroup group(2, 1, 0, nullptr, std::chrono::seconds(30));
  // Replica 1 reduces a larger tensor than replica 0: a different call.
  graph::Exec exec = graph::NewExec(b, [](Node x) { return graph::AllReduce(x); });
  EXPECT_TRUE(Throws(
      [&] {
        std::vector<std::vector<Tensor>> in = {
            {Tensor::FromFlat(Shape(DType::Float32, {2}), std::vector<float>{1, 2})},
            {Tensor::FromFlat(Shape(DType::Float32, {3}), std::vector<float>{1, 2, 3})}};
        exec.CallReplicas(group, in);
      },
      {"differ in shape"}));
  // Two groups of calls in different orders, through the group directly.
  compute::RunReplicas(group, [&](int d) {
    const float v = 1;
    std::vector<float> out(2);
    if (d == 0) {
      EXPECT_THROW(group.Exchange(0, {compute::OpType::AllReduce, DType::Float32, 4, 0}, &v, out.data()),
                   Error);
    } else {
      EXPECT_THROW(group.Exchange(1, {compute::OpType::AllGather, DType::Float32, 4, 0}, &v, out.data()),
                   Error);
    }
  });
  try {
    group.Exchange(0, {compute::OpType::AllReduce, DType::Float32, 4, 1}, nullptr, nullptr);
    ADD_FAILURE() << "a failed group must refuse later calls until reset";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("replicas disagree: replica 0 runs AllReduce #0"), std::string::npos)
        << e.what();
  }
  group.Reset();
}

TEST(Replicas, AReplicaThatThrowsStopsTheOthers) {
  compute::ReplicaGroup group(2, 1, 0, nullptr, std::chrono::seconds(30));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(Throws(
      [&] {
        compute::RunReplicas(group, [&](int d) {
          if (d == 1) throw Error("device 1 ran out of luck");
          float v = 1, out[2];
          group.Exchange(0, {compute::OpType::AllReduce, DType::Float32, 4, 0}, &v, out);
        });
      },
      {"device 1 ran out of luck"}));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  // The group works again afterwards.
  std::vector<float> got(4);
  compute::RunReplicas(group, [&](int d) {
    const float v[2] = {static_cast<float>(d), static_cast<float>(10 + d)};
    group.Exchange(d, {compute::OpType::AllGather, DType::Float32, 8, 0}, v,
                   d == 0 ? got.data() : std::vector<float>(4).data());
  });
  EXPECT_EQ(got, (std::vector<float>{0, 10, 1, 11}));
}

TEST(Replicas, AReplicaThatNeverArrivesTimesOut) {
  compute::ReplicaGroup group(2, 1, 0, nullptr, std::chrono::milliseconds(200));
  float v = 1, out[2];
  EXPECT_TRUE(Throws(
      [&] {
        group.Exchange(0, {compute::OpType::AllReduce, DType::Float32, 4, 0}, &v, out);
      },
      {"replicas 1 did not arrive"}));
}

// A replica that times out while another still reads (and writes into every device's result)
// leaves only after that read: its buffers are the run's, freed once it unwinds.
TEST(Replicas, AReplicaThatTimesOutWaitsForTheOthersReads) {
  compute::ReplicaGroup group(2, 1, 0, nullptr, std::chrono::milliseconds(100));
  std::atomic<int64_t> read_done{0}, left{0};
  auto now = [] { return std::chrono::steady_clock::now().time_since_epoch().count(); };
  EXPECT_TRUE(Throws(
      [&] {
        compute::RunReplicas(group, [&](int d) {
          float v = 1, result[1] = {0};
          try {
            group.Exchange(d, {compute::OpType::AllReduce, DType::Float32, 4, 0}, &v, result,
                           [&](const std::vector<const uint8_t*>&, const std::vector<uint8_t*>& results,
                               int64_t, int64_t) {
                             if (d != 1) return;
                             // Slower than the timeout, then writes into device 0's result.
                             std::this_thread::sleep_for(std::chrono::milliseconds(400));
                             std::memset(results[0], 0, 4);
                             read_done = now();
                           });
          } catch (...) {
            if (d == 0) left = now();
            throw;
          }
        });
      },
      {"waited 0.1 s for the other replicas to read"}));
  ASSERT_GT(read_done.load(), 0);
  EXPECT_GE(left.load(), read_done.load());
}

// Two processes of two devices each, joined by an exchange in memory (what MPI does between
// processes): replica ids are device-major (device × processes + rank), and collectives see the
// replicas' values in that order.
TEST(Replicas, IdsAcrossProcessesAreDeviceMajor) {
  struct Joint {  // One exchange in flight at a time: enough for this program's one collective.
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::vector<uint8_t>> parts = std::vector<std::vector<uint8_t>>(2);
    int arrived = 0, round = 0;
  };
  auto joint = std::make_shared<Joint>();
  auto exchange = [joint](int rank) -> compute::ProcessExchange {
    return [joint, rank](const compute::CollectiveCall&, const void* local, int64_t bytes, void* all) {
      std::unique_lock lock(joint->mu);
      const int round = joint->round;
      const auto* p = static_cast<const uint8_t*>(local);
      joint->parts[static_cast<size_t>(rank)].assign(p, p + bytes);
      if (++joint->arrived == 2) {
        joint->arrived = 0;
        ++joint->round;
        joint->cv.notify_all();
      } else {
        joint->cv.wait(lock, [&] { return joint->round != round; });
      }
      for (size_t r = 0; r < 2; ++r)  // Rank order.
        std::memcpy(static_cast<uint8_t*>(all) + r * static_cast<size_t>(bytes), joint->parts[r].data(),
                    static_cast<size_t>(bytes));
    };
  };
  std::vector<std::vector<std::vector<Tensor>>> out(2);
  std::vector<std::thread> processes;
  for (int rank = 0; rank < 2; ++rank) {
    processes.emplace_back([&, rank] {
      compute::ReplicaGroup group(2, 2, rank, exchange(rank), std::chrono::seconds(30));
      EXPECT_EQ(group.ReplicaOf(0), rank);
      EXPECT_EQ(group.ReplicaOf(1), 2 + rank);
      graph::Exec exec = graph::NewExec(compute::NewWithConfig("ref:devices=2"), [](Node x) {
        return std::vector<Node>{graph::AllGather(x), graph::ReplicaId(x.graph())};
      });
      std::vector<std::vector<Tensor>> inputs;
      for (int d = 0; d < 2; ++d) inputs.push_back({Tensor::FromValue(std::vector<int32_t>{10 * rank + d})});
      out[static_cast<size_t>(rank)] = exec.CallReplicas(group, inputs);
    });
  }
  for (std::thread& t : processes) t.join();
  for (int rank = 0; rank < 2; ++rank) {
    for (int d = 0; d < 2; ++d) {
      const std::vector<Tensor>& r = out[static_cast<size_t>(rank)][static_cast<size_t>(d)];
      ASSERT_EQ(r.size(), 2u);
      // Replica 0 is rank 0's device 0, replica 1 rank 1's device 0, then the devices 1.
      EXPECT_EQ(r[0].ToVector<int32_t>(), (std::vector<int32_t>{0, 10, 1, 11}));
      EXPECT_EQ(r[1].Item<int32_t>(), 2 * d + rank);
    }
  }
}

// The devices of a process share an AllReduce: each reduces a part of the elements (cut at
// 64-byte boundaries) and writes it into every device's result. Every element of every replica's
// result must be the fixed tree's, for sizes around the parts' and chunks' edges (fewer elements
// than devices, one chunk and a few more), and a Float32 mean must be the bits of Div(sum, 3),
// which the cpu compiler folds into the AllReduce's kernel ("+Div[3]" in its dump). One group
// runs a new program for every size: its worker threads must run each call's program, not the
// first one's (replicas would otherwise report that they disagree).
TEST(Replicas, DevicesShareAnAllReducesWorkAndItsMean) {
  const int64_t sizes[] = {1, 2, 15, 16, 17, 49, 16384 * 3 + 5, 100003};
  for (const char* config : {"ref:devices=3", "cpu:threads=3,devices=3"}) {
    SCOPED_TRACE(config);
    const bool cpu = std::string(config).starts_with("cpu");
    if (cpu) setenv("KILN_CPU_DUMP", "1", 1);
    const compute::BackendPtr b = compute::NewWithConfig(config);
    unsetenv("KILN_CPU_DUMP");
    compute::ReplicaGroup group(3, 1, 0, nullptr, std::chrono::seconds(60));
    for (const int64_t n : sizes) {
      SCOPED_TRACE(n);
      graph::Exec exec = graph::NewExec(b, [](Node f, Node i, Node d) {
        // The sum is of -f: a second AllReduce of f would be merged with the mean's, which then
        // could not fold its division (the sums have another reader).
        return std::vector<Node>{graph::AllReduce(f, graph::ReduceOp::Mean), graph::AllReduce(graph::Neg(f)),
                                 graph::AllReduce(i), graph::AllReduce(d, graph::ReduceOp::Max)};
      });
      std::vector<std::vector<float>> fs(3);
      std::vector<std::vector<int32_t>> is(3);
      std::vector<std::vector<double>> ds(3);
      std::vector<std::vector<Tensor>> in;
      for (int r = 0; r < 3; ++r) {
        for (int64_t k = 0; k < n; ++k) {
          fs[static_cast<size_t>(r)].push_back(0.1f * static_cast<float>((k * 7 + r * 13) % 101) - 4.9f);
          is[static_cast<size_t>(r)].push_back(static_cast<int32_t>(k * (r + 1)) - 77);
          ds[static_cast<size_t>(r)].push_back(std::sin(static_cast<double>(k) + r));
        }
        in.push_back({Tensor::FromFlat(Shape(DType::Float32, {n}), fs[static_cast<size_t>(r)]),
                      Tensor::FromFlat(Shape(DType::Int32, {n}), is[static_cast<size_t>(r)]),
                      Tensor::FromFlat(Shape(DType::Float64, {n}), ds[static_cast<size_t>(r)])});
      }
      if (cpu) ::testing::internal::CaptureStderr();
      const std::vector<std::vector<Tensor>> out = exec.CallReplicas(group, in);
      if (cpu) {
        const std::string dump = ::testing::internal::GetCapturedStderr();
        EXPECT_NE(dump.find("AllReduce{reduce=Sum, replicas=3}+Div[3]"), std::string::npos) << dump;
      }
      for (int r = 0; r < 3; ++r) {
        const std::vector<Tensor>& o = out[static_cast<size_t>(r)];
        ASSERT_EQ(o.size(), 4u);
        const std::vector<float> mean = o[0].ToVector<float>(), sum = o[1].ToVector<float>();
        const std::vector<int32_t> isum = o[2].ToVector<int32_t>();
        const std::vector<double> dmax = o[3].ToVector<double>();
        for (size_t k = 0; k < static_cast<size_t>(n); ++k) {
          const float s = (fs[0][k] + fs[1][k]) + fs[2][k];  // The fixed tree: (0, 1), then 2.
          ASSERT_EQ(sum[k], -s) << "replica " << r << " element " << k;
          ASSERT_EQ(mean[k], s / 3.0f) << "replica " << r << " element " << k;
          ASSERT_EQ(isum[k], is[0][k] + is[1][k] + is[2][k]) << "replica " << r << " element " << k;
          ASSERT_EQ(dmax[k], std::max({ds[0][k], ds[1][k], ds[2][k]})) << "replica " << r << " element " << k;
        }
      }
    }
  }
}

/// Three processes of one device, as threads joined in memory, for ReplicaGroups whose processes
/// split an AllReduce's work (ProcessParts) as MPI's do.
struct Joint {
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0, generation = 0;
  std::vector<const uint8_t*> shared = std::vector<const uint8_t*>(3);
  std::atomic<int> scatters = 0, gathers = 0;
  /// Publishes `mine` as rank's pointer (unless null) and waits until every rank has met here.
  void Meet(int rank, const void* mine) {
    std::unique_lock lock(mu);
    if (mine != nullptr) shared[static_cast<size_t>(rank)] = static_cast<const uint8_t*>(mine);
    const int g = generation;
    if (++arrived == 3) {
      arrived = 0;
      ++generation;
      cv.notify_all();
    } else {
      cv.wait(lock, [&] { return generation != g; });
    }
  }
  compute::ProcessExchange Exchange(int rank) {
    return [this, rank](const compute::CollectiveCall&, const void* local, int64_t bytes, void* all) {
      Meet(rank, local);
      for (size_t r = 0; r < 3; ++r)
        std::memcpy(static_cast<uint8_t*>(all) + r * static_cast<size_t>(bytes), shared[r],
                    static_cast<size_t>(bytes));
      Meet(rank, nullptr);  // No one changes its bytes before all have read them.
    };
  }
  compute::ProcessParts Parts(int rank) {
    return {[this, rank](const compute::CollectiveCall&, const void* local,
                         const std::vector<int64_t>& offsets, void* mine) {
              ++scatters;
              Meet(rank, local);
              const int64_t begin = offsets[static_cast<size_t>(rank)];
              const int64_t length = offsets[static_cast<size_t>(rank) + 1] - begin;
              for (int p = 0; p < 3; ++p)
                if (p != rank && length > 0)
                  std::memcpy(static_cast<uint8_t*>(mine) + p * length,
                              shared[static_cast<size_t>(p)] + begin, static_cast<size_t>(length));
              Meet(rank, nullptr);
            },
            [this, rank](const compute::CollectiveCall&, void* result, const std::vector<int64_t>& offsets) {
              ++gathers;
              Meet(rank, result);
              for (int p = 0; p < 3; ++p)
                if (p != rank)
                  std::memcpy(static_cast<uint8_t*>(result) + offsets[static_cast<size_t>(p)],
                              shared[static_cast<size_t>(p)] + offsets[static_cast<size_t>(p)],
                              static_cast<size_t>(offsets[static_cast<size_t>(p) + 1] -
                                                  offsets[static_cast<size_t>(p)]));
              Meet(rank, nullptr);
            }};
  }
};

// Processes of one device each split an AllReduce: each receives only the others' bytes of its
// part, reduces it in the fixed tree and sends it to the others. Every replica's result must be
// the tree's for every element, across the parts' edges, with the mean's division folded in on
// cpu; an AllGather in the same program still goes through the exchange of whole operands.
// (A ThreadSafety test: the tsan preset runs it, the threads standing in for processes.)
TEST(ThreadSafetyReplicas, ProcessesSplitAnAllReducesWork) {
  const int64_t sizes[] = {1, 17, 16384 * 3 + 5, 100003};
  for (const char* config : {"ref", "cpu:threads=1"}) {
    SCOPED_TRACE(config);
    Joint joint;
    for (const int64_t n : sizes) {
      SCOPED_TRACE(n);
      std::vector<std::vector<float>> fs(3);
      std::vector<std::vector<int32_t>> is(3);
      for (int r = 0; r < 3; ++r)
        for (int64_t k = 0; k < n; ++k) {
          fs[static_cast<size_t>(r)].push_back(0.1f * static_cast<float>((k * 7 + r * 13) % 101) - 4.9f);
          is[static_cast<size_t>(r)].push_back(static_cast<int32_t>(k * (r + 1)) - 77);
        }
      std::vector<std::vector<Tensor>> out(3);
      std::vector<std::thread> processes;
      for (int rank = 0; rank < 3; ++rank) {
        processes.emplace_back([&, rank] {
          compute::ReplicaGroup group(1, 3, rank, joint.Exchange(rank), std::chrono::seconds(60));
          group.SetProcessParts(joint.Parts(rank));
          graph::Exec exec = graph::NewExec(compute::NewWithConfig(config), [](Node f, Node i) {
            return std::vector<Node>{graph::AllReduce(f, graph::ReduceOp::Mean),
                                     graph::AllReduce(graph::Neg(f)), graph::AllReduce(i),
                                     graph::AllGather(graph::Slice(i, {graph::AxisRange(0, 1)}))};
          });
          const auto r = static_cast<size_t>(rank);
          out[r] = exec.CallReplicas(group, {{Tensor::FromFlat(Shape(DType::Float32, {n}), fs[r]),
                                              Tensor::FromFlat(Shape(DType::Int32, {n}), is[r])}})[0];
        });
      }
      for (std::thread& t : processes) t.join();
      for (int r = 0; r < 3; ++r) {
        const std::vector<Tensor>& o = out[static_cast<size_t>(r)];
        ASSERT_EQ(o.size(), 4u);
        const std::vector<float> mean = o[0].ToVector<float>(), sum = o[1].ToVector<float>();
        const std::vector<int32_t> isum = o[2].ToVector<int32_t>();
        for (size_t k = 0; k < static_cast<size_t>(n); ++k) {
          const float s = (fs[0][k] + fs[1][k]) + fs[2][k];
          ASSERT_EQ(sum[k], -s) << "replica " << r << " element " << k;
          ASSERT_EQ(mean[k], s / 3.0f) << "replica " << r << " element " << k;
          ASSERT_EQ(isum[k], is[0][k] + is[1][k] + is[2][k]) << "replica " << r << " element " << k;
        }
        EXPECT_EQ(o[3].ToVector<int32_t>(), (std::vector<int32_t>{is[0][0], is[1][0], is[2][0]}));
      }
    }
    // Three AllReduces a run, split in each of the three processes.
    EXPECT_EQ(joint.scatters.load(), 3 * 3 * static_cast<int>(std::size(sizes)));
    EXPECT_EQ(joint.gathers.load(), joint.scatters.load());
  }
}

TEST(Replicas, AProgramOfManyReplicasRunOutsideAGroupIsAnError) {
  for (const char* config : {"ref", "cpu"}) {
    graph::Graph g("two");
    g.SetReplicas(2);
    Node x = g.Parameter(Shape(DType::Float32, {2}));
    auto program = g.Build({graph::AllReduce(x)});
    const compute::BackendPtr b = compute::NewWithConfig(config);
    auto exe = b->Compile(program);
    Tensor in = Tensor::FromFlat(Shape(DType::Float32, {2}), std::vector<float>{1, 2});
    EXPECT_TRUE(Throws([&] { exe->Execute({in.DeviceBuffer(b, 0)}, {false}, 0); },
                       {"outside a replicated execution"}));
  }
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// Under ThreadSanitizer (the tsan preset runs the ThreadSafety* tests): replicas meeting again and
// again, the fast ones waiting at the next collective for the slow ones to leave the last.
TEST(ThreadSafetyReplicas, ManyCollectivesInARow) {
  const compute::BackendPtr b = compute::NewWithConfig("ref:devices=3");
  compute::ReplicaGroup group(3, 1, 0, nullptr, std::chrono::seconds(60));
  graph::Exec exec = graph::NewExec(b, [](graph::Node x) {
    for (int i = 0; i < 20; ++i)
      x = graph::AllReduce(x, graph::ReduceOp::Mean) + graph::ReduceSum(graph::AllGather(x, 0), {0});
    return x;
  });
  for (int run = 0; run < 5; ++run) {
    std::vector<std::vector<Tensor>> in;
    for (int d = 0; d < 3; ++d)
      in.push_back({Tensor::FromFlat(Shape(DType::Float64, {1}), std::vector<double>{1.0 * d})});
    const auto out = exec.CallReplicas(group, in);
    EXPECT_EQ(out[0][0].ToVector<double>(), out[1][0].ToVector<double>());
    EXPECT_EQ(out[0][0].ToVector<double>(), out[2][0].ToVector<double>());
  }
}

}  // namespace
}  // namespace kiln
