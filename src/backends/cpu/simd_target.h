#pragma once
// The SIMD target the cpu backend's Highway kernels run on (`cpu:simd=avx2`...). Highway
// dispatches per process, so a backend with a target of its own runs its executions under a
// SimdTargetScope: scopes of one target run together, scopes of different targets take turns,
// and outside every forced scope the kernels run on the best target the CPU has. Executions
// without a target of their own take no turn: they run on the target in force, normally the
// best (every target computes the same bits; only the speed differs).

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::compute::cpu {

/// A Highway target this build compiled and this CPU runs.
struct SimdTarget {
  std::string name;  ///< As `cpu:simd=` takes it: "avx3", "avx2", "emu128", "hwy_scalar"...
  int64_t bits = 0;  ///< Highway's target bit.
};

/// The targets the kernels can run on here, best first.
std::vector<SimdTarget> SimdTargets();

/// While it lives, this process's Highway kernels dispatch to `bits` (0: no target of its own;
/// the scope does nothing). A scope of another target waits until every scope of this one has
/// ended; within one thread, scopes nest only with the same target.
class SimdTargetScope {
 public:
  explicit SimdTargetScope(int64_t bits);
  ~SimdTargetScope();
  SimdTargetScope(const SimdTargetScope&) = delete;
  SimdTargetScope& operator=(const SimdTargetScope&) = delete;

 private:
  bool forced_;
};

}  // namespace kiln::compute::cpu
