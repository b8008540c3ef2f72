#pragma once
// What kiln's libFuzzer targets share: a scratch file per process for the readers that take
// paths, and the rule every target checks: any input is read or refused with a kiln::Error;
// anything else (a crash, a sanitizer report, another exception, an allocation beyond
// -rss_limit_mb / -malloc_limit_mb) is a finding.

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "kiln/core/error.h"

namespace kiln::fuzz {

/// Writes the input to this process's scratch file ending in `suffix` and returns its path.
inline std::string WriteScratch(const uint8_t* data, size_t size, const std::string& suffix) {
  const std::string path = "/tmp/kiln_fuzz_" + std::to_string(getpid()) + suffix;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return path;
  if (size > 0) std::fwrite(data, 1, size, f);
  std::fclose(f);
  return path;
}

/// Runs `fn`; a kiln::Error is the expected refusal of bad input, anything else propagates.
template <typename Fn>
void Refused(Fn&& fn) {
  try {
    fn();
  } catch (const kiln::Error&) {
  }
}

}  // namespace kiln::fuzz
