#pragma once
// The cpu compiler's program: a mutable copy of compute::Program that the passes rewrite
// (dead code, common subexpressions, fusion) before the memory plan and the kernel list.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/compute/program.h"

namespace kiln::compute::cpu {

struct FusedSpec;  // fused_program.h: a group of elementwise ops run as one kernel.

/// The activation a contraction's epilogue applies last.
enum class Activation : uint8_t { kNone, kRelu, kLogistic, kHardSwish };

/// What a DotGeneral or ConvGeneral node computes after its sum (epilogue.cc): a bias added
/// along one result axis, then an activation; the contraction's kernel applies both.
struct Epilogue {
  bool bias = false;  ///< Operand 2, a vector as long as result axis `axis`, is added along it.
  int64_t axis = -1;
  Activation activation = Activation::kNone;
  /// "bias(axis 1), Relu", for listings.
  std::string ToString() const;
};

/// A normalisation over the last axis that the cpu compiler recognised in its written-out form
/// (row_norms.cc) and runs as one kernel per row.
struct RowNorm {
  enum class Kind : uint8_t {
    kSoftmax,    ///< exp(x - max) / sum over the row; operand 0 is x.
    kLayerNorm,  ///< (x - mean) / sqrt(variance + epsilon) [* gamma] [+ beta]; operands x, then
                 ///< gamma and beta when present (vectors as long as the row).
  };
  Kind kind = Kind::kSoftmax;
  float epsilon = 0;
  bool scale = false, shift = false;
  /// "Softmax", "LayerNorm{epsilon=1e-05, scale, shift}", for listings.
  std::string ToString() const;
};

/// A SelectAndScatter whose result a fused node computes piece by piece for one of its inputs
/// instead of reading it (FuseSelectAndScatter, fusion_scatter.cc): the node's operand `input` is
/// the SelectAndScatter's operand, and its source comes after the fused program's inputs.
struct WindowedInput {
  int input = -1;
  Instruction scatter;          ///< The SelectAndScatter (attributes and shape; no operands).
  std::vector<Shape> operands;  ///< The shapes of its operand and source.
};

/// What a node stands for; the fields that go with each kind are set with it.
enum class NodeKind : uint8_t {
  kPrimitive,    ///< One instruction (a contraction may carry an `epilogue`).
  kFused,        ///< A fused elementwise group: `fused` is its program, `inst.operands` its inputs,
                 ///< `inst.shape` its result; `writes` lists the extra results it stores.
  kFusedReduce,  ///< A reduction (`inst.op`) of the values its `fused` program computes from
                 ///< `inst.operands`.
  kWrittenBy,    ///< An extra result of the multi-output kernel of node `written_by`: no
                 ///< operands and no kernel of its own.
  kRowNorm,      ///< A normalisation over the last axis (`row_norm`); `inst.op` is the op of
                 ///< the written-out form's last node.
};

/// One node of the module.
struct Node {
  Instruction inst;
  /// The program of a kFused or kFusedReduce node.
  std::shared_ptr<const FusedSpec> fused;
  /// Set on a contraction that carries an epilogue: `inst.operands` gain the bias after the two
  /// contraction operands and `inst.shape` is the epilogue's result.
  std::shared_ptr<const Epilogue> epilogue = nullptr;
  /// kFused: the values its kernel also writes (node ids, in the order of its spec's extra
  /// results), each a kWrittenBy node.
  std::vector<int> writes = {};
  int written_by = -1;                                ///< kWrittenBy: the node whose kernel writes it.
  std::shared_ptr<const RowNorm> row_norm = nullptr;  ///< kRowNorm: what it computes.
  /// kFused or kFusedReduce: the input it computes from a SelectAndScatter's operands, or null.
  std::shared_ptr<const WindowedInput> windowed = nullptr;
  NodeKind kind = NodeKind::kPrimitive;
  /// A ConvGeneral whose kernel (operand 1) is a Constant (set at the end of CompileModule): its
  /// kernel reorders the weights into oneDNN's layout once, not on every call.
  bool constant_kernel = false;
  /// An AllReduce of Float32 sums whose kernel divides them by this (a mean's division folded
  /// in by FoldMeanIntoAllReduce); 0 when it does not.
  float collective_divisor = 0;
};

struct Module {
  std::vector<Node> nodes;  ///< Topological order; Parameters carry their index in attrs.index.
  std::vector<int> outputs;
  std::vector<bool> donatable;
  /// One line per node ("%3 = Add(%1, %2) : (Float32)[2, 3]", fused groups spelled out).
  std::string ToString() const;
};

Module FromProgram(const Program& program);

/// Appends a node computing `inst` to `nodes`; returns its id.
int AppendNode(std::vector<Node>& nodes, Instruction inst);

/// The scaffolding of passes that insert nodes: rebuilds `m` node by node in order. Each node's
/// operands are renumbered to the rebuilt ids, then `rewrite(node, old_operands, nodes)` may
/// append nodes to `nodes` (the module rebuilt so far) and return the id that stands for the
/// node, or -1 to keep the node as it is. Outputs are renumbered at the end.
using NodeRewrite =
    std::function<int(Node& node, const std::vector<int>& old_operands, std::vector<Node>& nodes)>;
void RebuildModule(Module& m, const NodeRewrite& rewrite);

}  // namespace kiln::compute::cpu
