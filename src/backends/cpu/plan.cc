// The cpu executable's arena plan: first fit over a list of free blocks, in step order.

#include "backends/cpu/plan.h"

#include <algorithm>
#include <map>

namespace kiln::compute::cpu {

namespace {

int64_t Align(int64_t bytes) { return (std::max<int64_t>(bytes, 1) + 63) / 64 * 64; }

/// Free space of the arena: offset -> size, adjacent blocks merged.
class FreeList {
 public:
  /// A block of `size` bytes: the first free one that fits, else grown at the end.
  int64_t Take(int64_t size, int64_t& end) {
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < size) continue;
      const int64_t offset = it->first;
      const int64_t rest = it->second - size;
      free_.erase(it);
      if (rest > 0) free_[offset + size] = rest;
      return offset;
    }
    // Grow: a free block touching the end is extended.
    if (!free_.empty()) {
      auto last = std::prev(free_.end());
      if (last->first + last->second == end) {
        const int64_t offset = last->first;
        free_.erase(last);
        end = offset + size;
        return offset;
      }
    }
    const int64_t offset = end;
    end += size;
    return offset;
  }

  void Give(int64_t offset, int64_t size) {
    auto [it, inserted] = free_.emplace(offset, size);
    (void)inserted;
    auto next = std::next(it);
    if (next != free_.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free_.erase(next);
    }
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free_.erase(it);
      }
    }
  }

 private:
  std::map<int64_t, int64_t> free_;
};

}  // namespace

MemoryPlan MakePlan(const PlanRequest& request) {
  const size_t n = request.bytes.size();
  MemoryPlan plan;
  plan.offset.assign(n, -1);
  const bool any_within = !request.within.empty();
  auto holder = [&](size_t v) {
    const int h = any_within ? request.within[v] : -1;
    return h >= 0 && request.bytes[static_cast<size_t>(h)] >= 0 ? h : -1;
  };
  // A holder lives as long as the values it holds (they come before it: they are its operands).
  std::vector<int> last_use = request.last_use;
  std::vector<bool> holds(n, false);
  for (size_t v = 0; v < n; ++v) {
    const int h = holder(v);
    if (h < 0 || request.bytes[v] < 0) continue;
    const auto hi = static_cast<size_t>(h);
    last_use[hi] = std::max(last_use[hi], last_use[v]);
    holds[hi] = true;
  }
  std::vector<int64_t> block(n, 0);  // Aligned block size held by each value.
  // Whose block may not be given to another value: handed over already, held inside another's
  // block, or holding others.
  std::vector<bool> handed_over(n, false);
  std::vector<std::vector<int>> dies_at(n + 1);  // n: alive to the end (read by an output).
  for (size_t v = 0; v < n; ++v) {
    if (request.bytes[v] >= 0) dies_at[static_cast<size_t>(last_use[v])].push_back(static_cast<int>(v));
  }
  FreeList free;
  int64_t end = 0;
  // Places `v` inside its holder (placing the holder first), or in a block of its own.
  auto place = [&](auto&& self, size_t v) -> void {
    if (plan.offset[v] >= 0) return;
    const int h = holder(v);
    if (h >= 0) {
      const auto hi = static_cast<size_t>(h);
      self(self, hi);
      plan.offset[v] = plan.offset[hi] + request.within_offset[v];
      handed_over[v] = true;  // Frees nothing; never written over.
      ++plan.within;
      return;
    }
    block[v] = Align(request.bytes[v]);
    plan.offset[v] = free.Take(block[v], end);
  };
  for (size_t v = 0; v < n; ++v) {
    if (request.bytes[v] >= 0 && plan.offset[v] < 0) {
      const int64_t size = Align(request.bytes[v]);
      bool placed = false;
      static const std::vector<int> kNone;
      const int writer = request.written_at.empty() || request.written_at[v] < 0 ? static_cast<int>(v)
                                                                                 : request.written_at[v];
      for (int c : holder(v) >= 0 ? kNone : request.in_place[v]) {
        const auto ci = static_cast<size_t>(c);
        if (plan.offset[ci] < 0 || handed_over[ci] || holds[ci] || last_use[ci] != writer) continue;
        if (block[ci] < size) continue;
        plan.offset[v] = plan.offset[ci];
        block[v] = block[ci];
        handed_over[ci] = true;
        ++plan.in_place;
        placed = true;
        break;
      }
      if (!placed) place(place, v);
    }
    for (int d : dies_at[v]) {
      const auto di = static_cast<size_t>(d);
      if (!handed_over[di] && plan.offset[di] >= 0) free.Give(plan.offset[di], block[di]);
    }
  }
  plan.size = end;
  return plan;
}

}  // namespace kiln::compute::cpu
