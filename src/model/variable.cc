// model::Variable: value access, the trainable flag, and its node in a graph being built.

#include "core/check.h"
#include "kiln/compute/backend.h"
#include "kiln/graph/ops.h"
#include "model/model_internal.h"

namespace kiln::model {

namespace {

detail::VariableData& Data(const std::shared_ptr<detail::VariableData>& d) {
  if (!d) kiln::detail::Throw("Variable: use of an invalid (default-constructed) handle");
  return *d;
}

}  // namespace

const std::string& Variable::Path() const { return Data(data_).path; }

std::string Variable::Name() const {
  const std::string& p = Path();
  return p.substr(p.rfind('/') + 1);
}

std::string Variable::ScopePath() const {
  const std::string& p = Path();
  const size_t slash = p.rfind('/');
  return slash == 0 ? "/" : p.substr(0, slash);
}

const Shape& Variable::shape() const { return Data(data_).shape; }

Tensor Variable::Value() const {
  detail::VariableData& d = Data(data_);
  std::shared_ptr<detail::StoreData> s = detail::StoreOf(d);
  if (d.pending) Store(s).InitializeVariables(compute::New());
  std::lock_guard lock(s->mu);
  return d.value;
}

void Variable::SetValue(const Tensor& value) const {
  detail::VariableData& d = Data(data_);
  if (!value.Ok()) kiln::detail::Throw("Variable \"{}\": SetValue with a tensor that is not Ok", d.path);
  if (value.shape() != d.shape)
    kiln::detail::Throw("Variable \"{}\": SetValue with shape {}, the variable has {}", d.path, value.shape(),
                        d.shape);
  std::shared_ptr<detail::StoreData> s = detail::StoreOf(d);
  std::lock_guard lock(s->mu);
  d.value = value.Clone();
  d.replicas.clear();
  d.pending = nullptr;
}

bool Variable::Trainable() const { return Data(data_).trainable; }

const Variable& Variable::SetTrainable(bool trainable) const {
  detail::VariableData& d = Data(data_);
  if (trainable && !IsFloat(d.shape.dtype()))
    kiln::detail::Throw("Variable \"{}\": a {} variable cannot be trainable", d.path,
                        DTypeName(d.shape.dtype()));
  d.trainable = trainable;
  return *this;
}

graph::Node Variable::NodeValue(graph::Graph& g) const {
  detail::VariableData& d = Data(data_);
  detail::GraphState& st = detail::StateOf(g);
  auto view = [&](graph::Node n) {
    return compute_ != DType::Invalid && compute_ != n.dtype() ? graph::ConvertDType(n, compute_) : n;
  };
  for (auto it = st.updates.rbegin(); it != st.updates.rend(); ++it)
    if (it->first.get() == &d) return view(it->second);
  for (size_t i = 0; i < st.inputs.size(); ++i)
    if (st.inputs[i].get() == &d) return view(st.input_nodes[i]);
  graph::Node n = g.Parameter(d.shape, d.path);
  st.inputs.push_back(data_);
  st.input_nodes.push_back(n);
  return view(n);
}

void Variable::SetNodeValue(graph::Node node) const {
  detail::VariableData& d = Data(data_);
  if (!node.Ok()) kiln::detail::Throw("Variable \"{}\": SetNodeValue with an invalid node", d.path);
  if (compute_ != DType::Invalid && node.dtype() == compute_ && compute_ != d.shape.dtype() &&
      node.shape().Dimensions() == d.shape.Dimensions())
    node = graph::ConvertDType(node, d.shape.dtype());
  if (node.shape() != d.shape) {
    kiln::detail::Throw("Variable \"{}\": SetNodeValue with a node of shape {}, the variable has {}", d.path,
                        node.shape(), d.shape);
  }
  detail::GraphState& st = detail::StateOf(node.graph());
  for (auto& u : st.updates) {
    if (u.first.get() == &d) {
      u.second = node;
      return;
    }
  }
  st.updates.emplace_back(data_, node);
}

Variable Variable::ComputeAs(DType compute) const {
  if (!data_) kiln::detail::Throw("Variable::ComputeAs on an invalid handle");
  if (compute != DType::Invalid && !IsFloat(compute))
    kiln::detail::Throw("Variable \"{}\": ComputeAs({}): not a float dtype", data_->path, compute);
  Variable v = *this;
  v.compute_ = compute;
  return v;
}

std::string Variable::ToString() const {
  if (!data_) return "<invalid variable>";
  return fmt::format("{} {}", data_->path, data_->shape);
}

}  // namespace kiln::model
