// Model state in its smallest form: a variable of a model::Store that a model::Exec reads and
// sets on every call, so the value lives on between calls (and in a checkpoint, when saved).
//
//   counter [calls=3]

#include <kiln/kiln.h>

#include <cstdlib>
#include <iostream>

using namespace kiln;
using namespace kiln::graph;

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 3;
  if (calls < 1) {
    std::cerr << "counter: the number of calls must be at least 1, got " << argv[1] << "\n";
    return 2;
  }
  try {
    compute::BackendPtr backend = compute::New();
    model::Store store;
    // The graph reads /counter (created at 0 on the first build), adds one and sets the result
    // as the variable's new value: model::Exec writes it back to the store after each call.
    model::Exec increment = model::NewExec(backend, store, [](model::Scope scope, Graph& g) {
      model::Variable counter = scope.VariableWithValue("counter", int32_t{0});
      Node next = AddScalar(counter.NodeValue(g), 1);
      counter.SetNodeValue(next);
      return next;
    });
    for (int i = 1; i <= calls; ++i) std::cout << "call " << i << ": " << increment.Call1() << "\n";
    std::cout << "store: " << store.GetVariable("/counter").ToString() << " = "
              << store.GetVariable("/counter").Value().Item<int32_t>() << "\n";
  } catch (const Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
