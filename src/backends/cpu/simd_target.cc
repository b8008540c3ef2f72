// The cpu backend's SIMD target (simd_target.h).

#include "backends/cpu/simd_target.h"

#include "backends/cpu/hwy_targets.h"  // IWYU pragma: keep (the compiled targets)

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <mutex>

#include "hwy/targets.h"

namespace kiln::compute::cpu {

namespace {

std::mutex gate_mu;
std::condition_variable gate_cv;
int64_t gate_target = 0;  // The target in force (0: Highway's own choice).
int gate_active = 0;      // Scopes alive for it.

}  // namespace

std::vector<SimdTarget> SimdTargets() {
  // Asked once, before any scope can narrow Highway's answer: while another thread's
  // SimdTargetScope forces a target, SupportedAndGeneratedTargets reports that target alone, and
  // a backend configured meanwhile with a better one would be refused. The first scope needs a
  // backend whose `simd=` was checked here, so the first call always sees every target.
  static const std::vector<SimdTarget> targets = [] {
    std::vector<SimdTarget> out;
    // SupportedAndGeneratedTargets lists them from the lowest bit, which Highway gives the best.
    for (int64_t bits : hwy::SupportedAndGeneratedTargets()) {
      std::string name = hwy::TargetName(bits);
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
      if (name == "scalar") name = "hwy_scalar";  // `simd=scalar` is the kernels' non-Highway form.
      out.push_back(SimdTarget{name, bits});
    }
    return out;
  }();
  return targets;
}

SimdTargetScope::SimdTargetScope(int64_t bits) : forced_(bits != 0) {
  if (!forced_) return;
  std::unique_lock lock(gate_mu);
  gate_cv.wait(lock, [&] { return gate_active == 0 || gate_target == bits; });
  if (gate_target != bits) {
    hwy::SetSupportedTargetsForTest(bits);
    gate_target = bits;
  }
  ++gate_active;
}

SimdTargetScope::~SimdTargetScope() {
  if (!forced_) return;
  std::lock_guard lock(gate_mu);
  if (--gate_active == 0) {  // Back to the best target outside forced scopes.
    hwy::SetSupportedTargetsForTest(0);
    gate_target = 0;
    gate_cv.notify_all();
  }
}

}  // namespace kiln::compute::cpu
