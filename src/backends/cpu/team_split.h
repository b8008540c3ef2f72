#pragma once
// Splitting a kernel's independent units of work across the program team or an OpenMP team.

#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "backends/cpu/team.h"

namespace kiln::compute::cpu {

/// Runs body(first, last) over [0, units): on the calling thread, or, when `parallel`, in
/// contiguous equal ranges across a team of min(threads, units) threads: the program team the
/// calling thread leads (team.h) where there is one, else an OpenMP parallel region. Inside a
/// part of a program team's job it runs on the calling thread.
template <class B>
void SplitAcrossTeam(int64_t units, int threads, bool parallel, B body) {
  const int team =
      parallel && !ProgramTeam::InPart() ? static_cast<int>(std::min<int64_t>(threads, units)) : 1;
  if (team <= 1) {
    body(int64_t{0}, units);
    return;
  }
  // Member `id` of `count` takes the id-th equal range (none when there are more members than units).
  const auto range = [&](int64_t id, int64_t count) {
    const int64_t first = units * id / count, last = units * (id + 1) / count;
    if (first < last) body(first, last);
  };
  if (ProgramTeam* program_team = ProgramTeam::Current()) {
    program_team->Run(range);
    return;
  }
#pragma omp parallel num_threads(team)
  range(omp_get_thread_num(), omp_get_num_threads());
}

}  // namespace kiln::compute::cpu
