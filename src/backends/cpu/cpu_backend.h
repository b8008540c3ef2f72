#pragma once
// The fast CPU backend ("cpu"): compiles a Program through cleanup, fusion and memory-planning
// passes into a flat list of kernel calls (fast kernels where there is one, the reference
// kernels otherwise). The host's memory, buffers from a caching pool; `devices=N` splits the
// threads into N devices, each running executions on its own thread team.

#include <cstdint>
#include <memory>
#include <string>

#include "backends/cpu/buffer_pool.h"
#include "backends/cpu/cost_model.h"
#include "backends/cpu/team.h"
#include "compute/registry.h"
#include "kiln/compute/dynamic.h"

namespace kiln::compute {

BackendInfo CpuBackendInfo();
BackendPtr NewCpuBackend(BackendOptions& options);

namespace cpu {

/// The backend's switches ("cpu:threads=2,fusion=false,simd=scalar").
struct Options {
  int threads = 1;     ///< Threads a kernel may use (OpenMP team size) on each device.
  int devices = 1;     ///< Devices (`devices=N`): each runs executions with its own team of `threads`.
  bool fusion = true;  ///< Fuse elementwise chains (false: one kernel per op).
  bool simd = true;    ///< SIMD kernels (false: their scalar form, `simd=scalar`).
  /// Fused elementwise kernels' vector programs compiled to machine code on AVX-512
  /// (vprogram_jit.h; `jit=false`: the interpreter runs every program).
  bool jit = true;
  /// 2-D convolutions with 5x5 kernels and features in multiples of 16 run as Winograd's F(4x4,
  /// 5x5) (conv_winograd.h; `winograd=false`: oneDNN's direct convolutions, which round each
  /// result's sum of products as a direct sum).
  bool winograd = true;
  /// Quantized products at few rows of x quantize x to int8 for integer dot products, as ggml
  /// does (`int8_activations=false`: x stays float; int8_dot.h).
  bool int8_activations = true;
  /// The Highway target the SIMD kernels run on (`simd=avx2`...; simd_target.h), 0: the best.
  int64_t simd_target = 0;
  bool dump = false;  ///< Print the optimised program and the fusion decisions ($KILN_CPU_DUMP).
  /// Time every step of every execution; each executable prints its table when destroyed
  /// ($KILN_CPU_PROFILE).
  bool profile = false;
  /// Programs with less work (multiply-adds plus elements, see ProgramWork) per sizeable kernel
  /// run every kernel on the calling thread (`serial_work=N`; 0: never; the backend's default is
  /// DefaultSerialWork(), which follows OpenMP's wait policy).
  int64_t serial_work = kSmallProgramWork;
  /// Programs whose kernels all split through kiln (team.h), on several threads or with
  /// matrix-vector products, run each execution on a team: the calling thread and kiln's own
  /// helper threads (`team=false`: each kernel opens its own OpenMP region).
  bool team = true;
  /// Microseconds a team's helpers spin after a job before they sleep (`team_spin=N`; 0: they
  /// sleep at once, and each job wakes them).
  int team_spin_us = kDefaultTeamSpinMicros;
  /// Concrete executables a program with dynamic axes keeps, one per input signature, the least
  /// recently used dropped first (`dynamic_cache=N`).
  int dynamic_cache = kDefaultDynamicCache;
};

/// Whether fused kernels made under `o` compile their vector programs (vprogram_jit.h): `jit`, SIMD
/// kernels, and the best target (the compiled code is AVX-512's; on another target the kernels
/// run that target's forms).
bool CompileVectorPrograms(const Options& o);

/// The size of the program team (team.h) a program of the backend may run on: its threads, or 1
/// with `team=false`.
inline int TeamThreads(const Options& o) { return o.team ? o.threads : 1; }

/// Host memory from the backend's pool; shared with tensors. (Or a view of memory owned
/// elsewhere, made only for the duration of one call.)
class CpuBuffer final : public Buffer {
 public:
  CpuBuffer(Backend* backend, std::shared_ptr<BufferPool> pool, int64_t bytes, bool zero, int device = 0);
  /// A view of `bytes` of memory the buffer does not own (an execution's value handed to a
  /// tuple op for the length of the call; see cpu_executable.cc).
  CpuBuffer(Backend* backend, uint8_t* memory, int64_t bytes);
  /// A buffer that took host memory over (CpuBackend::AdoptHostMemory): it keeps `memory` alive
  /// instead of a block of the pool, and counts in the pool's usage while it lives.
  CpuBuffer(Backend* backend, std::shared_ptr<BufferPool> pool, std::shared_ptr<uint8_t> memory,
            int64_t bytes, int device);
  ~CpuBuffer() override;
  void* HostData() const override { return data_; }
  uint8_t* data() const { return data_; }
  /// False for a view of memory it does not own.
  bool OwnsMemory() const { return pool_ != nullptr; }

 private:
  std::shared_ptr<BufferPool> pool_;
  std::shared_ptr<uint8_t> adopted_;  ///< Set for taken-over host memory (not the pool's).
  uint8_t* data_;
};

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(Options options) : options_(options) {}

  std::string Name() const override { return "cpu"; }
  std::string Description() const override;
  int NumDevices() const override { return options_.devices; }
  bool HasSharedBuffers() const override { return true; }

  BufferPtr NewSharedBuffer(int device, int64_t bytes) override;
  BufferPtr BufferFromHost(int device, const void* data, int64_t bytes) override;
  BufferPtr AdoptHostMemory(int device, std::shared_ptr<uint8_t> memory, int64_t bytes) override;
  void BufferToHost(const Buffer& buffer, void* dst) override;

  const BackendCapabilities& Capabilities() const override;
  std::unique_ptr<Executable> Compile(std::shared_ptr<const Program> program) override;

  MemoryUsage MemoryStats() const override { return pool_->Usage(); }
  void ResetPeakMemory() override { pool_->ResetPeak(); }

  const Options& options() const { return options_; }
  BufferPool& pool() { return *pool_; }
  /// A buffer for an execution's result on `device` (not zero-filled unless `zero`).
  std::shared_ptr<CpuBuffer> NewBuffer(int64_t bytes, bool zero = false, int device = 0);
  /// `buffer` as a CpuBuffer of this backend, or nullptr when it belongs to another one.
  const CpuBuffer* AsCpuBuffer(const Buffer& buffer) const;

 private:
  Options options_;
  std::shared_ptr<BufferPool> pool_ = std::make_shared<BufferPool>();
};

/// Compiles a verified program for `backend` (cpu_executable.cc).
std::unique_ptr<Executable> CompileCpu(CpuBackend* backend, std::shared_ptr<const Program> program);

}  // namespace cpu
}  // namespace kiln::compute
