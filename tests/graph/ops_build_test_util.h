#pragma once
// Helpers shared by the graph frontend ops' build-time tests: parameters, the attributes and
// literals of nodes, counts of primitives in a graph, and the messages of kiln::Errors.

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace kiln::graph::ops_build_test {

using compute::OpType;
inline constexpr DType F32 = DType::Float32;
inline constexpr DType I32 = DType::Int32;

// Runs `fn`, expecting a kiln::Error whose message contains every one of `parts`.
using kiln::test::Throws;

// The message of the kiln::Error `fn` throws ("" and a failure if none).
using kiln::test::ErrorOf;

inline Node P(Graph& g, DType dtype, std::vector<int64_t> dims) {
  return g.Parameter(Shape(dtype, std::move(dims)));
}
inline const compute::OpAttributes& Attrs(Node n) { return n.graph().instruction(n.id()).attrs; }
inline int Count(Graph& g, OpType op) {
  int n = 0;
  for (int id = 0; id < g.NumNodes(); ++id) n += g.instruction(id).op == op ? 1 : 0;
  return n;
}
// The scalar literal of a Constant node, as double.
inline double Literal(Node n) {
  EXPECT_EQ(n.op(), OpType::Constant);
  const Tensor& t = Attrs(n).literal;
  return DispatchDType(t.dtype(), [&](auto zero) {
    using T = decltype(zero);
    return static_cast<double>(static_cast<float>(t.Item<T>()));
  });
}

}  // namespace kiln::graph::ops_build_test
