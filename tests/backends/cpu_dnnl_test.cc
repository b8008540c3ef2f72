// Tests of the cpu backend's oneDNN kernels: Float32 DotGeneral and ConvGeneral over many random
// shapes and dims layouts (batch axes, transposed operands; grouped, strided, dilated, padded,
// cropped and input-dilated convolutions in 1-D, 2-D and 3-D) agree with the reference backend
// within float32 tolerance, the oneDNN kernel is the one chosen (checked through the backend's
// internal kernel table), and executions run concurrently from several threads.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "backends/cpu/cost_model.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dnnl_common.h"
#include "backends/cpu/dnnl_kernels.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu_test_util.h"
#include "kiln/graph/gradient.h"
#include "kiln/kiln.h"
#include "test_util.h"

namespace kiln {
namespace {

using kiln::test::Close;
using kiln::test::KernelNames;
using kiln::test::Pick;
using kiln::test::Random;
using kiln::test::RunDumped;
using kiln::test::RunProgram;

using compute::OpAttributes;
using compute::OpType;
using graph::Graph;

/// The cpu backend with two threads (the kernels' OpenMP team) and the reference backend.
const compute::BackendPtr& Cpu() { return kiln::test::Backend("cpu:threads=2,serial_work=0"); }
const compute::BackendPtr& Ref() { return kiln::test::Backend("ref"); }

/// Builds `op` over parameters of shapes a and b, runs it on cpu and ref and compares; returns
/// the name of the kernel the cpu backend picks.
std::string CheckOp(OpType op, const Shape& a, const Shape& b, const OpAttributes& attrs, int64_t terms,
                    std::mt19937& rng, const std::string& what) {
  Graph g;
  graph::Node out = g.AddOp(op, {g.Parameter(a), g.Parameter(b)}, attrs);
  std::shared_ptr<const compute::Program> program = g.Build({out});
  const std::vector<Tensor> inputs = {Random(a, rng), Random(b, rng)};
  EXPECT_TRUE(Close(RunProgram(Cpu(), program, inputs)[0], RunProgram(Ref(), program, inputs)[0], terms))
      << what;
  const std::vector<std::string> names = KernelNames(Cpu(), *program, op);
  return names.empty() ? "" : names[0];
}

/// True when `name` is a oneDNN kernel.
bool IsDnnl(const std::string& name) { return name.rfind("dnnl.", 0) == 0; }

/// Axis positions of `roles` roles in a random order: result[r] is the axis holding role r.
std::vector<int64_t> Place(size_t roles, std::mt19937& rng) {
  std::vector<int64_t> axes(roles);
  std::iota(axes.begin(), axes.end(), 0);
  std::shuffle(axes.begin(), axes.end(), rng);
  return axes;
}

TEST(CpuDnnl, RandomDotGeneral) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 120; ++trial) {
    const size_t nb = static_cast<size_t>(Pick(rng, 0, 2)), nl = static_cast<size_t>(Pick(rng, 0, 2)),
                 nr = static_cast<size_t>(Pick(rng, 0, 2)), nc = static_cast<size_t>(Pick(rng, 0, 2));
    std::vector<int64_t> batch(nb), lfree(nl), rfree(nr), contr(nc);
    for (auto* v : {&batch, &lfree, &rfree, &contr}) {
      for (int64_t& d : *v) d = Pick(rng, 1, 7);
    }
    // Roles: batch axes first, then free, then contracting; each operand places them at random.
    const std::vector<int64_t> lpos = Place(nb + nl + nc, rng), rpos = Place(nb + nr + nc, rng);
    std::vector<int64_t> ldims(lpos.size()), rdims(rpos.size());
    OpAttributes at;
    for (size_t i = 0; i < nb; ++i) {
      ldims[static_cast<size_t>(lpos[i])] = rdims[static_cast<size_t>(rpos[i])] = batch[i];
      at.lhs_batch.push_back(lpos[i]);
      at.rhs_batch.push_back(rpos[i]);
    }
    for (size_t i = 0; i < nl; ++i) ldims[static_cast<size_t>(lpos[nb + i])] = lfree[i];
    for (size_t i = 0; i < nr; ++i) rdims[static_cast<size_t>(rpos[nb + i])] = rfree[i];
    int64_t terms = 1;
    for (size_t i = 0; i < nc; ++i) {
      ldims[static_cast<size_t>(lpos[nb + nl + i])] = rdims[static_cast<size_t>(rpos[nb + nr + i])] =
          contr[i];
      at.lhs_contracting.push_back(lpos[nb + nl + i]);
      at.rhs_contracting.push_back(rpos[nb + nr + i]);
      terms *= contr[i];
    }
    const Shape a(DType::Float32, ldims), b(DType::Float32, rdims);
    const std::string what = fmt::format(
        "trial {}: {} x {} lhs_batch [{}] lhs_contracting [{}] rhs_batch [{}] "
        "rhs_contracting [{}]",
        trial, a.ToString(), b.ToString(), fmt::join(at.lhs_batch, ","), fmt::join(at.lhs_contracting, ","),
        fmt::join(at.rhs_batch, ","), fmt::join(at.rhs_contracting, ","));
    const std::string name = CheckOp(OpType::DotGeneral, a, b, at, terms, rng, what);
    EXPECT_TRUE(IsDnnl(name)) << what << ": " << name;
  }
}

TEST(CpuDnnl, MatmulForms) {
  std::mt19937 rng(11);
  const int64_t m = 67, k = 129, n = 45, bs = 3;
  const auto f32 = [](std::vector<int64_t> d) { return Shape(DType::Float32, std::move(d)); };
  struct Form {
    const char* name;
    Shape a, b;
    std::vector<int64_t> lc, rc, lb, rb;
    int copies;  // 0: no operand is copied, 1: one is (transposed into scratch), 2: either.
  };
  const std::vector<Form> forms = {
      {"plain", f32({m, k}), f32({k, n}), {1}, {0}, {}, {}, 0},
      {"lhs transposed", f32({k, m}), f32({k, n}), {0}, {0}, {}, {}, 0},
      {"rhs transposed", f32({m, k}), f32({n, k}), {1}, {1}, {}, {}, 0},
      {"both transposed", f32({k, m}), f32({n, k}), {0}, {1}, {}, {}, 0},
      {"batched", f32({bs, m, k}), f32({bs, k, n}), {2}, {1}, {0}, {0}, 0},
      {"batch inside", f32({m, bs, k}), f32({k, bs, n}), {2}, {0}, {1}, {1}, 2},
      {"split contraction", f32({m, 3, 43}), f32({43, n, 3}), {1, 2}, {2, 0}, {}, {}, 1},
  };
  for (const Form& f : forms) {
    OpAttributes at;
    at.lhs_contracting = f.lc;
    at.rhs_contracting = f.rc;
    at.lhs_batch = f.lb;
    at.rhs_batch = f.rb;
    const std::string name = CheckOp(OpType::DotGeneral, f.a, f.b, at, k, rng, f.name);
    EXPECT_TRUE(IsDnnl(name)) << f.name << ": " << name;
    if (f.copies != 2) {
      EXPECT_EQ(name.find("(copy)") != std::string::npos, f.copies == 1) << f.name << ": " << name;
    }
  }
}

TEST(CpuDnnl, MatmulPathsByShape) {
  std::mt19937 rng(13);
  const auto f32 = [](std::vector<int64_t> d) { return Shape(DType::Float32, std::move(d)); };
  OpAttributes lhs_t;  // xᵀ·g: contracting the batch axis of both (a weight gradient).
  lhs_t.lhs_contracting = {0};
  lhs_t.rhs_contracting = {0};
  // A narrow weight gradient (a 10-output layer) goes through sgemm.
  std::string name =
      CheckOp(OpType::DotGeneral, f32({256, 512}), f32({256, 10}), lhs_t, 256, rng, "dW 512x10");
  EXPECT_EQ(name.rfind("dnnl.sgemm", 0), 0u) << name;
  // So does one with few rows, and one with a transposed right side.
  name = CheckOp(OpType::DotGeneral, f32({40, 7}), f32({40, 33}), lhs_t, 40, rng, "dW 7x33");
  EXPECT_EQ(name.rfind("dnnl.sgemm", 0), 0u) << name;
  OpAttributes both_t;
  both_t.lhs_contracting = {0};
  both_t.rhs_contracting = {1};
  name = CheckOp(OpType::DotGeneral, f32({30, 50}), f32({9, 30}), both_t, 30, rng, "both transposed");
  EXPECT_EQ(name.rfind("dnnl.sgemm", 0), 0u) << name;
  // A wide one on one thread (a small product) stays with the primitive; on the team of two
  // threads it goes through sgemm, which splits it better.
  name = CheckOp(OpType::DotGeneral, f32({16, 40}), f32({16, 30}), lhs_t, 16, rng, "dW 40x30");
  EXPECT_EQ(name.rfind("dnnl.matmul[", 0), 0u) << name;
  EXPECT_NE(name.find("(1 thread)"), std::string::npos) << name;
  name = CheckOp(OpType::DotGeneral, f32({64, 300}), f32({64, 200}), lhs_t, 64, rng, "dW 300x200");
  EXPECT_EQ(name, "dnnl.sgemm(2 row blocks)");
  // A transposed right side (an input gradient) stays with the primitive on the team, split into
  // blocks of result columns (each thread packs its half of the right side).
  OpAttributes rhs_t;
  rhs_t.lhs_contracting = {1};
  rhs_t.rhs_contracting = {1};
  name = CheckOp(OpType::DotGeneral, f32({64, 200}), f32({300, 200}), rhs_t, 200, rng, "dX 64x300");
  EXPECT_EQ(name.rfind("dnnl.matmul[", 0), 0u) << name;
  EXPECT_NE(name.find("(2 column blocks)"), std::string::npos) << name;
  // With odd columns, a bias and a ReLU (ONNX's Gemm with transB): each block's own bias and
  // columns, ref's values.
  {
    Graph g;
    graph::Node x = g.Parameter(f32({48, 96})), w = g.Parameter(f32({301, 96})), b = g.Parameter(f32({301}));
    graph::Node y =
        graph::MaxScalar(graph::DotGeneral(x, {1}, {}, w, {1}, {}) + graph::Reshape(b, {1, 301}), 0.0f);
    std::shared_ptr<const compute::Program> program = g.Build({y});
    const std::vector<Tensor> inputs = {Random(f32({48, 96}), rng), Random(f32({301, 96}), rng),
                                        Random(f32({301}), rng)};
    std::string dump;
    const std::vector<Tensor> got = RunDumped(program, inputs, dump, "cpu:threads=2,serial_work=0");
    EXPECT_NE(dump.find("(2 column blocks)+post[bias(axis 1), Relu]"), std::string::npos) << dump;
    EXPECT_TRUE(Close(got[0], RunProgram(Ref(), program, inputs)[0], 96));
  }
  // Small products run on the calling thread, large ones on the team (Cpu() has two threads).
  OpAttributes plain;
  plain.lhs_contracting = {1};
  plain.rhs_contracting = {0};
  name = CheckOp(OpType::DotGeneral, f32({2, 128}), f32({128, 128}), plain, 128, rng, "2x128x128");
  EXPECT_NE(name.find("(1 thread)"), std::string::npos) << name;
  name = CheckOp(OpType::DotGeneral, f32({64, 128}), f32({128, 128}), plain, 128, rng, "64x128x128");
  EXPECT_EQ(name.find("(1 thread)"), std::string::npos) << name;
  // A product of 2^32 multiply-adds goes through sgemm whole, on sgemm's own threads (not run:
  // ref would take minutes).
  {
    Graph g;
    graph::Node big =
        g.AddOp(OpType::DotGeneral, {g.Parameter(f32({2048, 1024})), g.Parameter(f32({1024, 2048}))}, plain);
    EXPECT_EQ(KernelNames(Cpu(), *g.Build({big}), OpType::DotGeneral),
              std::vector<std::string>{"dnnl.sgemm"});
    Graph h;
    graph::Node below =
        h.AddOp(OpType::DotGeneral, {h.Parameter(f32({2047, 1024})), h.Parameter(f32({1024, 2048}))}, plain);
    const std::vector<std::string> below_names = KernelNames(Cpu(), *h.Build({below}), OpType::DotGeneral);
    ASSERT_EQ(below_names.size(), 1u);
    EXPECT_EQ(below_names[0].rfind("dnnl.matmul[", 0), 0u) << below_names[0];
    EXPECT_NE(below_names[0].find("(2 row blocks)"), std::string::npos) << below_names[0];
  }
  // Matrix-vector products with large weights: on the calling thread when OpenMP's threads sleep
  // between regions (the wake-up costs more), on the team when it spins (a second core's
  // bandwidth pays).
  name = CheckOp(OpType::DotGeneral, f32({1, 512}), f32({512, 512}), plain, 512, rng, "1x512x512");
  const bool single = 512 * 512 <= compute::cpu::SingleThreadMacs();
  EXPECT_EQ(name.find("(1 thread)") != std::string::npos, single) << name;
  EXPECT_EQ(single, compute::cpu::SingleThreadMacs() == compute::cpu::kSingleThreadMacs);
}

/// A random convolution: forward (possibly cropped) or input-dilated with unit strides.
struct ConvCase {
  Shape x, k;
  OpAttributes at;
  int64_t terms = 1;
  std::string what;
};

/// Draws a valid random convolution with `spatial` spatial axes; `input_dilated` draws the
/// backward-data form.
ConvCase RandomConv(std::mt19937& rng, size_t spatial, bool input_dilated) {
  while (true) {
    ConvCase c;
    OpAttributes& at = c.at;
    compute::ConvDims& d = at.conv;
    const std::vector<int64_t> xp = Place(spatial + 2, rng), kp = Place(spatial + 2, rng),
                               yp = Place(spatial + 2, rng);
    d.input_batch = xp[0];
    d.input_feature = xp[1];
    d.kernel_output_feature = kp[0];
    d.kernel_input_feature = kp[1];
    d.output_batch = yp[0];
    d.output_feature = yp[1];
    const int64_t groups = Pick(rng, 1, 3), cin = Pick(rng, 1, 4), cout = Pick(rng, 1, 4);
    at.feature_groups = groups;
    std::vector<int64_t> xd(spatial + 2), kd(spatial + 2);
    xd[static_cast<size_t>(xp[0])] = Pick(rng, 1, 3);
    xd[static_cast<size_t>(xp[1])] = groups * cin;
    kd[static_cast<size_t>(kp[0])] = groups * cout;
    kd[static_cast<size_t>(kp[1])] = cin;
    const int64_t max_in = spatial == 3 ? 5 : 9;
    bool ok = true;
    c.terms = cin;
    for (size_t i = 0; i < spatial; ++i) {
      d.input_spatial.push_back(xp[2 + i]);
      d.kernel_spatial.push_back(kp[2 + i]);
      d.output_spatial.push_back(yp[2 + i]);
      const int64_t in = Pick(rng, 1, max_in), taps = Pick(rng, 1, 3), dil = Pick(rng, 1, 2);
      const int64_t lhs_dil = input_dilated ? Pick(rng, 2, 3) : 1,
                    stride = input_dilated ? 1 : Pick(rng, 1, 3);
      const int64_t reach = (taps - 1) * dil;
      const int64_t low = input_dilated ? Pick(rng, 0, reach + 1) : Pick(rng, -1, 2);
      const int64_t high = input_dilated ? Pick(rng, 0, reach + 1) : Pick(rng, -1, 2);
      xd[static_cast<size_t>(xp[2 + i])] = in;
      kd[static_cast<size_t>(kp[2 + i])] = taps;
      at.strides.push_back(stride);
      at.kernel_dilations.push_back(dil);
      at.input_dilations.push_back(lhs_dil);
      at.padding.push_back({low, high, 0});
      const int64_t span = (in - 1) * lhs_dil + 1 + low + high - reach;
      if (span < 1 || in + std::min<int64_t>(low, 0) + std::min<int64_t>(high, 0) < 1) ok = false;
      c.terms *= taps;
    }
    if (!ok) continue;
    c.x = Shape(DType::Float32, xd);
    c.k = Shape(DType::Float32, kd);
    c.what = fmt::format(
        "x {} k {} groups {} strides [{}] kernel_dilations [{}] input_dilations [{}] dims in {} {} "
        "[{}] k {} {} [{}] out {} {} [{}] padding",
        c.x.ToString(), c.k.ToString(), groups, fmt::join(at.strides, ","),
        fmt::join(at.kernel_dilations, ","), fmt::join(at.input_dilations, ","), d.input_batch,
        d.input_feature, fmt::join(d.input_spatial, ","), d.kernel_output_feature, d.kernel_input_feature,
        fmt::join(d.kernel_spatial, ","), d.output_batch, d.output_feature, fmt::join(d.output_spatial, ","));
    for (const compute::PadAxis& p : at.padding) c.what += fmt::format(" ({},{})", p.low, p.high);
    return c;
  }
}

TEST(CpuDnnl, RandomForwardConv) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 150; ++trial) {
    const ConvCase c = RandomConv(rng, static_cast<size_t>(1 + trial % 3), false);
    const std::string name = CheckOp(OpType::ConvGeneral, c.x, c.k, c.at, c.terms, rng, c.what);
    EXPECT_TRUE(IsDnnl(name)) << c.what << ": " << name;
  }
}

TEST(CpuDnnl, RandomInputDilatedConv) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 120; ++trial) {
    const ConvCase c = RandomConv(rng, static_cast<size_t>(1 + trial % 3), true);
    const std::string name = CheckOp(OpType::ConvGeneral, c.x, c.k, c.at, c.terms, rng, c.what);
    EXPECT_EQ(name.rfind("dnnl.conv_bwd_data", 0), 0u) << c.what << ": " << name;
  }
}

TEST(CpuDnnl, UnmappedConvsFallBackToRef) {
  std::mt19937 rng(9);
  // Batch groups: the reference kernel runs it, with the same answer.
  OpAttributes at;
  at.conv = {0, 1, {2, 3}, 1, 0, {2, 3}, 0, 1, {2, 3}};
  at.batch_groups = 2;
  std::string name = CheckOp(OpType::ConvGeneral, Shape(DType::Float32, {4, 3, 5, 5}),
                             Shape(DType::Float32, {4, 3, 2, 2}), at, 12, rng, "batch groups");
  EXPECT_EQ(name, "ref");
  // Input dilation with a stride above one.
  at = {};
  at.conv = {0, 1, {2}, 1, 0, {2}, 0, 1, {2}};
  at.input_dilations = {2};
  at.strides = {2};
  name = CheckOp(OpType::ConvGeneral, Shape(DType::Float32, {2, 3, 6}), Shape(DType::Float32, {4, 3, 3}), at,
                 9, rng, "input dilation with stride");
  EXPECT_EQ(name, "ref");
  // Float64 stays with the reference kernel.
  at = {};
  at.lhs_contracting = {1};
  at.rhs_contracting = {0};
  Graph g;
  graph::Node out =
      g.AddOp(OpType::DotGeneral,
              {g.Parameter(Shape(DType::Float64, {3, 4})), g.Parameter(Shape(DType::Float64, {4, 2}))}, at);
  EXPECT_EQ(KernelNames(Cpu(), *g.Build({out}), OpType::DotGeneral), std::vector<std::string>{"ref"});
}

TEST(CpuDnnl, ConvGradientsRunOnDnnl) {
  std::mt19937 rng(13);
  // A channels-last 2-D convolution with stride 2 and both gradients (input: input-dilated
  // backward data; kernel: forward convolution with the adjoint as kernel).
  for (int64_t stride : {1, 2}) {
    for (int64_t pad : {0, 1, 2}) {
      Graph g;
      // (Eight input features: the tap sums take kernel gradients of 1 to 4, conv_tap_sums.h.)
      const Shape xs(DType::Float32, {3, 9, 8, 8}), ks(DType::Float32, {3, 3, 8, 5});
      graph::Node x = g.Parameter(xs), k = g.Parameter(ks);
      OpAttributes at;
      at.conv = {0, 3, {1, 2}, 2, 3, {0, 1}, 0, 3, {1, 2}};
      at.strides = {stride, stride};
      at.padding = {{pad, pad, 0}, {pad, 0, 0}};
      graph::Node y = g.AddOp(OpType::ConvGeneral, {x, k}, at);
      graph::Node adj = g.Parameter(y.shape());
      std::vector<graph::Node> grads = graph::VJP({y}, {adj}, {x, k});
      std::shared_ptr<const compute::Program> program = g.Build({y, grads[0], grads[1]});
      const std::vector<Tensor> inputs = {Random(xs, rng), Random(ks, rng), Random(y.shape(), rng)};
      const std::vector<Tensor> got = RunProgram(Cpu(), program, inputs),
                                want = RunProgram(Ref(), program, inputs);
      const std::string what = fmt::format("stride {} pad {}", stride, pad);
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_TRUE(Close(got[i], want[i], 200)) << what << " output " << i;
      const std::vector<std::string> names = KernelNames(Cpu(), *program, OpType::ConvGeneral);
      ASSERT_EQ(names.size(), 3u) << what;
      for (const std::string& n : names) EXPECT_TRUE(IsDnnl(n)) << what << ": " << n;
      // The kernel gradient runs as oneDNN's backward-weights convolution; with stride 2 the
      // input gradient is input-dilated and runs as its backward-data convolution.
      EXPECT_EQ(names[2].rfind("dnnl.conv_bwd_weights", 0), 0u) << what << ": " << names[2];
      if (stride == 2) {
        EXPECT_EQ(names[1].rfind("dnnl.conv_bwd_data", 0), 0u) << what << ": " << names[1];
      }
    }
  }
}

TEST(CpuDnnl, OneChannelConvsTakeTheDirectKernel) {
  // A convolution of one input channel (a grayscale image's first layer) runs on oneDNN's direct
  // kernel rather than brgconv, which oneDNN lists first where AVX-512 is (and which took a
  // quarter longer there); on other CPUs brgconv is not offered at all. Channels last, strided,
  // cropped, 1-D and 3-D forms agree with ref.
  std::mt19937 rng(29);
  struct Case {
    std::vector<int64_t> x, k;
    compute::ConvDims dims;
    std::vector<int64_t> strides;
    std::vector<compute::PadAxis> padding;
    std::string what;
  };
  const compute::ConvDims nhwc = {0, 3, {1, 2}, 2, 3, {0, 1}, 0, 3, {1, 2}};  // Channels last, 2-D.
  const std::vector<Case> cases = {
      {{8, 28, 28, 1},
       {5, 5, 1, 32},
       nhwc,
       {1, 1},
       {{2, 2, 0}, {2, 2, 0}},
       "28x28, 5x5, 32 features, same padding"},
      {{3, 17, 13, 1}, {3, 3, 1, 20}, nhwc, {2, 2}, {{1, 0, 0}, {0, 1, 0}}, "stride 2, 20 features"},
      {{2, 12, 12, 1}, {3, 3, 1, 16}, nhwc, {1, 1}, {{-1, 0, 0}, {0, -1, 0}}, "cropped"},
      {{4, 1, 40}, {24, 1, 7}, {0, 1, {2}, 1, 0, {2}, 0, 1, {2}}, {1}, {{3, 3, 0}}, "1-D channels first"},
      {{2, 6, 7, 8, 1},
       {3, 3, 3, 1, 16},
       {0, 4, {1, 2, 3}, 3, 4, {0, 1, 2}, 0, 4, {1, 2, 3}},
       {1, 1, 1},
       {{1, 1, 0}, {1, 1, 0}, {1, 1, 0}},
       "3-D"},
  };
  for (const Case& c : cases) {
    OpAttributes at;
    at.conv = c.dims;
    at.strides = c.strides;
    at.padding = c.padding;
    int64_t taps = 1;
    for (int64_t a : c.dims.kernel_spatial) taps *= c.k[static_cast<size_t>(a)];
    const std::string name = CheckOp(OpType::ConvGeneral, Shape(DType::Float32, c.x),
                                     Shape(DType::Float32, c.k), at, taps, rng, c.what);
    EXPECT_EQ(name.rfind("dnnl.conv[", 0), 0u) << c.what << ": " << name;
    EXPECT_EQ(name.find("brgconv"), std::string::npos) << c.what << ": " << name;
  }
  // With a bias and ReLU folded in as oneDNN post-ops.
  Graph g;
  const Shape xs(DType::Float32, {6, 28, 28, 1}), ks(DType::Float32, {5, 5, 1, 32}), bs(DType::Float32, {32});
  graph::Node x = g.Parameter(xs), k = g.Parameter(ks), b = g.Parameter(bs);
  graph::Node y = graph::Convolve(x, k).PadSame().Done() + graph::Reshape(b, {1, 1, 1, 32});
  std::shared_ptr<const compute::Program> program = g.Build({graph::MaxScalar(y, 0.0f)});
  const std::vector<Tensor> inputs = {Random(xs, rng), Random(ks, rng), Random(bs, rng)};
  std::string dump;
  const Tensor got = RunDumped(program, inputs, dump)[0];
  EXPECT_TRUE(Close(got, RunProgram(Ref(), program, inputs)[0], 26));
  EXPECT_NE(dump.find("kernel dnnl.conv["), std::string::npos) << dump;
  EXPECT_NE(dump.find("+post[bias(axis 3), Relu]"), std::string::npos) << dump;
  EXPECT_EQ(dump.find("brgconv"), std::string::npos) << dump;
}

TEST(CpuDnnl, FewFeatureConvsRunAsProductAndShift) {
  // 2-D convolutions of 1-4 output features from 16 or more input features (a first layer's
  // input gradient, a decoder's last layer) run as one sgemm per block of images and a
  // shift-add. Random layouts, sizes, kernel dilations and paddings (cropping ones too), batches
  // of 1-9 (blocks with a remainder) agree with ref; every input layout with features last or
  // planes of positions and a result of at least half the input's positions takes that kernel,
  // others stay on oneDNN.
  std::mt19937 rng(31);
  int shifted = 0;
  for (int trial = 0; trial < 90; ++trial) {
    OpAttributes at;
    compute::ConvDims& d = at.conv;
    // The input channels last, channels first, or in a random layout; kernel and result random.
    const std::vector<int64_t> xp = trial % 3 == 0   ? std::vector<int64_t>{0, 3, 1, 2}
                                    : trial % 3 == 1 ? std::vector<int64_t>{0, 1, 2, 3}
                                                     : Place(4, rng);
    const std::vector<int64_t> kp = Place(4, rng), yp = Place(4, rng);
    d = {xp[0], xp[1], {xp[2], xp[3]}, kp[1], kp[0], {kp[2], kp[3]}, yp[0], yp[1], {yp[2], yp[3]}};
    const int64_t cin = Pick(rng, 16, 40), cout = Pick(rng, 1, 4);
    std::vector<int64_t> xd(4), kd(4);
    xd[static_cast<size_t>(xp[0])] = Pick(rng, 1, 9);
    xd[static_cast<size_t>(xp[1])] = cin;
    kd[static_cast<size_t>(kp[0])] = cout;
    kd[static_cast<size_t>(kp[1])] = cin;
    int64_t terms = cin, in_positions = 1, out_positions = 1;
    bool ok = true;
    for (size_t i = 0; i < 2; ++i) {
      const int64_t in = Pick(rng, 2, 12), taps = Pick(rng, 1, 5), dil = Pick(rng, 1, 2);
      const int64_t low = Pick(rng, -1, 3), high = Pick(rng, -1, 3);
      in_positions *= in;
      out_positions *= std::max<int64_t>(in + low + high - (taps - 1) * dil, 1);
      xd[static_cast<size_t>(xp[2 + i])] = in;
      kd[static_cast<size_t>(kp[2 + i])] = taps;
      at.strides.push_back(1);
      at.kernel_dilations.push_back(dil);
      at.input_dilations.push_back(1);
      at.padding.push_back({low, high, 0});
      if (in + low + high - (taps - 1) * dil < 1) ok = false;
      terms *= taps;
    }
    if (!ok) continue;
    const Shape xs(DType::Float32, xd), ks(DType::Float32, kd);
    const std::string what = fmt::format("x {} k {} trial {}", xs.ToString(), ks.ToString(), trial);
    const std::string name = CheckOp(OpType::ConvGeneral, xs, ks, at, terms, rng, what);
    // The compiled program may see another layout (channels-first data moves to channels last):
    // the kernel itself, on this layout, against ref.
    Graph g;
    graph::Node out = g.AddOp(OpType::ConvGeneral, {g.Parameter(xs), g.Parameter(ks)}, at);
    std::shared_ptr<const compute::Program> program = g.Build({out});
    const compute::Instruction* conv = nullptr;
    for (const compute::Instruction& inst : program->Instructions())
      if (inst.op == OpType::ConvGeneral) conv = &inst;
    ASSERT_NE(conv, nullptr);
    const compute::cpu::KernelChoice kernel = compute::cpu::MakeShiftConv(2, *conv, {xs, ks}, nullptr);
    EXPECT_EQ(kernel.kernel != nullptr, name == "conv.sgemm_shift") << what;
    if (kernel.kernel) {
      const std::vector<Tensor> inputs = {Random(xs, rng), Random(ks, rng)};
      const std::vector<float> xv = inputs[0].ToVector<float>(), kv = inputs[1].ToVector<float>();
      std::vector<float> yv(static_cast<size_t>(conv->shape.Size()), std::nanf(""));
      const uint8_t* operands[2] = {reinterpret_cast<const uint8_t*>(xv.data()),
                                    reinterpret_cast<const uint8_t*>(kv.data())};
      kernel.kernel(operands, reinterpret_cast<uint8_t*>(yv.data()));
      EXPECT_TRUE(Close(Tensor::FromFlat(conv->shape, yv), RunProgram(Ref(), program, inputs)[0], terms))
          << what;
    }
    const bool features_last = xp[1] == 3 && xp[3] == 2 && xp[2] == 1;
    const bool planes = xp[3] == 3 && xp[2] == 2;
    // (An input of more than twice the result's positions stays on oneDNN.)
    if ((features_last || planes) && in_positions <= 2 * out_positions) {
      EXPECT_EQ(name, "conv.sgemm_shift") << what;
    }
    if (name != "conv.sgemm_shift") {
      EXPECT_TRUE(IsDnnl(name)) << what << ": " << name;
    }
    shifted += name == "conv.sgemm_shift" ? 1 : 0;
  }
  EXPECT_GE(shifted, 30);
  // The edges of the rule (ShiftConvPays): 4 features from 16 inputs and 1 from 4 take it; 5
  // features, 2 from 15 inputs, 1 from 3 and a stride of 2 stay on oneDNN.
  const compute::ConvDims nhwc = {0, 3, {1, 2}, 2, 3, {0, 1}, 0, 3, {1, 2}};
  OpAttributes at;
  at.conv = nhwc;
  at.padding = {{1, 1, 0}, {1, 1, 0}};
  for (const auto& [in, out, stride, shift] :
       std::vector<std::tuple<int64_t, int64_t, int64_t, bool>>{{16, 4, 1, true},
                                                                {4, 1, 1, true},
                                                                {32, 5, 1, false},
                                                                {15, 2, 1, false},
                                                                {3, 1, 1, false},
                                                                {32, 1, 2, false}}) {
    at.strides = {stride, stride};
    const Shape x(DType::Float32, {2, 8, 8, in}), k(DType::Float32, {3, 3, in, out});
    const std::string what = fmt::format("{} to {} features, stride {}", in, out, stride);
    const std::string name = CheckOp(OpType::ConvGeneral, x, k, at, 9 * in, rng, what);
    if (shift) {
      EXPECT_EQ(name, "conv.sgemm_shift") << what;
    } else {
      EXPECT_TRUE(IsDnnl(name)) << what << ": " << name;
    }
  }
}

TEST(CpuDnnl, FewFeatureConvsTakeTheEpilogueAndGiveTheSameBitsOnAnyThreads) {
  // A grayscale first layer's input gradient (32 features back to 1) and a decoder's last layer
  // with a bias and ReLU: ref's values, the same bits on one thread, on two (the blocks of images
  // split across the team or an OpenMP region) and without a team.
  std::mt19937 rng(37);
  Graph g;
  const Shape xs(DType::Float32, {11, 28, 28, 1}), ks(DType::Float32, {5, 5, 1, 32});
  const Shape hs(DType::Float32, {11, 14, 14, 24}), ds(DType::Float32, {3, 3, 24, 3}),
      bs(DType::Float32, {3});
  graph::Node x = g.Parameter(xs), k = g.Parameter(ks), h = g.Parameter(hs), dk = g.Parameter(ds),
              b = g.Parameter(bs);
  graph::Node y = graph::Convolve(x, k).PadSame().Done();
  graph::Node adj = g.Parameter(y.shape());
  graph::Node dx = graph::VJP({y}, {adj}, {x})[0];
  graph::Node decoded =
      graph::MaxScalar(graph::Convolve(h, dk).PadSame().Done() + graph::Reshape(b, {1, 1, 1, 3}), 0.0f);
  // The decoder's kernel gradient (a convolution of 3 features whose kernel outgrows its result)
  // stays on oneDNN's backward-weights convolution.
  graph::Node dk_grad = graph::VJP({decoded}, {graph::OnesLike(decoded)}, {dk})[0];
  std::shared_ptr<const compute::Program> program = g.Build({dx, decoded, dk_grad});
  const std::vector<Tensor> inputs = {Random(xs, rng), Random(ks, rng), Random(hs, rng),
                                      Random(ds, rng), Random(bs, rng), Random(y.shape(), rng)};
  std::string dump;
  const std::vector<Tensor> got = RunDumped(program, inputs, dump);
  const std::vector<Tensor> want = RunProgram(Ref(), program, inputs);
  EXPECT_TRUE(Close(got[0], want[0], 800));
  EXPECT_TRUE(Close(got[1], want[1], 216));
  EXPECT_TRUE(Close(got[2], want[2], 11 * 14 * 14));
  EXPECT_NE(dump.find("kernel dnnl.conv_bwd_weights"), std::string::npos) << dump;
  EXPECT_NE(dump.find("kernel conv.sgemm_shift\n"), std::string::npos) << dump;
  EXPECT_NE(dump.find("kernel conv.sgemm_shift+post[bias(axis 3)]"), std::string::npos) << dump;
  // Without the gradient the ReLU folds in too.
  std::shared_ptr<const compute::Program> forward = g.Build({decoded});
  EXPECT_TRUE(Close(RunDumped(forward, inputs, dump)[0], RunProgram(Ref(), forward, inputs)[0], 216));
  EXPECT_NE(dump.find("kernel conv.sgemm_shift+post[bias(axis 3), Relu]"), std::string::npos) << dump;
  for (const char* config : {"cpu:threads=1", "cpu:threads=2,serial_work=0", "cpu:threads=2,team=false"}) {
    const std::vector<Tensor> again = RunProgram(kiln::test::Backend(config), program, inputs);
    for (size_t i = 0; i < got.size(); ++i) {
      const std::vector<float> a = got[i].ToVector<float>(), c = again[i].ToVector<float>();
      EXPECT_EQ(std::memcmp(a.data(), c.data(), a.size() * sizeof(float)), 0) << config << " output " << i;
    }
  }
}

/// Expects a Float32 result computed in half type `half` within one unit in the last place of
/// `half` (relative) of ref's; returns how many elements differ at all (rounding ties).
int64_t ExpectWithinHalfUlp(const Tensor& got, const Tensor& want, DType half, const std::string& what) {
  const double ulp = half == DType::Float16 ? 1.0 / 1024 : 1.0 / 128;
  const std::vector<float> gv = got.ToVector<float>(), wv = want.ToVector<float>();
  EXPECT_EQ(gv.size(), wv.size()) << what;
  int64_t differ = 0;
  for (size_t j = 0; j < std::min(gv.size(), wv.size()); ++j) {
    EXPECT_LE(std::abs(double{gv[j]} - wv[j]), ulp * std::abs(double{wv[j]}) + 1e-6)
        << what << " element " << j;
    differ += gv[j] != wv[j] ? 1 : 0;
  }
  return differ;
}

TEST(CpuDnnl, HalfPrecisionContractionsRunOnDnnl) {
  // Float16 matmuls and convolutions (forward and both gradients) become the Float32 contraction
  // between conversions; BFloat16 ones run on oneDNN's bfloat16 kernels on a CPU with bfloat16
  // instructions, and are widened like Float16 elsewhere. Either way a oneDNN kernel, the same
  // values as ref but for a last-bit tie (ref sums in double, the cpu backend in float32, both
  // round once).
  std::mt19937 rng(17);
  for (DType half : {DType::Float16, DType::BFloat16}) {
    SCOPED_TRACE(DTypeName(half));
    Graph g;
    const Shape as(DType::Float32, {33, 70}), bs(DType::Float32, {70, 20});
    // (Five input features: the tap sums take widened kernel gradients of 1 to 4.)
    const Shape xs(DType::Float32, {2, 9, 9, 5}), ks(DType::Float32, {3, 3, 5, 4});
    graph::Node a = graph::ConvertDType(g.Parameter(as), half),
                b = graph::ConvertDType(g.Parameter(bs), half);
    graph::Node x = graph::ConvertDType(g.Parameter(xs), half),
                k = graph::ConvertDType(g.Parameter(ks), half);
    graph::Node mm = graph::MatMul(a, b);
    graph::Node y = graph::Convolve(x, k).PadSame().Done();
    std::vector<graph::Node> grads = graph::VJP({y}, {graph::OnesLike(y)}, {x, k});
    std::vector<graph::Node> outs;
    for (graph::Node n : {mm, y, grads[0], grads[1]}) outs.push_back(graph::ConvertDType(n, DType::Float32));
    std::shared_ptr<const compute::Program> program = g.Build(outs);
    const std::vector<Tensor> inputs = {Random(as, rng), Random(bs, rng), Random(xs, rng), Random(ks, rng)};
    std::string dump;
    const std::vector<Tensor> got = RunDumped(program, inputs, dump);
    const std::vector<Tensor> want = RunProgram(Ref(), program, inputs);
    for (size_t i = 0; i < got.size(); ++i) {
      const int64_t differ = ExpectWithinHalfUlp(got[i], want[i], half, fmt::format("output {}", i));
      EXPECT_LE(differ * 50, got[i].shape().Size()) << "output " << i;  // ties are rare
    }
    const bool native = half == DType::BFloat16 && compute::cpu::dnnl_util::NativeBFloat16();
    EXPECT_NE(dump.find(fmt::format("{} half-precision contractions widened to Float32", native ? 0 : 4)),
              std::string::npos)
        << dump;
    // The matmul and the three convolutions run on oneDNN (the half kernel's Reverse for the
    // input gradient stays a small reference kernel).
    int dnnl = 0;
    for (size_t at = dump.find("kernel dnnl."); at != std::string::npos;
         at = dump.find("kernel dnnl.", at + 1))
      ++dnnl;
    EXPECT_EQ(dnnl, 4) << dump;
    EXPECT_NE(dump.find("kernel dnnl.conv_bwd_weights"), std::string::npos) << dump;
    if (native) {  // Each a bfloat16 kernel (avx512_core_bf16 here; AMX on CPUs that have it).
      for (const char* kernel :
           {"kernel dnnl.matmul[", "kernel dnnl.conv[", "kernel dnnl.conv_bwd_weights["}) {
        const size_t at = dump.find(kernel);
        ASSERT_NE(at, std::string::npos) << kernel << "\n" << dump;
        const std::string impl = dump.substr(at, dump.find(']', at) - at);
        EXPECT_TRUE(impl.find("bf16") != std::string::npos || impl.find("amx") != std::string::npos) << impl;
      }
    }
  }
}

TEST(CpuDnnl, HalfPrecisionReductionsRunOnFloat32Kernels) {
  // A bias gradient (ReduceSum over the batch), a ReduceMax, max pooling and its gradient
  // (ReduceWindow, SelectAndScatter) in Float16 and BFloat16 run as the Float32 kernels between
  // conversions (BFloat16 pooling on the window kernels' BFloat16 forms, cpu_pool_test.cc), not as
  // reference kernels: the same values as ref to a unit in the last place.
  std::mt19937 rng(31);
  for (DType half : {DType::Float16, DType::BFloat16}) {
    SCOPED_TRACE(DTypeName(half));
    Graph g;
    const Shape ds(DType::Float32, {256, 96}), xs(DType::Float32, {4, 12, 12, 8});
    graph::Node d = graph::ConvertDType(g.Parameter(ds), half);
    graph::Node x = graph::ConvertDType(g.Parameter(xs), half);
    graph::Node pooled = graph::MaxPool(x).Window(2).ChannelsLast().Done();
    graph::Node pool_grad = graph::VJP({pooled}, {pooled}, {x})[0];
    std::vector<graph::Node> outs;
    for (graph::Node n : {graph::ReduceSum(d, {0}), graph::ReduceMax(d, {1}), pooled, pool_grad})
      outs.push_back(graph::ConvertDType(n, DType::Float32));
    std::shared_ptr<const compute::Program> program = g.Build(outs);
    const std::vector<Tensor> inputs = {Random(ds, rng), Random(xs, rng)};
    std::string dump;
    const std::vector<Tensor> got = RunDumped(program, inputs, dump);
    const std::vector<Tensor> want = RunProgram(Ref(), program, inputs);
    for (size_t i = 0; i < got.size(); ++i)
      ExpectWithinHalfUlp(got[i], want[i], half, fmt::format("output {}", i));
    EXPECT_NE(dump.find("half-precision reductions widened to Float32"), std::string::npos) << dump;
    EXPECT_EQ(dump.find("kernel ref"), std::string::npos) << dump;
  }
}

TEST(CpuDnnl, BFloat16MatmulsRunOnBFloat16Instructions) {
  // On a CPU with bfloat16 instructions a BFloat16 DotGeneral is oneDNN's bfloat16 matmul (no
  // conversions): plain, transposed on either side, batched, a matrix-vector product, and a
  // layout oneDNN only takes after a copy. Elsewhere it is widened to Float32 (previous test).
  if (!compute::cpu::dnnl_util::NativeBFloat16()) GTEST_SKIP() << "no bfloat16 instructions on this CPU";
  std::mt19937 rng(29);
  struct Form {
    std::vector<int64_t> a, b;
    std::vector<int64_t> ab, bb, ac, bc;  // batch and contracting axes
  };
  const std::vector<Form> forms = {
      {{37, 70}, {70, 21}, {}, {}, {1}, {0}},         // [M, K] x [K, N]
      {{70, 37}, {70, 21}, {}, {}, {0}, {0}},         // transposed left (weight gradient)
      {{37, 70}, {21, 70}, {}, {}, {1}, {1}},         // transposed right (input gradient)
      {{3, 17, 40}, {3, 40, 9}, {0}, {0}, {2}, {1}},  // batched
      {{1, 300}, {300, 257}, {}, {}, {1}, {0}},       // one row
      {{17, 3, 40}, {40, 3, 9}, {1}, {1}, {2}, {0}},  // batch axis in the middle
  };
  for (const Form& f : forms) {
    const std::string what = fmt::format("[{}] x [{}]", fmt::join(f.a, ","), fmt::join(f.b, ","));
    Graph g;
    const Shape as(DType::Float32, f.a), bs(DType::Float32, f.b);
    OpAttributes at;
    at.lhs_batch = f.ab;
    at.rhs_batch = f.bb;
    at.lhs_contracting = f.ac;
    at.rhs_contracting = f.bc;
    graph::Node out = g.AddOp(OpType::DotGeneral,
                              {graph::ConvertDType(g.Parameter(as), DType::BFloat16),
                               graph::ConvertDType(g.Parameter(bs), DType::BFloat16)},
                              at);
    std::shared_ptr<const compute::Program> program = g.Build({graph::ConvertDType(out, DType::Float32)});
    const std::vector<Tensor> inputs = {Random(as, rng), Random(bs, rng)};
    std::string dump;
    const Tensor got = RunDumped(program, inputs, dump)[0];
    const int64_t differ =
        ExpectWithinHalfUlp(got, RunProgram(Ref(), program, inputs)[0], DType::BFloat16, what);
    EXPECT_LE(differ * 20, got.shape().Size()) << what;  // ties are rare
    EXPECT_NE(dump.find("0 half-precision contractions widened"), std::string::npos) << what << dump;
    // brg:avx512_core_bf16 (or _amx), or gemm:jit (its bfloat16 gemm) for a strided batch; never ref.
    const size_t kernel = dump.find("kernel dnnl.matmul[");
    ASSERT_NE(kernel, std::string::npos) << what << dump;
    const std::string impl = dump.substr(kernel + 19, dump.find(']', kernel) - kernel - 19);
    EXPECT_TRUE(impl.rfind("brg:avx512_core_", 0) == 0 || impl == "gemm:jit") << what << ": " << impl;
  }
}

TEST(CpuDnnl, BFloat16BiasRunsInTheContraction) {
  // A bias added to a BFloat16 matmul or convolution becomes oneDNN's bias argument: products and
  // bias summed in float32 and rounded once, so within half a bfloat16 unit of the float32 sum
  // of the same (bfloat16) values; no separate pass over the result.
  if (!compute::cpu::dnnl_util::NativeBFloat16()) GTEST_SKIP() << "no bfloat16 instructions on this CPU";
  std::mt19937 rng(31);
  for (bool conv : {false, true}) {
    const std::string what = conv ? "convolution" : "matmul";
    const Shape as(DType::Float32, conv ? std::vector<int64_t>{2, 9, 9, 5} : std::vector<int64_t>{37, 70});
    const Shape bs(DType::Float32, conv ? std::vector<int64_t>{3, 3, 5, 16} : std::vector<int64_t>{70, 21});
    const Shape cs(DType::Float32, {conv ? 16 : 21});
    auto build = [&](DType t) {  // The product plus bias in t, from bfloat16 values.
      Graph g;
      auto in = [&](const Shape& s) {
        return graph::ConvertDType(graph::ConvertDType(g.Parameter(s), DType::BFloat16), t);
      };
      graph::Node a = in(as), b = in(bs), bias = in(cs);
      OpAttributes at;
      graph::Node y;
      if (conv) {
        at.conv = {0, 3, {1, 2}, 2, 3, {0, 1}, 0, 3, {1, 2}};
        at.padding = {{1, 1, 0}, {1, 1, 0}};
        y = g.AddOp(OpType::ConvGeneral, {a, b}, at);
      } else {
        at.lhs_contracting = {1};
        at.rhs_contracting = {0};
        y = g.AddOp(OpType::DotGeneral, {a, b}, at);
      }
      std::vector<int64_t> lead = y.shape().Dimensions();
      lead.pop_back();
      y = graph::Add(y, graph::BroadcastPrefix(bias, lead));
      return g.Build({graph::ConvertDType(y, DType::Float32)});
    };
    const std::vector<Tensor> inputs = {Random(as, rng), Random(bs, rng), Random(cs, rng)};
    std::string dump;
    const std::vector<float> got = RunDumped(build(DType::BFloat16), inputs, dump)[0].ToVector<float>();
    const std::vector<float> want = RunProgram(Ref(), build(DType::Float32), inputs)[0].ToVector<float>();
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_LE(std::abs(double{got[i]} - want[i]), std::abs(double{want[i]}) / 256 + 1e-6)
          << what << " at " << i;
    EXPECT_NE(dump.find(conv ? "kernel dnnl.conv[brgconv:avx512_core_bf16]+post[bias(axis 3)]"
                             : "+post[bias(axis 1)]"),
              std::string::npos)
        << what << dump;
    EXPECT_NE(dump.find("epilogue %"), std::string::npos) << what << dump;
  }
}

TEST(CpuDnnl, ConcurrentCalls) {
  std::mt19937 rng(17);
  Graph g;
  const Shape a(DType::Float32, {64, 96}), b(DType::Float32, {96, 80}), xs(DType::Float32, {2, 10, 10, 3}),
      ks(DType::Float32, {3, 3, 3, 8});
  OpAttributes dot;
  dot.lhs_contracting = {1};
  dot.rhs_contracting = {0};
  OpAttributes conv;
  conv.conv = {0, 3, {1, 2}, 2, 3, {0, 1}, 0, 3, {1, 2}};
  graph::Node m = g.AddOp(OpType::DotGeneral, {g.Parameter(a), g.Parameter(b)}, dot);
  graph::Node c = g.AddOp(OpType::ConvGeneral, {g.Parameter(xs), g.Parameter(ks)}, conv);
  std::shared_ptr<const compute::Program> program = g.Build({m, c});
  const std::vector<Tensor> inputs = {Random(a, rng), Random(b, rng), Random(xs, rng), Random(ks, rng)};
  const std::vector<Tensor> want = RunProgram(Ref(), program, inputs);
  std::unique_ptr<compute::Executable> exe = Cpu()->Compile(program);
  std::vector<compute::BufferPtr> buffers;
  for (const Tensor& t : inputs) buffers.push_back(t.DeviceBuffer(Cpu(), 0));
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (size_t t = 0; t < failures.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        std::vector<compute::BufferPtr> out =
            exe->Execute(buffers, std::vector<bool>(buffers.size(), false), 0);
        for (size_t o = 0; o < out.size(); ++o) {
          const Tensor got = Tensor::FromBuffer(Cpu(), 0, program->OutputShape(static_cast<int>(o)), out[o]);
          if (!Close(got, want[o], 96)) ++failures[t];
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

TEST(CpuDnnl, ConstantKernelsAreReorderedOnceAndStayRight) {
  // Convolutions whose kernels are constants keep the kernel in oneDNN's layout after the first
  // call (the kernel's name says so in KILN_CPU_DUMP): later calls, on other inputs and from
  // several threads at once, still match ref.
  std::mt19937 rng(23);
  Graph g;
  const Shape xs(DType::Float32, {2, 8, 10, 10}), ks(DType::Float32, {16, 8, 3, 3}),
      ds(DType::Float32, {16, 1, 3, 3});
  graph::Node x = g.Parameter(xs);
  graph::Node k = graph::Const(g, Random(ks, rng));
  graph::Node d = graph::Const(g, Random(ds, rng));
  graph::Node y = graph::Convolve(x, k).ChannelsFirst().PadSame().Done();
  graph::Node z = graph::Convolve(y, d).ChannelsFirst().ChannelGroupCount(16).PadSame().Done();
  std::shared_ptr<const compute::Program> program = g.Build({z});
  const kiln::test::Dumped compiled = kiln::test::CompileDumped("cpu:threads=2,serial_work=0", program);
  EXPECT_EQ(kiln::test::Occurrences(compiled.dump, "(weights kept)"), 2u) << compiled.dump;
  std::vector<Tensor> inputs;
  for (int i = 0; i < 4; ++i) inputs.push_back(Random(xs, rng));
  std::vector<Tensor> want;
  for (const Tensor& in : inputs) want.push_back(RunProgram(Ref(), program, {in})[0]);
  kiln::test::ExpectConcurrentCallsMatch(*compiled.exe, compiled.backend, program->OutputShape(0), inputs,
                                         want, 72 * 9);
}

TEST(CpuDnnl, LargeTransposesOfFourByteElementsAreReorders) {
  // An attention head split ([B, T, 3, H, D] -> [3, B, H, T, D]) and a [T, H, D] -> [H, T, D]
  // transpose: Float32 (NaN payloads and signed zeros kept: the reorder moves Int32s), Int32 and
  // Uint32 are copied exactly; small ones stay on the reference kernel.
  std::mt19937 rng(31);
  struct Case {
    std::vector<int64_t> dims, perm;
    DType dtype;
  };
  const std::vector<Case> cases = {{{32, 40, 3, 8, 15}, {2, 0, 3, 1, 4}, DType::Float32},
                                   {{64, 40, 8, 15}, {0, 2, 1, 3}, DType::Int32},
                                   {{300, 200}, {1, 0}, DType::Uint32},
                                   {{2, 40, 3, 8, 15}, {2, 0, 3, 1, 4}, DType::Float32}};
  for (const Case& c : cases) {
    const Shape shape(c.dtype, c.dims);
    std::vector<uint32_t> bits(static_cast<size_t>(shape.Size()));
    for (uint32_t& b : bits) b = static_cast<uint32_t>(rng());
    if (c.dtype == DType::Float32) {
      bits[0] = 0x7fc01234u;  // A quiet NaN with a payload.
      bits[1] = 0x80000000u;  // -0.
    }
    std::vector<uint8_t> bytes(bits.size() * 4);
    std::memcpy(bytes.data(), bits.data(), bytes.size());
    const Tensor x = Tensor::FromBytes(shape, bytes);
    Graph g;
    OpAttributes attrs;
    attrs.permutation = c.perm;
    graph::Node out = g.AddOp(OpType::Transpose, {g.Parameter(shape)}, attrs);
    std::shared_ptr<const compute::Program> program = g.Build({out});
    const std::vector<std::string> names = KernelNames(Cpu(), *program, OpType::Transpose);
    ASSERT_EQ(names.size(), 1u);
    EXPECT_EQ(names[0].rfind("dnnl.reorder", 0) == 0, shape.Size() >= compute::cpu::kMinReorderElements)
        << names[0] << " for " << shape;
    const Tensor got = RunProgram(Cpu(), program, {x})[0], want = RunProgram(Ref(), program, {x})[0];
    EXPECT_EQ(got.shape(), want.shape());
    std::vector<uint8_t> got_bytes, want_bytes;
    got.ConstBytes([&](std::span<const uint8_t> b) { got_bytes.assign(b.begin(), b.end()); });
    want.ConstBytes([&](std::span<const uint8_t> b) { want_bytes.assign(b.begin(), b.end()); });
    EXPECT_TRUE(got_bytes == want_bytes) << shape;
  }
}

}  // namespace
}  // namespace kiln
