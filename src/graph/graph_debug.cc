// Debugging a graph: logged nodes (Node::SetLogged), aliases (Node::WithAlias, alias scopes) and
// the build stacks of traced graphs (Node::Trace).

#include <cstdarg>
#include <cstdio>

#include "core/check.h"
#include "kiln/graph/graph.h"

namespace kiln::graph {

Node Node::SetLogged(const std::string& message) const {
  Graph& g = graph();
  if (message.empty()) {
    g.logged_.erase(id_);
  } else {
    g.logged_[id_] = message;
  }
  return *this;
}

Node Node::SetLoggedf(const char* format, ...) const {
  if (format == nullptr) kiln::detail::Throw("Node::SetLoggedf: null format");
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string message;
  if (n > 0) {
    message.resize(static_cast<size_t>(n) + 1);
    std::vsnprintf(message.data(), message.size(), format, args);
    message.resize(static_cast<size_t>(n));
  }
  va_end(args);
  if (n < 0) kiln::detail::Throw("Node::SetLoggedf: bad format \"{}\"", format);
  return SetLogged(message);
}

bool Node::IsLogged() const { return graph().logged_.contains(id_); }

std::string Node::LogMessage() const {
  const Graph& g = graph();
  auto it = g.logged_.find(id_);
  return it == g.logged_.end() ? std::string() : it->second;
}

Node Node::WithAlias(const std::string& alias) const {
  Graph& g = graph();
  if (alias.empty() || alias.back() == '/')
    kiln::detail::Throw("Node::WithAlias: alias \"{}\" of node #{} is empty or ends with \"/\"", alias, id_);
  const std::string full = alias.front() == '/' ? alias : g.AliasScopePath() + alias;
  auto [it, fresh] = g.alias_to_node_.emplace(full, id_);
  if (!fresh) {
    kiln::detail::Throw(
        "Node::WithAlias: graph \"{}\" already has alias \"{}\" (node #{}); aliases are unique "
        "within their scope",
        g.name(), full, it->second);
  }
  auto old = g.node_alias_.find(id_);
  if (old != g.node_alias_.end()) g.alias_to_node_.erase(old->second);
  g.node_alias_[id_] = full;
  return *this;
}

std::string Node::Alias() const {
  const Graph& g = graph();
  auto it = g.node_alias_.find(id_);
  return it == g.node_alias_.end() ? std::string() : it->second;
}

std::string Node::Trace() const {
  const Graph& g = graph();
  auto it = g.traces_.find(id_);
  return it == g.traces_.end() ? std::string() : it->second.StackTrace();
}

std::vector<Node> Graph::LoggedNodes() {
  std::vector<Node> nodes;
  for (const auto& [id, message] : logged_) nodes.push_back(Node(this, id));
  return nodes;
}

void Graph::PushAliasScope(const std::string& scope) {
  if (scope.empty() || scope.find('/') != std::string::npos)
    kiln::detail::Throw("Graph \"{}\": alias scope \"{}\" is empty or holds \"/\"", name_, scope);
  alias_scope_.push_back(scope);
}

void Graph::PopAliasScope() {
  if (alias_scope_.empty()) kiln::detail::Throw("Graph \"{}\": PopAliasScope without a scope pushed", name_);
  alias_scope_.pop_back();
}

std::string Graph::AliasScopePath() const {
  std::string path = "/";
  for (const std::string& s : alias_scope_) path += s + "/";
  return path;
}

Node Graph::NodeByAlias(const std::string& alias) {
  const std::string full = !alias.empty() && alias.front() == '/' ? alias : AliasScopePath() + alias;
  auto it = alias_to_node_.find(full);
  return it == alias_to_node_.end() ? Node() : Node(this, it->second);
}

std::vector<std::pair<std::string, Node>> Graph::AliasedNodes() {
  std::vector<std::pair<std::string, Node>> nodes;
  for (const auto& [alias, id] : alias_to_node_) nodes.emplace_back(alias, Node(this, id));
  return nodes;
}

}  // namespace kiln::graph
