// DotGeneral (Float32, or BFloat16 where the CPU has bfloat16 instructions) as a oneDNN matmul on [B, M, K] x
// [B, K, N] -> [B, M, N]. Each operand's batch, free and contracting axes are collapsed into one strided axis
// each where memory allows, so transposed operands run without a copy; otherwise (or when oneDNN only offers
// its reference implementation for the strides) the operand is transposed into per-call scratch first. The
// primitive is created once here; scratch (oneDNN's user scratchpad and the copies) comes from a
// per-thread block, so the kernel may run on several threads at once. A contraction epilogue
// (epilogue.cc) becomes the primitive's bias and post-op. Small products run on the calling
// thread; weight gradients (narrow ones, and all on a team of threads), matrix-vector products,
// products of a few rows and very large products through dnnl_sgemm, where it measured faster
// (UseSgemm). BFloat16 products sum in float32 and round once, as the Float32 product between
// conversions they replace does (widen.cc), at twice its rate (bench/matmul_bench.cc). Products
// split over a team also get one single-threaded primitive (or sgemm call) per block of result
// rows, which a program team (team.h) runs one per thread instead of the multi-threaded call;
// products of too few rows for that, one sgemm call per block of their contraction.

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "backends/cpu/dnnl_common.h"
#include "backends/cpu/dnnl_kernels.h"
#include "backends/cpu/team.h"

namespace kiln::compute::cpu {

namespace {

using namespace dnnl_util;

/// One operand seen as a [B, R, C] matrix stack.
struct OperandView {
  std::vector<int64_t> dims3{1, 1, 1}, strides3{0, 0, 0};
  bool collapsible = true;                       ///< Each group's axes are contiguous in memory.
  std::vector<int64_t> axis_dims, axis_strides;  ///< All axes, group by group (for the copy).
  bool copy = false;                             ///< Transposed into dense scratch per call.
};

/// Collapses `axes` (outermost first) into one axis of size `dim` (their product); false when
/// their strides do not nest (then `stride` is meaningless).
bool Collapse(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
              const std::vector<int64_t>& axes, int64_t& dim, int64_t& stride) {
  dim = 1;
  stride = 0;
  bool nested = true;
  int64_t expected = 0;
  for (size_t i = axes.size(); i-- > 0;) {
    const size_t a = static_cast<size_t>(axes[i]);
    if (dims[a] == 1) continue;
    if (stride == 0) {
      stride = strides[a];
    } else if (strides[a] != expected) {
      nested = false;
    }
    expected = strides[a] * dims[a];
    dim *= dims[a];
  }
  return nested;
}

/// The view of `shape` with axis groups {batch, rows, cols}.
OperandView View(const Shape& shape, const std::vector<std::vector<int64_t>>& groups) {
  OperandView v;
  const std::vector<int64_t>& dims = shape.Dimensions();
  const std::vector<int64_t> strides = DenseStrides(dims);
  for (size_t g = 0; g < 3; ++g) {
    if (!Collapse(dims, strides, groups[g], v.dims3[g], v.strides3[g])) v.collapsible = false;
    for (int64_t a : groups[g]) {
      v.axis_dims.push_back(dims[static_cast<size_t>(a)]);
      v.axis_strides.push_back(strides[static_cast<size_t>(a)]);
    }
  }
  v.copy = !v.collapsible;
  return v;
}

/// Strides of the view as oneDNN should see them: size-1 axes get strides that keep the matrix
/// plain (row- or column-major) so the fast implementations accept it; copies are dense.
std::vector<int64_t> DescStrides(const OperandView& v) {
  if (v.copy) return DenseStrides(v.dims3);
  std::vector<int64_t> s = v.strides3;
  const int64_t rows = v.dims3[1], cols = v.dims3[2];
  if (rows == 1 && cols == 1) {
    s[1] = s[2] = 1;
  } else if (rows == 1) {
    s[1] = s[2] == 1 ? cols : 1;
  } else if (cols == 1) {
    s[2] = s[1] == 1 ? rows : 1;
  }
  if (v.dims3[0] == 1) s[0] = std::max(s[1] * rows, s[2] * cols);
  return s;
}

/// Whether the view is already dense row-major (a copy would change nothing).
bool IsDense(const OperandView& v) { return DescStrides(v) == DenseStrides(v.dims3); }

/// One thread's block of the result on a program team: rows [first, first + rows) of the M axis,
/// or (a column block: `cols` less than the result's columns) `cols` columns of every row.
struct MatmulPart {
  int64_t first = 0, rows = 0, cols = 0;
  dnnl::matmul primitive;  ///< Single-threaded, over the block (not for sgemm plans).
  /// The block's views of the operands, bias and result, and where each starts (elements).
  dnnl::memory::desc src, weights, bias, dst, scratchpad;
  int64_t src_at = 0, weights_at = 0, bias_at = 0, dst_at = 0;
};

/// A block of rows is at least this long (fewer rows: the product is not split by row blocks).
constexpr int64_t kMinPartRows = 16;

/// Everything one call needs; shared by the kernel's copies.
struct MatmulPlan {
  dnnl::matmul primitive;
  dnnl::memory::desc src, weights, bias, dst, scratchpad;
  OperandView lhs, rhs;
  /// Its bias (operand 2) is the matmul's bias; Logistic a post-op, Relu a loop after the call.
  Epilogue epilogue;
  int threads = 1;
  /// Operands', bias's and result's element type: f32, or bf16 (then without an activation).
  dnnl::memory::data_type type = dnnl::memory::data_type::f32;
  /// Runs through dnnl_sgemm instead of the primitive (see UseSgemm), with these arguments.
  bool sgemm = false;
  char trans_a = 'N', trans_b = 'N';
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0;
  /// One block of rows (or of columns) per thread of a team of `threads` (see AddParts), or none.
  std::vector<MatmulPart> parts;
  /// Contraction blocks for a program team of this many threads (see AddContractionBlocks), or 0.
  int k_blocks = 0;
};

/// A product splits its contraction into blocks from this many multiply-adds (a matrix-vector
/// product with 256 KB of weights), with at least kMinBlockDepth terms a block.
constexpr int64_t kMinBlockMacs = int64_t{1} << 16;
constexpr int64_t kMinBlockDepth = 64;

/// A product of at least this many multiply-adds runs through sgemm (UseSgemm).
constexpr int64_t kSgemmMacs = int64_t{1} << 32;
/// So does one of at most this many rows, both sides untransposed, or of at most
/// kMaxFewRowsTransposed with the right side transposed (UseSgemm).
constexpr int64_t kMaxFewRows = 31;
constexpr int64_t kMaxFewRowsTransposed = 4;

/// Whether dnnl_sgemm can run the plan: Float32, one matrix pair, no copies, each side a plain
/// matrix (row- or column-major), and an epilogue of a bias and ReLU at most (applied after the
/// sums: SgemmEpilogue).
bool SgemmRuns(const MatmulPlan& p) {
  if (p.type != dnnl::memory::data_type::f32 || p.lhs.dims3[0] != 1 || p.lhs.copy || p.rhs.copy) return false;
  if (p.epilogue.activation != Activation::kNone && p.epilogue.activation != Activation::kRelu) return false;
  const std::vector<int64_t> ls = DescStrides(p.lhs), rs = DescStrides(p.rhs);
  return (ls[2] == 1 || ls[1] == 1) && (rs[2] == 1 || rs[1] == 1);
}

/// oneDNN's matmul primitive (brgemm) is slow for a transposed left side (x^T·g, a weight
/// gradient): its sgemm is faster there. With a narrow result (the weight gradient of a small
/// output layer) on any number of threads (minimum of 2000 calls, 2 threads: 512x256x10 with A
/// stored [256, 512] 12.1 us through sgemm, 18.2 us through the primitive), and at every size on
/// a team of 2 threads, where the primitive splits such products less well (best of 5 x 20 ms
/// of calls, AMD EPYC with AVX-512: 784x256x512 0.45-0.47 against 0.57 ms, 512x256x512 0.30
/// against 0.36, 784x128x512 0.24 against 0.28-0.29; on one thread they tie within 6%). One
/// unbatched product without an epilogue or copies, transposed on the left. (A transposed right
/// side, g·W^T, is the other way round: the primitive was 9-17% faster.)
///
/// It is slow for matrix-vector products too (one row on the left: a batch of one through a dense
/// layer, a token's step through a language model), which stream the weights once: sgemm reads
/// them at up to twice its rate (bench/lm_bench.cc's Llama at batch 1, weights read per call over
/// matrices that do not fit the caches: 1x768x2048 0.48-0.53 ms through the primitive, 0.33-0.36
/// through sgemm; 1x768x32000 6.3-6.8 ms against 2.9-4.0). One unbatched row, no copies; a bias
/// is added to the sums and a ReLU runs after, as the primitive's epilogue does.
///
/// And it is slower for very large products (kSgemmMacs and up, below).
bool UseSgemm(const MatmulPlan& p) {
  if (!SgemmRuns(p)) return false;
  const std::vector<int64_t> ls = DescStrides(p.lhs), rs = DescStrides(p.rhs);
  const int64_t m = p.lhs.dims3[1];
  if (m == 1) return true;
  // A few rows (a small batch through a dense layer), both sides untransposed: sgemm took 0.55-0.8x
  // the primitive's time at 2-31 rows (medians of 7 x 200 calls, one and two threads, K x N of
  // 3136x512, 784x512 and 512x512: 4x3136x512 123 against 225 us on one thread, 16x784x512 71
  // against 113 us on two).
  if (m <= kMaxFewRows && ls[2] == 1 && rs[2] == 1) return true;
  // With the right side transposed (weights stored [N, K], as ONNX's Gemm with transB has them;
  // an input gradient g·W^T) only up to 4 rows: 2x512x784 25.5 against 73.3 us, 4x512x3136 216
  // against 292 on one thread, but from 8 rows sgemm was slower (16x512x512 141 against 85 us).
  if (m <= kMaxFewRowsTransposed && ls[2] == 1 && rs[1] == 1) return true;
  // Large products: sgemm ran 2048^3 in 36.4-37.5 ms where the primitive took 41.7-43.6 (2
  // threads, AMD EPYC with AVX-512; both plain, as the bench's direct calls time them); at 1024^3
  // and below the primitive was as fast or faster. A bias and a ReLU run after, on the result.
  if (m * p.lhs.dims3[2] * p.rhs.dims3[2] >= kSgemmMacs) return true;
  if (p.epilogue.bias || p.epilogue.activation != Activation::kNone) return false;
  const bool lhs_transposed = ls[1] == 1 && m > 1;
  const bool narrow = p.rhs.dims3[2] <= 16 || m <= 16;
  return lhs_transposed && (narrow || p.threads > 1);
}

/// Fills the sgemm arguments (row-major C = op(A)·op(B)) of a plan SgemmRuns accepts.
void DescribeSgemm(MatmulPlan& p) {
  const std::vector<int64_t> ls = DescStrides(p.lhs), rs = DescStrides(p.rhs);
  p.m = p.lhs.dims3[1];
  p.k = p.lhs.dims3[2];
  p.n = p.rhs.dims3[2];
  const bool lhs_transposed = ls[2] != 1;
  p.trans_a = lhs_transposed ? 'T' : 'N';
  p.lda = std::max<int64_t>(lhs_transposed ? ls[2] : ls[1], 1);
  const bool rhs_transposed = rs[2] != 1;
  p.trans_b = rhs_transposed ? 'T' : 'N';
  p.ldb = std::max<int64_t>(rhs_transposed ? rs[2] : rs[1], 1);
}

/// The axes of a `rank`-axis operand neither batch nor contracting, ascending.
std::vector<int64_t> FreeAxes(int64_t rank, const std::vector<int64_t>& batch,
                              const std::vector<int64_t>& contracting) {
  std::vector<int64_t> free;
  for (int64_t a = 0; a < rank; ++a) {
    if (std::find(batch.begin(), batch.end(), a) == batch.end() &&
        std::find(contracting.begin(), contracting.end(), a) == contracting.end()) {
      free.push_back(a);
    }
  }
  return free;
}

/// The primitive of `p` (its weights, bias and post-ops) from `src` to `dst`: the whole product's
/// or a block of its rows.
dnnl::matmul::primitive_desc DescribeFor(const MatmulPlan& p, const dnnl::memory::desc& src,
                                         const dnnl::memory::desc& dst,
                                         const dnnl::memory::desc* weights = nullptr,
                                         const dnnl::memory::desc* bias = nullptr) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  attr.set_post_ops(ActivationPostOps(p.epilogue));
  const dnnl::memory::desc& w = weights != nullptr ? *weights : p.weights;
  if (!p.epilogue.bias) return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, w, dst), attr, Engine());
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, w, bias != nullptr ? *bias : p.bias, dst), attr,
                                      Engine());
}

/// Creates the primitive for the plan's current copy decisions.
dnnl::matmul::primitive_desc Describe(MatmulPlan& p) {
  p.src = StridedDesc(p.lhs.dims3, DescStrides(p.lhs), p.type);
  p.weights = StridedDesc(p.rhs.dims3, DescStrides(p.rhs), p.type);
  p.dst = StridedDesc({p.lhs.dims3[0], p.lhs.dims3[1], p.rhs.dims3[2]},
                      DenseStrides({p.lhs.dims3[0], p.lhs.dims3[1], p.rhs.dims3[2]}), p.type);
  if (p.epilogue.bias) {
    const int64_t n = p.rhs.dims3[2];
    p.bias = StridedDesc({1, 1, n}, {n, n, 1}, p.type);  // The bias has the operands' type.
  }
  return DescribeFor(p, p.src, p.dst);
}

/// Splits the product into one block of result rows per thread of the team, each a
/// single-threaded primitive (or sgemm call) on its rows: products of one matrix pair, without
/// copies, with at least kMinPartRows rows a block. With the right side transposed (g·W^T, an
/// input gradient; weights stored [N, K]) the primitive's blocks are of result columns instead, at
/// least kMinPartRows a block: each thread then packs half of the right side, not all of it
/// (matmul_dx/256x512x512, 2 threads on a team, four interleaved rounds: 309-315 us against
/// 325-329 in row blocks; 256x784x512 alike; untransposed products were slower in columns,
/// infer/mlp_b256 790-797 against 745-754 us). Leaves `parts` empty otherwise, or when oneDNN
/// only has its reference kernel for a block.
void AddParts(MatmulPlan& p) {
  const int64_t m = p.lhs.dims3[1], k = p.lhs.dims3[2], n = p.rhs.dims3[2];
  if (p.threads <= 1 || p.lhs.dims3[0] != 1 || p.lhs.copy || p.rhs.copy || m < p.threads * kMinPartRows)
    return;
  // A very large product keeps sgemm's own threads, which share the packed right side: as row
  // blocks each thread packed all of it (2048^3 on 2 threads, four interleaved pairs: 320-343
  // GFLOP/s in blocks on a team against 351-381 whole).
  if (p.sgemm && m * k * n >= kSgemmMacs) return;
  const ThreadScope scope(1);
  const std::vector<int64_t> ls = DescStrides(p.lhs), rs = DescStrides(p.rhs),
                             dst_strides = DenseStrides({1, m, n});
  std::vector<MatmulPart> parts(static_cast<size_t>(p.threads));
  const bool columns = !p.sgemm && rs[1] == 1 && rs[2] != 1 && n >= p.threads * kMinPartRows;
  for (int t = 0; t < p.threads; ++t) {
    MatmulPart& part = parts[static_cast<size_t>(t)];
    const int64_t along = columns ? n : m, first = along * t / p.threads;
    const int64_t size = along * (t + 1) / p.threads - first;
    part.first = columns ? 0 : first;
    part.rows = columns ? m : size;
    part.cols = columns ? size : n;
    if (p.sgemm) continue;
    part.src = StridedDesc({1, part.rows, k}, ls, p.type);
    part.weights = StridedDesc({1, k, part.cols}, rs, p.type);
    part.dst = StridedDesc({1, part.rows, part.cols}, dst_strides, p.type);
    if (p.epilogue.bias) part.bias = StridedDesc({1, 1, part.cols}, {part.cols, part.cols, 1}, p.type);
    part.src_at = columns ? 0 : first * ls[1];
    part.weights_at = columns ? first * rs[2] : 0;
    part.bias_at = columns ? first : 0;
    part.dst_at = columns ? first : first * n;
    const dnnl::matmul::primitive_desc pd =
        DescribeFor(p, part.src, part.dst, &part.weights, p.epilogue.bias ? &part.bias : nullptr);
    if (IsReference(pd)) return;
    part.scratchpad = pd.scratchpad_desc();
    part.primitive = dnnl::matmul(pd);
  }
  p.parts = std::move(parts);
}

/// Splits a product of too few rows for row blocks into one block of its contraction per thread
/// of a program team of `team` threads: each block's sums go through a single-threaded sgemm
/// call into the result (the first block) or scratch, are added in block order, and then get
/// the bias and ReLU. A matrix-vector product streams its weights once, and two cores read them
/// at nearly twice one core's rate: the MLP 784-512-512-10 at batch 1 took 24.6 against 41.3 us
/// (sgemm on one thread against its two larger products split in two on a spinning helper,
/// medians of 7 x 4000 calls, 2-core AMD EPYC with AVX-512). Splitting the result's columns
/// instead was slower than one thread (49-53 us): each core then reads every weight row in part.
/// Products of one pair of plain matrices without copies, in Float32, of at least kMinBlockMacs
/// multiply-adds and kMinBlockDepth terms a block, with a bias and ReLU at most.
void AddContractionBlocks(MatmulPlan& p, int team) {
  const int64_t m = p.lhs.dims3[1], k = p.lhs.dims3[2], n = p.rhs.dims3[2];
  if (team <= 1 || !p.parts.empty() || !SgemmRuns(p)) return;
  if (m >= team * kMinPartRows || m * k * n < kMinBlockMacs || k < team * kMinBlockDepth) return;
  DescribeSgemm(p);
  p.k_blocks = team;
}

/// The epilogue of an sgemm plan on rows [c, c + rows * n) of finished sums; `threads` for the
/// ReLU pass.
void SgemmEpilogue(const MatmulPlan& p, ref::Operands in, float* c, int64_t rows, int threads) {
  // The bias is added to the finished sums, as the primitive's bias and a separate Add do
  // (accumulating onto a C that holds it, beta 1, rounds differently: a row's result would then
  // depend on whether it was computed alone).
  if (p.epilogue.bias) {
    Epilogue along_rows = p.epilogue;  // The result seen as [rows, n]: the bias runs along axis 1.
    along_rows.axis = 1;
    const int64_t dims[2] = {rows, p.n};
    ApplyEpilogue(along_rows, dims, reinterpret_cast<const float*>(in[2]), c);
  } else if (p.epilogue.activation == Activation::kRelu) {
    ReluInPlace(c, rows * p.n, threads);
  }
}

/// Rows [first, first + rows) of an sgemm plan's product with its epilogue; `threads` for
/// sgemm's own team and the ReLU pass (OpenMP's current team size: the caller sets it).
void RunSgemmRows(const MatmulPlan& p, ref::Operands in, uint8_t* out, int64_t first, int64_t rows,
                  int threads) {
  const float* a = reinterpret_cast<const float*>(in[0]) + (p.trans_a == 'N' ? first * p.lda : first);
  float* c = reinterpret_cast<float*>(out) + first * p.n;
  const dnnl_status_t status = dnnl_sgemm(p.trans_a, p.trans_b, rows, p.n, p.k, 1.0f, a, p.lda,
                                          reinterpret_cast<const float*>(in[1]), p.ldb, 0.0f, c, p.n);
  if (status != dnnl_success) throw dnnl::error(status, "dnnl_sgemm");
  SgemmEpilogue(p, in, c, rows, threads);
}

/// Runs a plan's contraction blocks on the program team the calling thread leads; false (nothing
/// done) without contraction blocks or such a team.
bool RunContractionBlocks(const MatmulPlan& p, ref::Operands in, uint8_t* out) {
  ProgramTeam* team = ProgramTeam::Current();
  if (p.k_blocks == 0 || team == nullptr || team->size() != p.k_blocks) return false;
  const int64_t mn = p.m * p.n;
  // The lead's scratch, which the blocks' sgemm calls leave alone.
  float* partial =
      reinterpret_cast<float*>(Scratch(sizeof(float) * static_cast<size_t>(mn * (p.k_blocks - 1))));
  float* c = reinterpret_cast<float*>(out);
  const auto* a = reinterpret_cast<const float*>(in[0]);
  const auto* b = reinterpret_cast<const float*>(in[1]);
  team->Run([&](int block, int blocks) {
    const int64_t k0 = p.k * block / blocks, k1 = p.k * (block + 1) / blocks;
    const float* a_block = a + (p.trans_a == 'N' ? k0 : k0 * p.lda);
    const float* b_block = b + (p.trans_b == 'N' ? k0 * p.ldb : k0);
    float* c_block = block == 0 ? c : partial + (block - 1) * mn;
    const dnnl_status_t status = dnnl_sgemm(p.trans_a, p.trans_b, p.m, p.n, k1 - k0, 1.0f, a_block, p.lda,
                                            b_block, p.ldb, 0.0f, c_block, p.n);
    if (status != dnnl_success) throw dnnl::error(status, "dnnl_sgemm");
  });
  for (int block = 1; block < p.k_blocks; ++block) {
    const float* q = partial + (block - 1) * mn;
    for (int64_t i = 0; i < mn; ++i) c[i] += q[i];
  }
  SgemmEpilogue(p, in, c, p.m, 1);
  return true;
}

/// Runs one block of the plan (rows, or columns) on the calling thread.
void RunPart(const MatmulPlan& p, const MatmulPart& part, ref::Operands in, uint8_t* out) {
  if (p.sgemm) {
    RunSgemmRows(p, in, out, part.first, part.rows, 1);
    return;
  }
  const auto element = static_cast<int64_t>(dnnl::memory::data_type_size(p.type));
  const int64_t n = p.rhs.dims3[2];
  uint8_t* dst = out + part.dst_at * element;
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, Wrap(part.src, in[0] + part.src_at * element)},
      {DNNL_ARG_WEIGHTS, Wrap(part.weights, in[1] + part.weights_at * element)},
      {DNNL_ARG_DST, Wrap(part.dst, dst)}};
  if (p.epilogue.bias) args.emplace(DNNL_ARG_BIAS, Wrap(part.bias, in[2] + part.bias_at * element));
  if (part.scratchpad.get_size() > 0)
    args.emplace(DNNL_ARG_SCRATCHPAD, Wrap(part.scratchpad, Scratch(part.scratchpad.get_size())));
  dnnl::stream stream(Engine());
  part.primitive.execute(stream, args);
  stream.wait();
  if (p.epilogue.activation != Activation::kRelu) return;
  if (part.cols == n) {
    ReluInPlace(reinterpret_cast<float*>(dst), part.rows * n, 1);
    return;
  }
  for (int64_t r = 0; r < part.rows; ++r)
    ReluInPlace(reinterpret_cast<float*>(dst + r * n * element), part.cols, 1);
}

/// Runs the plan on one call's operands.
void RunMatmul(const MatmulPlan& p, ref::Operands in, uint8_t* out) {
  if (RunContractionBlocks(p, in, out)) return;
  if (!p.parts.empty()) {
    ProgramTeam* team = ProgramTeam::Current();
    if (team != nullptr && team->size() == static_cast<int>(p.parts.size())) {
      team->Run([&](int id, int) { RunPart(p, p.parts[static_cast<size_t>(id)], in, out); });
      return;
    }
  }
  SetThreads(p.threads);
  if (p.sgemm) {
    RunSgemmRows(p, in, out, 0, p.m, p.threads);
    return;
  }
  ScratchLayout layout;
  const size_t pad = layout.Add(p.scratchpad.get_size());
  const size_t lhs_at = p.lhs.copy ? layout.Add(p.src.get_size()) : 0;
  const size_t rhs_at = p.rhs.copy ? layout.Add(p.weights.get_size()) : 0;
  uint8_t* scratch = Scratch(layout.total);
  const void* lhs = in[0];
  const void* rhs = in[1];
  if (p.lhs.copy) {
    StridedCopy(in[0], p.lhs.axis_dims, p.lhs.axis_strides, p.type, scratch + lhs_at);
    lhs = scratch + lhs_at;
  }
  if (p.rhs.copy) {
    StridedCopy(in[1], p.rhs.axis_dims, p.rhs.axis_strides, p.type, scratch + rhs_at);
    rhs = scratch + rhs_at;
  }
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, Wrap(p.src, lhs)},
                                             {DNNL_ARG_WEIGHTS, Wrap(p.weights, rhs)},
                                             {DNNL_ARG_DST, Wrap(p.dst, out)}};
  if (p.epilogue.bias) args.emplace(DNNL_ARG_BIAS, Wrap(p.bias, in[2]));
  if (p.scratchpad.get_size() > 0) args.emplace(DNNL_ARG_SCRATCHPAD, Wrap(p.scratchpad, scratch + pad));
  dnnl::stream stream(Engine());
  p.primitive.execute(stream, args);
  stream.wait();
  if (p.epilogue.activation == Activation::kRelu)
    ReluInPlace(reinterpret_cast<float*>(out), static_cast<int64_t>(p.dst.get_size() / sizeof(float)),
                p.threads);
}

}  // namespace

KernelChoice MakeDnnlMatmul(int threads, int team, const Instruction& inst,
                            const std::vector<Shape>& operands, const Epilogue* epilogue) {
  const OpAttributes& at = inst.attrs;
  const Shape &lhs = operands.at(0), &rhs = operands.at(1);
  auto plan = std::make_shared<MatmulPlan>();
  plan->lhs =
      View(lhs, {at.lhs_batch, FreeAxes(lhs.Rank(), at.lhs_batch, at.lhs_contracting), at.lhs_contracting});
  plan->rhs =
      View(rhs, {at.rhs_batch, at.rhs_contracting, FreeAxes(rhs.Rank(), at.rhs_batch, at.rhs_contracting)});
  // Empty results and empty sums are left to the reference kernel (nothing to multiply).
  if (inst.shape.Size() == 0 || plan->lhs.dims3[2] == 0) return {};
  const std::optional<dnnl::memory::data_type> type =
      ContractionType(lhs, rhs, inst.shape, epilogue != nullptr && epilogue->activation != Activation::kNone);
  if (!type) return {};
  plan->type = *type;
  if (epilogue != nullptr) {
    plan->epilogue = *epilogue;
    // The bias must run along oneDNN's N axis: the last result axis, the right side's only free one.
    if (epilogue->bias &&
        (epilogue->axis != inst.shape.Rank() - 1 || plan->rhs.dims3[2] != inst.shape.Dimensions().back()))
      return {};
  }
  const int64_t batch = plan->lhs.dims3[0], m = plan->lhs.dims3[1], k = plan->lhs.dims3[2],
                n = plan->rhs.dims3[2];
  const int64_t macs = batch * m * k * n;
  plan->threads = macs <= SingleThreadMacs() ? 1 : threads;
  // Created for the team size it runs with (some implementations split work by it).
  const ThreadScope scope(plan->threads);
  try {
    dnnl::matmul::primitive_desc pd = Describe(*plan);
    if (IsReference(pd) && !(IsDense(plan->lhs) && IsDense(plan->rhs))) {
      // oneDNN's fast paths want plain matrices: transpose the odd ones per call instead.
      plan->lhs.copy = plan->lhs.copy || !IsDense(plan->lhs);
      plan->rhs.copy = plan->rhs.copy || !IsDense(plan->rhs);
      pd = Describe(*plan);
    }
    // A BFloat16 product oneDNN only has a reference kernel for is widened instead (widen.cc).
    if (plan->type == dnnl::memory::data_type::bf16 && IsReference(pd)) return {};
    plan->scratchpad = pd.scratchpad_desc();
    plan->primitive = dnnl::matmul(pd);
    std::string name = "dnnl.matmul[" + ImplName(pd) + "]";
    if (UseSgemm(*plan)) {
      DescribeSgemm(*plan);
      plan->sgemm = true;
      name = "dnnl.sgemm";
    }
    AddParts(*plan);
    AddContractionBlocks(*plan, team);
    if (plan->lhs.copy || plan->rhs.copy) name += "(copy)";
    if (plan->threads == 1 && threads > 1) name += "(1 thread)";
    if (!plan->parts.empty())
      name += fmt::format("({} {} blocks)", plan->parts.size(),
                          plan->parts.front().cols < plan->rhs.dims3[2] ? "column" : "row");
    if (plan->k_blocks > 0) name += fmt::format("({} contraction blocks)", plan->k_blocks);
    if (epilogue != nullptr) name += "+post[" + epilogue->ToString() + "]";
    KernelChoice choice = GuardedDnnlKernel(
        "DotGeneral", std::move(name), plan->threads > 1 && plan->parts.empty() && plan->k_blocks == 0,
        [plan](ref::Operands in, uint8_t* out) { RunMatmul(*plan, in, out); });
    choice.team_work = plan->k_blocks > 0;
    return choice;
  } catch (const dnnl::error&) {
    return {};
  }
}

}  // namespace kiln::compute::cpu
