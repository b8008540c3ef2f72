#pragma once
// Splitting a kernel's independent units of work across the program team or an OpenMP team.

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

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

/// Partial sums by fixed chunks: fill(chunk, part) for chunks [0, chunks) split across the team
/// as SplitAcrossTeam does, each part (`floats` floats at parts + chunk * floats) zeroed first;
/// then every part added into the first, in chunk order. The sums depend on the chunks alone, not
/// on the threads: the same bits on any team.
template <class F>
void SumChunksAcrossTeam(int64_t chunks, int64_t floats, int threads, bool parallel, float* parts, F fill) {
  SplitAcrossTeam(chunks, threads, parallel, [&](int64_t first, int64_t last) {
    for (int64_t chunk = first; chunk < last; ++chunk) {
      float* part = parts + chunk * floats;
      std::memset(part, 0, sizeof(float) * static_cast<size_t>(floats));
      fill(chunk, part);
    }
  });
  for (int64_t chunk = 1; chunk < chunks; ++chunk) {
    const float* part = parts + chunk * floats;
    for (int64_t i = 0; i < floats; ++i) parts[i] += part[i];
  }
}

}  // namespace kiln::compute::cpu
