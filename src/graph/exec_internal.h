#pragma once
// What graph::Exec and model::Exec share: dynamic axes, the checks of a replicated call, and the
// lock of their state.

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kiln/compute/fwd.h"
#include "kiln/core/shape.h"
#include "kiln/core/tensor.h"

namespace kiln::graph::exec_internal {

/// The shapes a graph is built for when `name`'s function is called with inputs of `shapes` and
/// dynamic axes `axes` (per input, one name per axis, "" static; an empty list keeps the input
/// static; `batch` non-empty: axis 0 of every other input of rank >= 1 is the dynamic axis
/// `batch`): those axes made kDynamic and named when `dynamic_backend`, else `shapes` unchanged.
/// Throws kiln::Error when an input's rank contradicts its names or axes of one name differ.
/// Throws kiln::Error when WithDynamicAxes names axes for more inputs than `num_inputs` (-1: any);
/// `what` names the Exec in the message ("exec \"f\"").
void CheckDynamicAxesInputs(const std::string& what, size_t lists, int num_inputs);

/// The checks of CallReplicas: the group has no more devices than `backend`, there is one input
/// list per device, and every device's inputs have device 0's shapes (`shapes_of` checks one list
/// and returns its shapes). Returns device 0's shapes; `what` names the Exec in the messages.
std::vector<Shape> CheckReplicatedCall(
    const std::string& what, const compute::Backend& backend, const compute::ReplicaGroup& group,
    const std::vector<std::vector<Tensor>>& inputs,
    const std::function<std::vector<Shape>(const std::vector<Tensor>&)>& shapes_of);

/// The mutex of an Exec's state, which is held while the Exec's graph function builds a graph:
/// a call of the same Exec from inside that function (which would wait for itself) is a
/// kiln::Error instead.
class StateMutex {
 public:
  /// The mutex, after checking that this thread is not inside the graph function; `what` names
  /// the Exec in the message ("exec \"f\"").
  std::mutex& Checked(const std::string& what);

  /// Marks this thread as running the graph function while it lives (the mutex held).
  class Building {
   public:
    explicit Building(StateMutex& m) : m_(m) { m_.builder_ = std::this_thread::get_id(); }
    ~Building() { m_.builder_ = std::thread::id(); }
    Building(const Building&) = delete;
    Building& operator=(const Building&) = delete;

   private:
    StateMutex& m_;
  };

 private:
  std::mutex mu_;
  std::atomic<std::thread::id> builder_{};
};

std::vector<Shape> DynamicSignature(const std::string& name,
                                    const std::vector<std::vector<std::string>>& axes,
                                    const std::string& batch, const std::vector<Shape>& shapes,
                                    bool dynamic_backend);

}  // namespace kiln::graph::exec_internal
