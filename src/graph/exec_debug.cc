// The node logger, aliased values and the NaN check of an Exec run (graph/debug.h).

#include "graph/exec_debug.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <span>
#include <string_view>

#include "core/check.h"
#include "kiln/compute/shape_inference.h"

namespace kiln::graph {

namespace {

// What DefaultNodeLogger knows about the run that calls it (set while an Exec calls its logger).
struct LogContext {
  const std::string* graph_name = nullptr;
  const std::vector<int>* ids = nullptr;
};
thread_local LogContext g_log_context;

// The values of one node: how many are NaN or infinite, and the range of the finite ones.
struct Summary {
  int64_t size = 0, nans = 0, infs = 0;
  double min = std::numeric_limits<double>::infinity(), max = -std::numeric_limits<double>::infinity();
  bool Finite() const { return nans == 0 && infs == 0; }
};

Summary Summarize(const Tensor& t) {
  Summary s;
  for (double x : t.ToDoubles()) {
    ++s.size;
    if (std::isnan(x)) {
      ++s.nans;
    } else if (std::isinf(x)) {
      ++s.infs;
    } else {
      s.min = std::min(s.min, x);
      s.max = std::max(s.max, x);
    }
  }
  return s;
}

// True when every value of a floating-point tensor is finite: its exponent bits are not all ones.
// One pass over the raw bits that the compiler vectorises (no conversion, no allocation).
template <typename U>
bool ExponentNeverAllOnes(std::span<const uint8_t> bytes, U mask) {
  const size_t n = bytes.size() / sizeof(U);
  const U* p = reinterpret_cast<const U*>(bytes.data());
  U bad = 0;
  for (size_t i = 0; i < n; ++i) bad |= static_cast<U>((p[i] & mask) == mask);
  return bad == 0;
}

bool AllFinite(const Tensor& t) {
  bool finite = true;
  t.ConstBytes([&](std::span<const uint8_t> bytes) {
    switch (t.dtype()) {
      case DType::Float16:
        finite = ExponentNeverAllOnes<uint16_t>(bytes, 0x7c00);
        break;
      case DType::BFloat16:
        finite = ExponentNeverAllOnes<uint16_t>(bytes, 0x7f80);
        break;
      case DType::Float32:
        finite = ExponentNeverAllOnes<uint32_t>(bytes, 0x7f800000u);
        break;
      case DType::Float64:
        finite = ExponentNeverAllOnes<uint64_t>(bytes, 0x7ff0000000000000ull);
        break;
      default:
        break;
    }
  });
  return finite;
}

// "3 values in [-0.5, 1]", or "3 values (1 NaN, 1 infinite), the finite ones in [0, 0]".
std::string Describe(const Summary& s) {
  std::string text = fmt::format("{} values", s.size);
  if (!s.Finite()) {
    text += " (";
    if (s.nans > 0) text += fmt::format("{} NaN", s.nans);
    if (s.nans > 0 && s.infs > 0) text += ", ";
    if (s.infs > 0) text += fmt::format("{} infinite", s.infs);
    text += ")";
    if (s.size > s.nans + s.infs) text += ", the finite ones";
  }
  if (s.size > s.nans + s.infs) text += fmt::format(" in [{:g}, {:g}]", s.min, s.max);
  return text;
}

bool Checkable(const compute::Instruction& inst) {
  return !inst.IsTuple() && inst.shape.Ok() && IsFloat(inst.shape.dtype());
}

// Values that are given, not computed: never the origin of a finding (but checked, so that what
// is computed from a NaN input or a -inf constant is not blamed either).
bool Given(const compute::Instruction& inst) {
  return inst.op == compute::OpType::Parameter || inst.op == compute::OpType::Constant;
}

}  // namespace

void DefaultNodeLogger(const std::vector<std::string>& messages, const std::vector<Tensor>& values) {
  if (messages.empty()) return;
  const LogContext& ctx = g_log_context;
  std::string out = ctx.graph_name != nullptr
                        ? fmt::format("DefaultNodeLogger(Graph \"{}\"):\n", *ctx.graph_name)
                        : std::string("DefaultNodeLogger:\n");
  for (size_t i = 0; i < messages.size(); ++i) {
    std::string_view msg = messages[i];
    const bool full = msg.starts_with("#full ");
    if (full) msg.remove_prefix(6);
    const std::string value = i < values.size() ? values[i].ToString(full) : std::string("<no value>");
    if (ctx.ids != nullptr && i < ctx.ids->size()) {
      out += fmt::format("\t(Node #{}) {}: {}\n", (*ctx.ids)[i], msg, value);
    } else {
      out += fmt::format("\t{}: {}\n", msg, value);
    }
  }
  std::fputs(out.c_str(), stderr);
  std::fflush(stderr);
}

bool NanCheckFromEnvironment() {
  const char* v = std::getenv("KILN_NAN_CHECK");
  if (v == nullptr) return false;
  const std::string_view s = v;
  return s == "1" || s == "true" || s == "on";
}

namespace exec_internal {

DebugOutputs AppendDebugOutputs(Graph& g, std::vector<Node>& outputs, bool with_aliases, bool nan_check) {
  DebugOutputs d;
  d.first = outputs.size();
  for (const Node& n : g.LoggedNodes()) {
    d.logged.push_back(n.id());
    d.messages.push_back(n.LogMessage());
  }
  if (with_aliases) {
    for (const auto& [alias, n] : g.AliasedNodes()) {
      d.aliased.push_back(n.id());
      d.aliases.push_back(alias);
    }
  }
  if (nan_check) {
    // Every checkable node the outputs (and the logged and aliased nodes) depend on.
    std::vector<bool> live(static_cast<size_t>(g.NumNodes()), false);
    for (const Node& n : outputs) live[static_cast<size_t>(n.id())] = true;
    for (int id : d.logged) live[static_cast<size_t>(id)] = true;
    for (int id : d.aliased) live[static_cast<size_t>(id)] = true;
    for (int id = g.NumNodes(); id-- > 0;) {
      if (!live[static_cast<size_t>(id)]) continue;
      for (int o : g.instruction(id).operands) live[static_cast<size_t>(o)] = true;
    }
    for (int id = 0; id < g.NumNodes(); ++id) {
      if (live[static_cast<size_t>(id)] && Checkable(g.instruction(id))) d.checked.push_back(id);
    }
  }
  for (int id : d.logged) outputs.push_back(g.NodeAt(id));
  for (int id : d.aliased) outputs.push_back(g.NodeAt(id));
  for (int id : d.checked) outputs.push_back(g.NodeAt(id));
  return d;
}

void FinishDebugOutputs(const std::string& what, Graph& g, const DebugOutputs& d,
                        std::vector<Tensor>& results, const NodeLogger& logger,
                        std::map<std::string, Tensor>* aliased) {
  if (results.size() != d.first + d.Count())
    kiln::detail::Throw("{}: {} results for {} outputs", what, results.size(), d.first + d.Count());
  size_t next = d.first;
  if (logger) {
    std::vector<Tensor> values(results.begin() + static_cast<long>(next),
                               results.begin() + static_cast<long>(next + d.logged.size()));
    const LogContext saved = g_log_context;
    g_log_context = LogContext{&g.name(), &d.logged};
    try {
      logger(d.messages, values);
    } catch (...) {
      g_log_context = saved;
      throw;
    }
    g_log_context = saved;
  }
  next += d.logged.size();
  if (aliased != nullptr) {
    for (size_t i = 0; i < d.aliased.size(); ++i) (*aliased)[d.aliases[i]] = results[next + i];
  }
  next += d.aliased.size();
  if (!d.checked.empty()) {
    // One fast pass tells which values are finite; full summaries are made for a finding only.
    std::map<int, size_t> index;  // Node id -> its result.
    std::map<int, bool> finite;
    for (size_t i = 0; i < d.checked.size(); ++i) {
      index[d.checked[i]] = next + i;
      finite[d.checked[i]] = AllFinite(results[next + i]);
    }
    for (int id : d.checked) {
      if (finite[id] || Given(g.instruction(id))) continue;
      // The operands whose values decide: a tuple's element reads the tuple op's operands.
      std::vector<int> operands = g.instruction(id).operands;
      if (operands.size() == 1 && g.instruction(operands[0]).IsTuple())
        operands = g.instruction(operands[0]).operands;
      bool inputs_finite = true;
      for (int o : operands) {
        auto it = finite.find(o);
        if (it != finite.end() && !it->second) inputs_finite = false;
      }
      if (!inputs_finite) continue;  // Propagated from an earlier finding (or from an input).
      std::string ranges;
      for (int o : operands) {
        if (!index.contains(o)) continue;  // Not a floating-point value.
        ranges += fmt::format("\n  operand #{} {}: {}", o, compute::OpName(g.instruction(o).op),
                              Describe(Summarize(results[index[o]])));
      }
      const Summary s = Summarize(results[index[id]]);
      Node n = g.NodeAt(id);
      std::string where = n.Trace();
      if (where.empty()) where = "  (no build trace)";
      kiln::detail::Throw(
          "{}: NaN check: node {} made {} from finite operands{}{}\nnode #{} was built at:\n{}", what,
          n.ToString(), Describe(s), n.Alias().empty() ? "" : " (alias " + n.Alias() + ")", ranges, id,
          where);
    }
  }
  results.resize(d.first);
}

}  // namespace exec_internal

}  // namespace kiln::graph
