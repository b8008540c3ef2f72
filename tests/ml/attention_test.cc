// Tests for attention: multi-head attention against torch.nn.MultiheadAttention (fixtures from
// make_attention_fixtures.py), scaled dot-product attention against a loop formula (grouped
// queries, masks), its gradients against central differences, and rotary embeddings against
// NumPy and their relative-position property.

#include "kiln/ml/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "kiln/io/npy.h"
#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using namespace kiln;
using namespace kiln::graph;
using kiln::test::Throws;

const std::map<std::string, Tensor>& Fixtures() {
  return kiln::test::Fixtures("tests/ml/fixtures/attention.npz");
}

std::vector<double> F64(const std::string& name) { return Fixtures().at(name).ToVector<double>(); }

/// Float32 tensor of `dims` from doubles.
Tensor F32(const std::vector<int64_t>& dims, const std::vector<double>& v) {
  std::vector<float> f(v.begin(), v.end());
  return Tensor::FromFlat(Shape(DType::Float32, dims), f);
}

std::vector<compute::BackendPtr> Backends() { return {compute::New(), compute::NewWithConfig("ref")}; }

/// Deterministic values in [-1, 1).
std::vector<double> Wave(size_t n, double phase) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(1.7 * static_cast<double>(i) + phase);
  return v;
}

/// rows [r0, r0 + e) of the [3e, e] matrix `w` transposed and laid out as [e_in, heads, e/heads].
std::vector<double> ProjectionWeights(const std::vector<double>& w, int64_t r0, int64_t e) {
  std::vector<double> out(static_cast<size_t>(e * e));
  for (int64_t i = 0; i < e; ++i)
    for (int64_t o = 0; o < e; ++o)
      out[static_cast<size_t>(i * e + o)] = w[static_cast<size_t>((r0 + o) * e + i)];
  return out;
}

/// Puts torch's MultiheadAttention weights (embed e, `heads` heads) into `scope`'s variables.
void CopyTorchWeights(const model::Scope& scope, int64_t e, int64_t heads) {
  const std::vector<double> in_w = F64("in_proj_weight"), in_b = F64("in_proj_bias");
  const char* names[] = {"query", "key", "value"};
  for (int64_t p = 0; p < 3; ++p) {
    model::Scope s = scope.At(names[p]);
    s.VariableWithValue("weights", F32({e, heads, e / heads}, ProjectionWeights(in_w, p * e, e)));
    std::vector<double> b(in_b.begin() + p * e, in_b.begin() + (p + 1) * e);
    s.VariableWithValue("biases", F32({heads, e / heads}, b));
  }
  const std::vector<double> out_w = F64("out_proj_weight");
  std::vector<double> wt(static_cast<size_t>(e * e));
  for (int64_t i = 0; i < e; ++i)
    for (int64_t o = 0; o < e; ++o)
      wt[static_cast<size_t>(i * e + o)] = out_w[static_cast<size_t>(o * e + i)];
  scope.At("output").VariableWithValue("weights", F32({e, e}, wt));
  scope.At("output").VariableWithValue("biases", F32({e}, F64("out_proj_bias")));
}

TEST(MultiHeadAttention, MatchesTorchMultiheadAttention) {
  const int64_t e = 8, heads = 2, batch = 2, q_len = 4, kv_len = 5;
  const Tensor q = F32({batch, q_len, e}, F64("query"));
  const Tensor k = F32({batch, kv_len, e}, F64("key"));
  const Tensor v = F32({batch, kv_len, e}, F64("value"));
  // torch's key_padding_mask is true for padding; KeyMask is true for real keys.
  std::vector<bool> keep;
  for (bool p : Fixtures().at("key_padding").ToVector<bool>()) keep.push_back(!p);
  const Tensor key_mask = Tensor::FromFlat(Shape(DType::Bool, {batch, kv_len}), keep);
  for (const compute::BackendPtr& backend : Backends()) {
    // "explicit": the causal pattern as a Mask, with an all-true KeyMask, gives torch's causal output.
    for (const std::string mode : {"plain", "causal", "key_padding", "explicit"}) {
      SCOPED_TRACE(backend->Name() + " " + mode);
      model::Store store;
      CopyTorchWeights(store.RootScope().At("mha"), e, heads);
      model::Exec f =
          model::NewExec(backend, store, [&](model::Scope scope, Node x, Node kk, Node vv, Node km) {
            auto b = layers::MultiHeadAttention(scope.In("mha"), x, kk, vv).NumHeads(heads);
            if (mode == "causal") b.Causal();
            if (mode == "key_padding") b.KeyMask(km);
            if (mode == "explicit") {
              const Shape qk(DType::Int32, {q_len, kv_len});
              b.Mask(GreaterOrEqual(Iota(x.graph(), qk, 0), Iota(x.graph(), qk, 1)))
                  .KeyMask(BroadcastToDims(Const(x.graph(), true), {batch, kv_len}));
            }
            return b.Done();
          });
      Tensor y = f.Call1(q, k, v, key_mask);
      ASSERT_EQ(y.shape(), Shape(DType::Float32, {batch, q_len, e}));
      const std::vector<double> want = F64(mode == "plain"         ? "output"
                                           : mode == "key_padding" ? "output_key_padding"
                                                                   : "output_causal");
      const std::vector<float> got = y.ToVector<float>();
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "at " << i;
      EXPECT_EQ(store.Variables().size(), 8u);  // No other variables were created.
    }
  }
}

/// The attention formula with loops: q [b, ql, h, d], k [b, kl, kh, d], v [b, kl, kh, dv];
/// allowed(b, h, i, j) says which keys a query may attend.
std::vector<double> LoopAttention(const std::vector<double>& q, const std::vector<double>& k,
                                  const std::vector<double>& v, int64_t B, int64_t QL, int64_t H, int64_t D,
                                  int64_t KL, int64_t KH, int64_t DV,
                                  const std::function<bool(int64_t, int64_t, int64_t, int64_t)>& allowed) {
  std::vector<double> out(static_cast<size_t>(B * QL * H * DV), 0.0);
  const int64_t group = H / KH;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      const int64_t kh = h / group;
      for (int64_t i = 0; i < QL; ++i) {
        std::vector<double> s(static_cast<size_t>(KL));
        double mx = -INFINITY;
        for (int64_t j = 0; j < KL; ++j) {
          double acc = 0;
          for (int64_t d = 0; d < D; ++d)
            acc += q[static_cast<size_t>(((b * QL + i) * H + h) * D + d)] *
                   k[static_cast<size_t>(((b * KL + j) * KH + kh) * D + d)];
          s[static_cast<size_t>(j)] = acc / std::sqrt(static_cast<double>(D));
          if (allowed(b, h, i, j)) mx = std::max(mx, s[static_cast<size_t>(j)]);
        }
        double total = 0;
        for (int64_t j = 0; j < KL; ++j) {
          s[static_cast<size_t>(j)] = allowed(b, h, i, j) ? std::exp(s[static_cast<size_t>(j)] - mx) : 0.0;
          total += s[static_cast<size_t>(j)];
        }
        for (int64_t j = 0; j < KL; ++j) {
          if (total == 0) break;
          for (int64_t d = 0; d < DV; ++d)
            out[static_cast<size_t>(((b * QL + i) * H + h) * DV + d)] +=
                s[static_cast<size_t>(j)] / total * v[static_cast<size_t>(((b * KL + j) * KH + kh) * DV + d)];
        }
      }
    }
  }
  return out;
}

TEST(ScaledDotProductAttention, GroupedQueriesAndMasksMatchLoops) {
  const int64_t B = 2, QL = 3, H = 4, D = 3, KL = 5, KH = 2, DV = 2;
  const std::vector<double> q = Wave(B * QL * H * D, 0.1), k = Wave(B * KL * KH * D, 0.7),
                            v = Wave(B * KL * KH * DV, 1.3);
  // A [q_len, kv_len] mask (broadcast over batch and heads) that hides all of query 2's keys.
  std::vector<bool> m(QL * KL);
  for (int64_t i = 0; i < QL; ++i)
    for (int64_t j = 0; j < KL; ++j) m[static_cast<size_t>(i * KL + j)] = (i != 2) && (i + j) % 4 != 3;
  const Tensor mask = Tensor::FromFlat(Shape(DType::Bool, {QL, KL}), m);
  const Tensor tq = Tensor::FromFlat(Shape(DType::Float64, {B, QL, H, D}), q);
  const Tensor tk = Tensor::FromFlat(Shape(DType::Float64, {B, KL, KH, D}), k);
  const Tensor tv = Tensor::FromFlat(Shape(DType::Float64, {B, KL, KH, DV}), v);
  auto all = [](int64_t, int64_t, int64_t, int64_t) { return true; };
  auto masked = [&](int64_t, int64_t, int64_t i, int64_t j) {
    return bool(m[static_cast<size_t>(i * KL + j)]);
  };
  auto causal = [](int64_t, int64_t, int64_t i, int64_t j) { return j <= i; };
  auto both = [&](int64_t b, int64_t h, int64_t i, int64_t j) {
    return masked(b, h, i, j) && causal(b, h, i, j);
  };
  for (const compute::BackendPtr& backend : Backends()) {
    Exec f = NewExec(backend, [](Node a, Node b, Node c, Node msk) -> std::vector<Node> {
      return {nn::ScaledDotProductAttention(a, b, c), nn::ScaledDotProductAttention(a, b, c, msk),
              nn::ScaledDotProductAttention(a, b, c, {}, true),
              nn::ScaledDotProductAttention(a, b, c, msk, true)};
    });
    std::vector<Tensor> r = f.Call(tq, tk, tv, mask);
    const std::vector<std::function<bool(int64_t, int64_t, int64_t, int64_t)>> rules = {all, masked, causal,
                                                                                        both};
    for (size_t c = 0; c < rules.size(); ++c) {
      SCOPED_TRACE(backend->Name() + " case " + std::to_string(c));
      ASSERT_EQ(r[c].shape(), Shape(DType::Float64, {B, QL, H, DV}));
      std::vector<double> want = LoopAttention(q, k, v, B, QL, H, D, KL, KH, DV, rules[c]);
      std::vector<double> got = r[c].ToVector<double>();
      for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "at " << i;
    }
    // Query 2 sees no key under the mask: zeros.
    std::vector<double> got = r[1].ToVector<double>();
    for (int64_t h = 0; h < H; ++h)
      for (int64_t d = 0; d < DV; ++d)
        EXPECT_EQ(got[static_cast<size_t>(((0 * QL + 2) * H + h) * DV + d)], 0.0);
  }
}

TEST(ScaledDotProductAttention, GradientsMatchCentralDifferences) {
  const int64_t B = 1, QL = 3, H = 2, D = 2, KL = 4, KH = 1;
  std::vector<std::vector<double>> args = {Wave(B * QL * H * D, 0.2), Wave(B * KL * KH * D, 0.9),
                                           Wave(B * KL * KH * D, 2.1)};
  const std::vector<std::vector<int64_t>> dims = {{B, QL, H, D}, {B, KL, KH, D}, {B, KL, KH, D}};
  const std::vector<double> r = Wave(B * QL * H * D, 3.3);  // Weights of the output in the loss.
  const Tensor tr = Tensor::FromFlat(Shape(DType::Float64, {B, QL, H, D}), r);
  for (const compute::BackendPtr& backend : Backends()) {
    SCOPED_TRACE(backend->Name());
    auto loss = [](Node q, Node k, Node v, Node w) {
      return ReduceAllSum(nn::ScaledDotProductAttention(q, k, v, {}, true) * w);
    };
    Exec value = NewExec(backend, [&](Node q, Node k, Node v, Node w) { return loss(q, k, v, w); });
    Exec grads = NewExec(backend, [&](Node q, Node k, Node v, Node w) {
      return Gradient(loss(q, k, v, w), {q, k, v});
    });
    auto tensors = [&](const std::vector<std::vector<double>>& a) {
      std::vector<Tensor> t;
      for (size_t i = 0; i < 3; ++i) t.push_back(Tensor::FromFlat(Shape(DType::Float64, dims[i]), a[i]));
      t.push_back(tr);
      return t;
    };
    std::vector<Tensor> g = grads.Call(tensors(args));
    const double eps = 1e-6;
    for (size_t a = 0; a < 3; ++a) {
      std::vector<double> analytic = g[a].ToVector<double>();
      for (size_t i = 0; i < args[a].size(); ++i) {
        std::vector<std::vector<double>> plus = args, minus = args;
        plus[a][i] += eps;
        minus[a][i] -= eps;
        const double numeric =
            (value.Call1(tensors(plus)).Item<double>() - value.Call1(tensors(minus)).Item<double>()) /
            (2 * eps);
        EXPECT_NEAR(analytic[i], numeric, 1e-7) << "argument " << a << " element " << i;
      }
    }
  }
}

TEST(RoPE, MatchesTheNumPyFormula) {
  const Tensor x = F32({2, 6, 2, 8}, F64("rope_x"));
  const Tensor positions = Fixtures().at("rope_positions");
  const std::vector<double> want = F64("rope_output");
  for (const compute::BackendPtr& backend : Backends()) {
    SCOPED_TRACE(backend->Name());
    Exec f = NewExec(backend, [](Node in, Node pos) { return nn::ApplyRoPE(in, pos, 10000.0); });
    std::vector<float> got = f.Call1(x, positions).ToVector<float>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 2e-6) << "at " << i;
    // Per-example positions [batch, seq] give the same when both rows are equal.
    std::vector<int64_t> p = positions.ToVector<int64_t>(), p2 = p;
    p2.insert(p2.end(), p.begin(), p.end());
    std::vector<float> got2 = f.Call1(x, Tensor::FromFlat(Shape(DType::Int64, {2, 6}), p2)).ToVector<float>();
    for (size_t i = 0; i < got2.size(); ++i) EXPECT_NEAR(got2[i], want[i], 2e-6) << "at " << i;
  }
}

TEST(RoPE, ScoresDependOnlyOnTheOffset) {
  // The same q at positions m and the same k at positions n: <RoPE(q, m), RoPE(k, n)> depends on
  // m - n only; the first three pairs have offset 2, the last offset 7.
  const std::vector<double> q = Wave(8, 0.4), k = Wave(8, 1.9);
  std::vector<double> qs, ks;
  for (int i = 0; i < 4; ++i) {
    qs.insert(qs.end(), q.begin(), q.end());
    ks.insert(ks.end(), k.begin(), k.end());
  }
  const Tensor tq = Tensor::FromFlat(Shape(DType::Float64, {1, 4, 1, 8}), qs);
  const Tensor tk = Tensor::FromFlat(Shape(DType::Float64, {1, 4, 1, 8}), ks);
  for (const compute::BackendPtr& backend : Backends()) {
    SCOPED_TRACE(backend->Name());
    Exec f = NewExec(backend, [](Node a, Node b, Node pa, Node pb) -> std::vector<Node> {
      Node ra = nn::ApplyRoPE(a, pa), rb = nn::ApplyRoPE(b, pb);
      return {ReduceSum(ra * rb, {0, 2, 3}), ReduceSum(ra * ra, {0, 2, 3})};
    });
    std::vector<Tensor> r =
        f.Call(tq, tk, std::vector<int32_t>{3, 10, 102, 9}, std::vector<int32_t>{1, 8, 100, 2});
    std::vector<double> dots = r[0].ToVector<double>(), norms = r[1].ToVector<double>();
    EXPECT_NEAR(dots[1], dots[0], 1e-12);
    EXPECT_NEAR(dots[2], dots[0], 1e-12);
    EXPECT_GT(std::abs(dots[3] - dots[0]), 1e-3);
    double qq = 0;
    for (double e : q) qq += e * e;
    for (double n : norms) EXPECT_NEAR(n, qq, 1e-12);  // A rotation keeps the norm.
  }
}

TEST(MultiHeadAttention, GroupedQueriesRoPEAndDropout) {
  model::Store store;
  const int64_t batch = 2, len = 5, e = 12;
  const Tensor x = F32({batch, len, e}, Wave(batch * len * e, 0.5));
  auto build = [](double dropout) {
    return [dropout](model::Scope scope, Node in) {
      return layers::MultiHeadAttention(scope.In("attn"), in, in, in)
          .NumHeads(4)
          .NumKVHeads(2)
          .KeyQueryDim(6)
          .ValueDim(5)
          .OutputDim(7)
          .RoPE()
          .Causal()
          .Dropout(dropout)
          .Done();
    };
  };
  model::Exec f = model::NewExec(compute::New(), store, build(0.0));
  Tensor y = f.Call1(x);
  EXPECT_EQ(y.shape(), Shape(DType::Float32, {batch, len, 7}));
  EXPECT_EQ(store.GetVariable("/attn/query/weights").shape(), Shape(DType::Float32, {e, 4, 6}));
  EXPECT_EQ(store.GetVariable("/attn/key/weights").shape(), Shape(DType::Float32, {e, 2, 6}));
  EXPECT_EQ(store.GetVariable("/attn/value/weights").shape(), Shape(DType::Float32, {e, 2, 5}));
  EXPECT_EQ(store.GetVariable("/attn/output/weights").shape(), Shape(DType::Float32, {20, 7}));
  // Causal: the first position sees only itself, so changing later positions leaves it alone.
  std::vector<float> xv = x.ToVector<float>();
  for (size_t i = static_cast<size_t>(e); i < xv.size(); ++i) xv[i] += 1.0f;
  std::vector<float> y2 = f.Call1(Tensor::FromFlat(x.shape(), xv)).ToVector<float>(),
                     y1 = y.ToVector<float>();
  for (int64_t b = 0; b < 1; ++b)
    for (int64_t o = 0; o < 7; ++o) EXPECT_NEAR(y2[static_cast<size_t>(o)], y1[static_cast<size_t>(o)], 1e-6);
  // Dropout is the identity outside training, and changes the result while training.
  model::Exec g = model::NewExec(compute::New(), store, build(0.5));
  EXPECT_TRUE(g.Call1(x).Equal(y));
  model::Exec t = model::NewExec(compute::New(), store, build(0.5));
  t.OnNewGraph([](Graph& graph) { model::SetTraining(graph, true); });
  EXPECT_FALSE(t.Call1(x).Equal(y));
}

TEST(MultiHeadAttention, BadArgumentsAreNamed) {
  model::Store store;
  auto run = [&](const std::function<Node(model::Scope, Node)>& fn) {
    model::Exec f =
        model::NewExec(compute::New(), store, [fn](model::Scope scope, Node x) { return fn(scope, x); });
    f.Call1(F32({1, 3, 4}, Wave(12, 0)));
  };
  EXPECT_TRUE(Throws(
      [&] {
        run([](model::Scope s, Node x) { return layers::MultiHeadAttention(s.In("a"), x, x, x).Done(); });
      },
      {"layers::MultiHeadAttention(/a)", "NumHeads"}));
  EXPECT_TRUE(Throws(
      [&] {
        run([](model::Scope s, Node x) {
          return layers::MultiHeadAttention(s.In("b"), x, x, x).NumHeads(3).Done();
        });
      },
      {"/b", "features 4", "3 heads"}));
  EXPECT_TRUE(Throws(
      [&] {
        run([](model::Scope s, Node x) {
          return layers::MultiHeadAttention(s.In("c"), x, x, x).NumHeads(4).NumKVHeads(3).Done();
        });
      },
      {"NumKVHeads(3)", "NumHeads(4)"}));
  EXPECT_TRUE(Throws(
      [&] {
        run([](model::Scope s, Node x) {
          Node m = Const(x.graph(), std::vector<bool>{true, false});
          return layers::MultiHeadAttention(s.In("d"), x, x, x).NumHeads(2).Mask(m).Done();
        });
      },
      {"nn::ScaledDotProductAttention", "does not broadcast"}));
  EXPECT_TRUE(Throws(
      [&] {
        run([](model::Scope, Node x) {
          Node q = Reshape(x, {1, 3, 2, 2});
          Node k = Reshape(x, {1, 2, 3, 2});
          return nn::ScaledDotProductAttention(q, k, k);
        });
      },
      {"3 key/value heads", "2 query heads"}));
  EXPECT_TRUE(Throws(
      [&] {
        run([](model::Scope, Node x) {
          return nn::ApplyRoPE(Reshape(x, {1, 3, 4, 1}), Iota(x.graph(), Shape(DType::Int32, {3}), 0));
        });
      },
      {"nn::ApplyRoPE", "head_dim 1", "even"}));
}

}  // namespace
