// The cpu backend: registration, options, pooled buffers and capabilities.

#include "backends/cpu/cpu_backend.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "backends/cpu/simd_target.h"
#include "core/check.h"

namespace kiln::compute {

namespace cpu {

CpuBuffer::CpuBuffer(Backend* backend, std::shared_ptr<BufferPool> pool, int64_t bytes, bool zero, int device)
    : Buffer(backend, device, bytes), pool_(std::move(pool)) {
  data_ = pool_->Allocate(bytes);
  if (zero && bytes > 0) std::memset(data_, 0, static_cast<size_t>(bytes));
}

CpuBuffer::CpuBuffer(Backend* backend, uint8_t* memory, int64_t bytes)
    : Buffer(backend, 0, bytes), data_(memory) {}

CpuBuffer::CpuBuffer(Backend* backend, std::shared_ptr<BufferPool> pool, std::shared_ptr<uint8_t> memory,
                     int64_t bytes, int device)
    : Buffer(backend, device, bytes),
      pool_(std::move(pool)),
      adopted_(std::move(memory)),
      data_(adopted_.get()) {
  pool_->CountAdopted(bytes);
}

CpuBuffer::~CpuBuffer() {
  if (adopted_) {
    pool_->ForgetAdopted(ByteSize());
  } else if (pool_) {
    pool_->Release(data_, ByteSize());
  }
}

namespace {

int64_t CheckBytes(int64_t bytes) {
  if (bytes < 0) detail::Throw("backend \"cpu\": negative buffer size {}", bytes);
  return bytes;
}

}  // namespace

bool CompileVectorPrograms(const Options& o) {
  return o.jit && o.simd && (o.simd_target == 0 || o.simd_target == SimdTargets().front().bits);
}

std::string CpuBackend::Description() const {
  std::string target;
  for (const SimdTarget& t : SimdTargets())
    if (t.bits == options_.simd_target) target = ", SIMD target " + t.name;
  const std::string devices =
      options_.devices == 1 ? std::string() : fmt::format("{} devices of ", options_.devices);
  const std::string spin = options_.team_spin_us == kDefaultTeamSpinMicros
                               ? std::string()
                               : fmt::format(", helpers spin {} us", options_.team_spin_us);
  return fmt::format("cpu: optimising compiler, {}{} thread{}{}{}{}{}{}", devices, options_.threads,
                     options_.threads == 1 ? "" : "s", options_.fusion ? "" : ", fusion off",
                     options_.simd ? "" : ", scalar kernels",
                     options_.jit ? "" : ", no compiled vector programs", target, spin);
}

BufferPtr CpuBackend::NewSharedBuffer(int device, int64_t bytes) {
  CheckDevice(device);
  return NewBuffer(CheckBytes(bytes), true, device);
}

BufferPtr CpuBackend::BufferFromHost(int device, const void* data, int64_t bytes) {
  CheckDevice(device);
  std::shared_ptr<CpuBuffer> buffer = NewBuffer(CheckBytes(bytes), false, device);
  if (bytes > 0) std::memcpy(buffer->data(), data, static_cast<size_t>(bytes));
  return buffer;
}

BufferPtr CpuBackend::AdoptHostMemory(int device, std::shared_ptr<uint8_t> memory, int64_t bytes) {
  CheckDevice(device);
  // The kernels assume what the pool hands out: 64-byte alignment (and whole 64-byte blocks,
  // which the caller promises).
  if (!memory || reinterpret_cast<uintptr_t>(memory.get()) % 64 != 0) return nullptr;
  return std::make_shared<CpuBuffer>(this, pool_, std::move(memory), CheckBytes(bytes), device);
}

void CpuBackend::BufferToHost(const Buffer& buffer, void* dst) {
  const CpuBuffer* b = AsCpuBuffer(buffer);
  if (b == nullptr) detail::Throw("backend \"cpu\": BufferToHost given a buffer of another backend");
  if (buffer.ByteSize() > 0) std::memcpy(dst, b->data(), static_cast<size_t>(buffer.ByteSize()));
}

const BackendCapabilities& CpuBackend::Capabilities() const {
  static const BackendCapabilities caps = [] {
    BackendCapabilities c;
    for (DType d : kAllDTypes) c.dtypes.push_back(d);
    c.ops = AllOps();
    c.dynamic_shapes = DynamicShapes::Native;
    return c;
  }();
  return caps;
}

std::unique_ptr<Executable> CpuBackend::Compile(std::shared_ptr<const Program> program) {
  if (!program) detail::Throw("backend \"cpu\": Compile given a null program");
  program->Verify();
  if (IsDynamic(*program)) {
    // One compilation for every size: each input signature is specialised (sizes resolved and
    // checked), then compiled, at its first call; kernels, oneDNN primitives, thread gates and
    // the memory plan are made for those sizes and cached.
    return std::make_unique<DynamicExecutable>(
        std::move(program),
        [this](std::shared_ptr<const Program> p) { return CompileCpu(this, std::move(p)); },
        options_.dynamic_cache);
  }
  return CompileCpu(this, std::move(program));
}

std::shared_ptr<CpuBuffer> CpuBackend::NewBuffer(int64_t bytes, bool zero, int device) {
  return std::make_shared<CpuBuffer>(this, pool_, CheckBytes(bytes), zero, device);
}

const CpuBuffer* CpuBackend::AsCpuBuffer(const Buffer& buffer) const {
  if (buffer.backend() != this) return nullptr;
  return dynamic_cast<const CpuBuffer*>(&buffer);
}

}  // namespace cpu

namespace {

/// The default thread count: OpenMP's, except in a process that mpirun started alongside others
/// on this node without $OMP_NUM_THREADS, which takes its share of the cores (cores divided by
/// the node's processes, at least 1), so that the processes do not oversubscribe the machine.
int DefaultThreads() {
  const int threads = omp_get_max_threads();
  if (std::getenv("OMP_NUM_THREADS") != nullptr) return threads;
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    const char* v = std::getenv(name);
    if (v == nullptr) continue;
    char* end = nullptr;
    const long local = std::strtol(v, &end, 10);
    if (end != v && *end == '\0' && local > 1) return std::max(1, threads / static_cast<int>(local));
  }
  return threads;
}

/// "avx2, emu128": the SIMD targets this CPU runs, best first.
std::string SimdTargetNames() {
  std::string names;
  for (const cpu::SimdTarget& t : cpu::SimdTargets()) names += (names.empty() ? "" : ", ") + t.name;
  return names;
}

std::string SimdOptionText() {
  return "auto (default: the best SIMD target), scalar (the kernels' scalar forms), or one of the SIMD "
         "targets this "
         "CPU runs: " +
         SimdTargetNames();
}

}  // namespace

BackendInfo CpuBackendInfo() {
  std::vector<std::string> variants;
  const std::vector<cpu::SimdTarget> targets = cpu::SimdTargets();
  for (size_t i = 1; i < targets.size(); ++i) variants.push_back("cpu:simd=" + targets[i].name);
  return {
      "cpu",
      "optimising CPU compiler: fused SIMD kernels, oneDNN matmul and convolution, a memory plan per "
      "executable",
      {{"threads",
        "threads in all (default: OpenMP's count, $OMP_NUM_THREADS or the cores; under mpirun the cores "
        "divided by the processes on the node)"},
       {"devices", "devices the threads are split into, each with its own team (default 1)"},
       {"fusion", "true (default) or false: fuse chains of elementwise ops into one kernel"},
       {"simd", SimdOptionText()},
       {"jit",
        "true (default) or false: on AVX-512, a fused elementwise kernel whose ops all have a compiled form "
        "(Add, Sub, Mul, Div, Max, Min, Neg, Abs, Sqrt, Exp, Logistic, the Float16 and BFloat16 roundings, "
        "the comparisons, Where) runs as machine code generated for it; false runs every kernel's program "
        "through the interpreter (the same bits)"},
       {"serial_work",
        "programs with less work than this per sizeable kernel (multiply-adds plus elements; default "
        "8388608 under OMP_WAIT_POLICY=PASSIVE, else 524288; 0: none) run on the calling thread"},
       {"team",
        "true (default) or false: a program whose kernels all split their work through kiln (products, "
        "fused kernels, reductions, Adam), on several threads or with matrix-vector products, runs each "
        "execution on a team: the calling thread and kiln's own helper threads, which spin between kernels "
        "and executions instead of waking an OpenMP team for each"},
       {"team_spin",
        fmt::format(
            "microseconds a team's helper threads spin after a kernel's work before they sleep "
            "(default {}, at most {}; 0: they sleep at once and each kernel wakes them): longer keeps "
            "them ready across gaps between executions, shorter gives the cores back sooner",
            cpu::kDefaultTeamSpinMicros, cpu::kMaxTeamSpinMicros)},
       {"winograd",
        "true (default) or false: 2-D Float32 convolutions with 5x5 kernels, unit strides and features in "
        "multiples of 16 (and their gradients) run as Winograd's F(4x4, 5x5), about a fifth of the "
        "multiply-adds of a direct convolution; false runs them on oneDNN's direct kernels (results differ "
        "by rounding; a NaN or infinity in the input can reach the other results of its 4x4 tile)"},
       {"int8_activations",
        "true (default) or false: quantized products (Int8 weights, ggml Q4_0 and Q8_0) at few rows of x "
        "quantize x to int8 in blocks of 32, as ggml does, and run integer dot products; false keeps x in "
        "float"},
       {"dynamic_cache",
        "concrete executables a program with dynamic axes keeps, one per input signature (default 32)"}},
      variants};
}

BackendPtr NewCpuBackend(BackendOptions& options) {
  cpu::Options o;
  const int threads = options.TakeInt("threads", std::min(DefaultThreads(), 4096));
  // (More is a mistake: each thread that leads a program team starts threads-1 helpers, team.h.)
  if (threads < 1 || threads > 4096)
    detail::Throw("backend \"cpu\": threads={} must be at least 1 and at most 4096", threads);
  o.devices = options.TakeInt("devices", 1);
  if (o.devices < 1 || o.devices > threads)
    detail::Throw("backend \"cpu\": devices={} must be between 1 and the threads ({}); each device needs one",
                  o.devices, threads);
  o.threads = threads / o.devices;
  o.fusion = options.TakeBool("fusion", true);
  const std::string simd = options.TakeString("simd", "auto");
  o.simd = simd != "scalar";
  if (simd != "auto" && simd != "scalar") {
    const std::vector<cpu::SimdTarget> targets = cpu::SimdTargets();
    const auto it = std::find_if(targets.begin(), targets.end(),
                                 [&](const cpu::SimdTarget& t) { return t.name == simd; });
    if (it == targets.end())
      detail::Throw("backend \"cpu\": simd={} is not one of auto, scalar or a SIMD target this CPU runs ({})",
                    simd, SimdTargetNames());
    o.simd_target = it->bits;
  }
  o.jit = options.TakeBool("jit", true);
  o.serial_work = options.TakeInt("serial_work", static_cast<int>(cpu::DefaultSerialWork()));
  if (o.serial_work < 0) detail::Throw("backend \"cpu\": serial_work={} must be at least 0", o.serial_work);
  o.team = options.TakeBool("team", true);
  o.team_spin_us = options.TakeInt("team_spin", cpu::kDefaultTeamSpinMicros);
  if (o.team_spin_us < 0 || o.team_spin_us > cpu::kMaxTeamSpinMicros)
    detail::Throw("backend \"cpu\": team_spin={} must be between 0 and {} microseconds", o.team_spin_us,
                  cpu::kMaxTeamSpinMicros);
  o.winograd = options.TakeBool("winograd", true);
  o.int8_activations = options.TakeBool("int8_activations", true);
  o.dynamic_cache = options.TakeInt("dynamic_cache", kDefaultDynamicCache);
  if (o.dynamic_cache < 1)
    detail::Throw("backend \"cpu\": dynamic_cache={} must be at least 1", o.dynamic_cache);
  // Set and not "0" in the environment.
  auto flag = [](const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr && std::string(v) != "0" && std::string(v) != "";
  };
  o.dump = flag("KILN_CPU_DUMP");
  o.profile = flag("KILN_CPU_PROFILE");
  return std::make_shared<cpu::CpuBackend>(o);
}

}  // namespace kiln::compute
