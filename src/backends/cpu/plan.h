#pragma once
// The memory plan of a cpu executable: every intermediate value gets an offset in one arena,
// reusing the space of values that died before it (and, for elementwise ops, the space of an
// operand whose last use it is: in-place execution). A value may also be placed inside another's
// block (an operand of a concatenation computed where the concatenation will hold it).

#include <cstdint>
#include <vector>

namespace kiln::compute::cpu {

struct PlanRequest {
  /// Per value (in step order): bytes, or -1 for values not placed in the arena.
  std::vector<int64_t> bytes;
  /// Per value: the last step reading it (its own step when unused; the number of values when it
  /// must live to the end).
  std::vector<int> last_use;
  /// Per value: arena values whose block it may take over when this step is their last use
  /// (elementwise ops writing over an operand of the same size).
  std::vector<std::vector<int>> in_place;
  /// Per value (or empty for none): the later step whose kernel writes it (an extra result of a
  /// multi-output kernel, placed at its own earlier step), or -1 when its own step does. Its
  /// in_place candidates are values whose last use is that step.
  std::vector<int> written_at;
  /// Per value (or empty for none): the value whose block holds it, at byte `within_offset` of
  /// that block, or -1 (a block of its own). The holder's block is taken when its first held
  /// value is written and lives until the holder and every value it holds are dead; a held value
  /// frees nothing and is never written over in place, and a holder is never written over in
  /// place either. Holders may themselves be held.
  std::vector<int> within;
  std::vector<int64_t> within_offset;
};

struct MemoryPlan {
  std::vector<int64_t> offset;  ///< Per value; -1 when not in the arena.
  int64_t size = 0;             ///< Arena bytes.
  int in_place = 0;             ///< Values written over an operand.
  int within = 0;               ///< Values placed inside another's block.
};

/// First-fit placement in step order with freed blocks merged; 64-byte aligned blocks.
MemoryPlan MakePlan(const PlanRequest& request);

}  // namespace kiln::compute::cpu
