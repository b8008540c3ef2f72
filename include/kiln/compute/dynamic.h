#pragma once
/// @file
/// Programs with dynamic axes: resolving them for the shapes of one call (Specialize), and the
/// Executable that serves every size of them from one compilation, specialising per concrete
/// signature into a bounded least-recently-used cache (DynamicExecutable).

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <vector>

#include "kiln/compute/backend.h"
#include "kiln/compute/program.h"

namespace kiln::compute {

/// Concrete executables a DynamicExecutable keeps by default (the backends' `dynamic_cache` option).
inline constexpr int kDefaultDynamicCache = 32;

/// True when some instruction of `program` (or of its sub-programs) has a dynamic axis.
bool IsDynamic(const Program& program);

/// The program with every dynamic axis resolved for parameters of the concrete `shapes`: each
/// instruction's shape re-inferred, the shapes its attributes hold (Reshape, BroadcastInDim, Iota)
/// and slices to a dynamic end made concrete. Axes of one name must have one size: a contradiction,
/// a parameter of another dtype or rank, or a static axis of another size is a kiln::Error naming
/// the instruction, its op, the axis and the sizes; nothing runs on a wrong shape.
std::shared_ptr<const Program> Specialize(const Program& program, const std::vector<Shape>& shapes);

/// An Executable for a program with dynamic axes. Each call's input shapes pick a concrete
/// executable: made at the first call of those shapes (Specialize, then `compile`) and cached, the
/// least recently used dropped beyond `max_entries`. Safe from several threads at once.
class DynamicExecutable : public Executable {
 public:
  /// Compiles concrete programs with `compile` (the backend's static compiler).
  using CompileFn = std::function<std::unique_ptr<Executable>(std::shared_ptr<const Program>)>;
  /// Takes the dynamic `program` (verified by the caller), the static compiler and the cache bound.
  DynamicExecutable(std::shared_ptr<const Program> program, CompileFn compile, int max_entries);

  /// Throws kiln::Error: a dynamic program needs its inputs' shapes (ExecuteWithShapes).
  std::vector<BufferPtr> Execute(const std::vector<BufferPtr>& inputs, const std::vector<bool>& donated,
                                 int device) override;
  /// Runs the executable specialised for `shapes`, making it first if needed.
  std::vector<BufferPtr> ExecuteWithShapes(const std::vector<BufferPtr>& inputs,
                                           const std::vector<Shape>& shapes, const std::vector<bool>& donated,
                                           int device, std::vector<Shape>& output_shapes) override;
  /// The dynamic program.
  const Program& program() const override { return *program_; }

  /// Number of concrete executables made so far (each a cache miss).
  int64_t NumSpecializations() const;
  /// Number of concrete executables held now (at most the bound).
  int NumCached() const;

 private:
  struct Entry {
    std::vector<Shape> shapes;
    std::vector<Shape> output_shapes;
    std::unique_ptr<Executable> executable;
  };
  std::shared_ptr<const Entry> Get(const std::vector<Shape>& shapes);

  std::shared_ptr<const Program> program_;
  CompileFn compile_;
  size_t max_entries_;
  mutable std::mutex mu_;
  std::list<std::shared_ptr<const Entry>> lru_;  // Most recently used first.
  int64_t specializations_ = 0;
};

}  // namespace kiln::compute
