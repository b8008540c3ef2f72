// DynamicExecutable: one compilation of a program with dynamic axes, specialised per concrete
// signature into a bounded least-recently-used cache.

#include "core/check.h"
#include "kiln/compute/dynamic.h"

namespace kiln::compute {

DynamicExecutable::DynamicExecutable(std::shared_ptr<const Program> program, CompileFn compile,
                                     int max_entries)
    : program_(std::move(program)),
      compile_(std::move(compile)),
      max_entries_(static_cast<size_t>(max_entries)) {
  if (!program_) detail::Throw("DynamicExecutable: null program");
  if (max_entries < 1) detail::Throw("DynamicExecutable: cache bound {} must be at least 1", max_entries);
}

std::vector<BufferPtr> DynamicExecutable::Execute(const std::vector<BufferPtr>&, const std::vector<bool>&,
                                                  int) {
  detail::Throw(
      "Execute: the program has dynamic axes; run it with ExecuteWithShapes and its inputs' shapes");
}

std::shared_ptr<const DynamicExecutable::Entry> DynamicExecutable::Get(const std::vector<Shape>& shapes) {
  std::lock_guard lock(mu_);
  for (auto it = lru_.begin(); it != lru_.end(); ++it) {
    if ((*it)->shapes == shapes) {
      lru_.splice(lru_.begin(), lru_, it);
      return lru_.front();
    }
  }
  // Specialise and compile under the lock: concurrent first calls of one signature make it once.
  auto entry = std::make_shared<Entry>();
  entry->shapes = shapes;
  std::shared_ptr<const Program> concrete = Specialize(*program_, shapes);
  for (size_t i = 0; i < concrete->Outputs().size(); ++i)
    entry->output_shapes.push_back(concrete->OutputShape(static_cast<int>(i)));
  entry->executable = compile_(std::move(concrete));
  ++specializations_;
  lru_.push_front(std::move(entry));
  while (lru_.size() > max_entries_) lru_.pop_back();
  return lru_.front();
}

std::vector<BufferPtr> DynamicExecutable::ExecuteWithShapes(const std::vector<BufferPtr>& inputs,
                                                            const std::vector<Shape>& shapes,
                                                            const std::vector<bool>& donated, int device,
                                                            std::vector<Shape>& output_shapes) {
  std::shared_ptr<const Entry> entry = Get(shapes);
  std::vector<BufferPtr> out = entry->executable->Execute(inputs, donated, device);
  output_shapes = entry->output_shapes;
  return out;
}

int64_t DynamicExecutable::NumSpecializations() const {
  std::lock_guard lock(mu_);
  return specializations_;
}

int DynamicExecutable::NumCached() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(lru_.size());
}

}  // namespace kiln::compute
