#pragma once
// Splitting a kernel's independent units of work across the OpenMP team.

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace kiln::compute::cpu {

/// Runs body(first, last) over [0, units): on the calling thread, or, when `parallel`, in
/// contiguous equal ranges across a team of min(threads, units) threads.
template <class B>
void SplitAcrossTeam(int64_t units, int threads, bool parallel, B body) {
  const int team = parallel ? static_cast<int>(std::min<int64_t>(threads, units)) : 1;
  if (team <= 1) {
    body(int64_t{0}, units);
    return;
  }
#pragma omp parallel num_threads(team)
  {
    const int64_t id = omp_get_thread_num(), count = omp_get_num_threads();
    body(units * id / count, units * (id + 1) / count);
  }
}

}  // namespace kiln::compute::cpu
