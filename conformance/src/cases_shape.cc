// Rows for shape functions: Reshape, Transpose, TransposeAllAxes, ExpandAxes, InsertAxes,
// Squeeze, BroadcastToDims, BroadcastPrefix, Concatenate, Stack, Split, Slice, Pad, Reverse,
// OneHot. Values come from Seq() (distinct per dtype); the expected tensors pick them by
// hand-written indices.

#include "internal.h"

namespace kiln::conformance::internal {

using namespace kiln::graph;  // NOLINT

namespace {

using compute::PadAxis;

// A row of `op` whose expected output picks `indices` from the input values.
void Moves(CaseList& L, const std::string& op, const std::string& what, DType d, graph::GraphFn fn,
           std::vector<int64_t> in_dims, std::vector<int64_t> out_dims, const std::vector<int>& indices) {
  int64_t n = 1;
  for (int64_t k : in_dims) n *= k;
  const std::vector<double> v = Seq(d, n);
  Smooth(L.Add(op, what, d, std::move(fn), {V(d, std::move(in_dims), v)},
               {V(d, std::move(out_dims), Pick(v, indices))}));
}

std::vector<int> Iota(int n) {
  std::vector<int> r;
  for (int i = 0; i < n; ++i) r.push_back(i);
  return r;
}

}  // namespace

void AddShapeCases(CaseList& L) {
  // ---- Reshape and the axis-inserting/removing functions (every dtype: Reshape takes packed) ----
  for (DType d : kAll) {
    Moves(L, "Reshape", "2x3_to_3x2", d, P([](const std::vector<Node>& p) {
            return Reshape(p[0], {3, 2});
          }),
          {2, 3}, {3, 2}, Iota(6));
    Moves(L, "Reshape", "inferred", d, P([](const std::vector<Node>& p) { return Reshape(p[0], {-1}); }),
          {2, 3}, {6}, Iota(6));
    Moves(L, "Reshape", "to_scalar", d, P([](const std::vector<Node>& p) { return Reshape(p[0], {}); }),
          {1, 1}, {}, {0});
    Moves(L, "ExpandAxes", "front", d, P([](const std::vector<Node>& p) { return ExpandAxes(p[0], {0}); }),
          {2, 3}, {1, 2, 3}, Iota(6));
    Moves(L, "ExpandAxes", "negative", d,
          P([](const std::vector<Node>& p) { return ExpandAxes(p[0], {-1}); }), {2, 3}, {2, 3, 1}, Iota(6));
    Moves(L, "ExpandAxes", "two", d, P([](const std::vector<Node>& p) {
            return ExpandAxes(p[0], {0, 2});
          }),
          {2, 3}, {1, 2, 1, 3}, Iota(6));
    Moves(L, "InsertAxes", "middle", d, P([](const std::vector<Node>& p) { return InsertAxes(p[0], {1}); }),
          {2, 3}, {2, 1, 3}, Iota(6));
    Moves(L, "InsertAxes", "end", d, P([](const std::vector<Node>& p) { return InsertAxes(p[0], {-1}); }),
          {2, 3}, {2, 3, 1}, Iota(6));
    Moves(L, "ExpandLeftToRank", "to_4", d,
          P([](const std::vector<Node>& p) { return ExpandLeftToRank(p[0], 4); }), {2, 3}, {1, 1, 2, 3},
          Iota(6));
    Moves(L, "Squeeze", "all", d, P([](const std::vector<Node>& p) { return Squeeze(p[0]); }), {1, 2, 1, 3},
          {2, 3}, Iota(6));
    Moves(L, "Squeeze", "one", d, P([](const std::vector<Node>& p) { return Squeeze(p[0], {2}); }),
          {1, 2, 1, 3}, {1, 2, 3}, Iota(6));
  }

  for (DType d : kUnpacked) {
    // ---- Transpose -------------------------------------------------------------------------------
    Moves(L, "Transpose", "matrix", d, P([](const std::vector<Node>& p) { return Transpose(p[0], 0, 1); }),
          {2, 3}, {3, 2}, {0, 3, 1, 4, 2, 5});
    // out[a][b][c] = x[c][b][a].
    Moves(L, "Transpose", "outer_axes", d,
          P([](const std::vector<Node>& p) { return Transpose(p[0], 0, -1); }), {2, 3, 2}, {2, 3, 2},
          {0, 6, 2, 8, 4, 10, 1, 7, 3, 9, 5, 11});
    // Output axis i is x's axis perm[i]: out[a][b][c] = x[c][a][b].
    Moves(L, "TransposeAllAxes", "rotate", d, P([](const std::vector<Node>& p) {
            return TransposeAllAxes(p[0], {1, 2, 0});
          }),
          {2, 3, 2}, {3, 2, 2}, {0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11});
    Moves(L, "TransposeAllAxes", "swap_last", d, P([](const std::vector<Node>& p) {
            return TransposeAllAxes(p[0], {0, 2, 1});
          }),
          {2, 2, 3}, {2, 3, 2}, {0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11});

    // ---- Broadcasting ------------------------------------------------------------------------------
    Moves(L, "BroadcastToDims", "row", d, P([](const std::vector<Node>& p) {
            return BroadcastToDims(p[0], {2, 3});
          }),
          {1, 3}, {2, 3}, {0, 1, 2, 0, 1, 2});
    Moves(L, "BroadcastToDims", "column", d, P([](const std::vector<Node>& p) {
            return BroadcastToDims(p[0], {2, 3});
          }),
          {2, 1}, {2, 3}, {0, 0, 0, 1, 1, 1});
    Moves(L, "BroadcastToDims", "scalar", d, P([](const std::vector<Node>& p) {
            return BroadcastToDims(p[0], {2, 2});
          }),
          {}, {2, 2}, {0, 0, 0, 0});
    Moves(L, "BroadcastPrefix", "vector", d,
          P([](const std::vector<Node>& p) { return BroadcastPrefix(p[0], {2}); }), {3}, {2, 3},
          {0, 1, 2, 0, 1, 2});
    Moves(L, "BroadcastPrefix", "two_axes", d, P([](const std::vector<Node>& p) {
            return BroadcastPrefix(p[0], {2, 1});
          }),
          {2}, {2, 1, 2}, {0, 1, 0, 1});

    // ---- Concatenate, Stack, Split -------------------------------------------------------------
    {
      const std::vector<double> v = Seq(d, 12);
      const Tensor a = V(d, {2, 2}, Pick(v, {0, 1, 2, 3})), b = V(d, {2, 1}, Pick(v, {4, 5}));
      Smooth(L.Add("Concatenate", "axis1", d, P([](const std::vector<Node>& p) {
                     return Concatenate({p[0], p[1]}, 1);
                   }),
                   {a, b}, {V(d, {2, 3}, Pick(v, {0, 1, 4, 2, 3, 5}))}));
      L.Add("Concatenate", "negative_axis", d, P([](const std::vector<Node>& p) {
              return Concatenate({p[0], p[1]}, -1);
            }),
            {a, b}, {V(d, {2, 3}, Pick(v, {0, 1, 4, 2, 3, 5}))});
      const Tensor r1 = V(d, {1, 2}, Pick(v, {6, 7})), r2 = V(d, {1, 2}, Pick(v, {8, 9}));
      L.Add("Concatenate", "three_axis0", d, P([](const std::vector<Node>& p) {
              return Concatenate({p[0], p[1], p[2]}, 0);
            }),
            {r1, a, r2}, {V(d, {4, 2}, Pick(v, {6, 7, 0, 1, 2, 3, 8, 9}))});
      const Tensor s1 = V(d, {3}, Pick(v, {0, 1, 2})), s2 = V(d, {3}, Pick(v, {3, 4, 5}));
      L.Add("Stack", "axis0", d, P([](const std::vector<Node>& p) {
              return Stack({p[0], p[1]}, 0);
            }),
            {s1, s2}, {V(d, {2, 3}, Pick(v, {0, 1, 2, 3, 4, 5}))});
      Smooth(L.Add("Stack", "axis1", d, P([](const std::vector<Node>& p) {
                     return Stack({p[0], p[1]}, 1);
                   }),
                   {s1, s2}, {V(d, {3, 2}, Pick(v, {0, 3, 1, 4, 2, 5}))}));
      L.Add("Stack", "negative_axis", d, P([](const std::vector<Node>& p) {
              return Stack({p[0], p[1]}, -1);
            }),
            {s1, s2}, {V(d, {3, 2}, Pick(v, {0, 3, 1, 4, 2, 5}))});
      L.Add("Stack", "scalars", d, P([](const std::vector<Node>& p) {
              return Stack({p[0], p[1]}, 0);
            }),
            {V(d, {}, Pick(v, {7})), V(d, {}, Pick(v, {8}))}, {V(d, {2}, Pick(v, {7, 8}))});
      const Tensor x = V(d, {2, 4}, Pick(v, Iota(8)));
      Smooth(L.Add("Split", "axis1", d, P([](const std::vector<Node>& p) { return Split(p[0], 1, 2); }), {x},
                   {V(d, {2, 2}, Pick(v, {0, 1, 4, 5})), V(d, {2, 2}, Pick(v, {2, 3, 6, 7}))}));
      L.Add("Split", "axis0", d, P([](const std::vector<Node>& p) { return Split(p[0], 0, 2); }), {x},
            {V(d, {1, 4}, Pick(v, {0, 1, 2, 3})), V(d, {1, 4}, Pick(v, {4, 5, 6, 7}))});
      L.Add("Split", "four_parts", d, P([](const std::vector<Node>& p) { return Split(p[0], -1, 4); }), {x},
            {V(d, {2, 1}, Pick(v, {0, 4})), V(d, {2, 1}, Pick(v, {1, 5})), V(d, {2, 1}, Pick(v, {2, 6})),
             V(d, {2, 1}, Pick(v, {3, 7}))});
    }

    // ---- Slice ---------------------------------------------------------------------------------
    Moves(L, "Slice", "range", d,
          P([](const std::vector<Node>& p) { return Slice(p[0], {AxisRange(2, 5)}); }), {10}, {3}, {2, 3, 4});
    Moves(L, "Slice", "negative_start", d,
          P([](const std::vector<Node>& p) { return Slice(p[0], {AxisRange(-3)}); }), {10}, {3}, {7, 8, 9});
    Moves(L, "Slice", "negative_end_stride", d,
          P([](const std::vector<Node>& p) { return Slice(p[0], {AxisRange(1, -1).Stride(3)}); }), {10}, {3},
          {1, 4, 7});
    Moves(L, "Slice", "elem_negative", d,
          P([](const std::vector<Node>& p) { return Slice(p[0], {AxisElem(-1)}); }), {10}, {1}, {9});
    Moves(L, "Slice", "stride_from_start", d,
          P([](const std::vector<Node>& p) { return Slice(p[0], {AxisRange().Stride(4)}); }), {10}, {3},
          {0, 4, 8});
    Moves(L, "Slice", "two_axes", d, P([](const std::vector<Node>& p) {
            return Slice(p[0], {AxisRange(1, 3), AxisRange(0, 4).Stride(2)});
          }),
          {3, 4}, {2, 2}, {4, 6, 8, 10});
    Moves(L, "Slice", "trailing_axes_whole", d,
          P([](const std::vector<Node>& p) { return Slice(p[0], {AxisElem(1)}); }), {3, 4}, {1, 4},
          {4, 5, 6, 7});
    Moves(L, "Slice", "negative_second_axis", d, P([](const std::vector<Node>& p) {
            return Slice(p[0], {AxisRange(), AxisRange(-2)});
          }),
          {3, 4}, {3, 2}, {2, 3, 6, 7, 10, 11});
    Moves(L, "Slice", "empty", d,
          P([](const std::vector<Node>& p) { return Slice(p[0], {AxisRange(4, 4)}); }), {6}, {0}, {});

    // ---- Pad: low, high (negative crops), interior, any fill -----------------------------------------
    {
      const std::vector<double> v = Seq(d, 5);
      const double f = v[4];
      const Tensor x = V(d, {3}, Pick(v, {0, 1, 2})), fill = V(d, {}, {f});
      auto pad = [&](const std::string& what, std::vector<PadAxis> padding, std::vector<int64_t> dims,
                     const std::vector<int>& idx) {
        L.Add("Pad", what, d, P([padding](const std::vector<Node>& p) { return Pad(p[0], p[1], padding); }),
              {x, fill}, {V(d, std::move(dims), Pick(v, idx, f))});
      };
      pad("low_high", {{1, 2, 0}}, {6}, {-1, 0, 1, 2, -1, -1});
      pad("interior", {{0, 0, 1}}, {5}, {0, -1, 1, -1, 2});
      pad("negative_low_interior", {{-1, 2, 1}}, {6}, {-1, 1, -1, 2, -1, -1});
      pad("negative_high", {{0, -1, 0}}, {2}, {0, 1});
      pad("crop_both", {{-1, -1, 0}}, {1}, {1});
      pad("interior_two", {{1, -2, 2}}, {6}, {-1, 0, -1, -1, 1, -1});
      const Tensor m = V(d, {2, 2}, Pick(v, {0, 1, 2, 3}));
      const std::vector<PadAxis> p2 = {{1, 0, 0}, {0, 1, 1}};
      L.Add("Pad", "matrix", d, P([p2](const std::vector<Node>& p) { return Pad(p[0], p[1], p2); }),
            {m, fill}, {V(d, {3, 4}, Pick(v, {-1, -1, -1, -1, 0, -1, 1, -1, 2, -1, 3, -1}, f))});
      const std::vector<PadAxis> p1 = {{0, 1, 0}};  // Missing trailing axes are not padded.
      L.Add("Pad", "leading_axis_only", d,
            P([p1](const std::vector<Node>& p) { return Pad(p[0], p[1], p1); }), {m, fill},
            {V(d, {3, 2}, Pick(v, {0, 1, 2, 3, -1, -1}, f))});
    }

    // ---- Reverse ---------------------------------------------------------------------------------
    Moves(L, "Reverse", "axis0", d, P([](const std::vector<Node>& p) { return Reverse(p[0], {0}); }), {2, 3},
          {2, 3}, {3, 4, 5, 0, 1, 2});
    Moves(L, "Reverse", "axis1", d, P([](const std::vector<Node>& p) { return Reverse(p[0], {1}); }), {2, 3},
          {2, 3}, {2, 1, 0, 5, 4, 3});
    Moves(L, "Reverse", "both", d, P([](const std::vector<Node>& p) {
            return Reverse(p[0], {0, -1});
          }),
          {2, 3}, {2, 3}, {5, 4, 3, 2, 1, 0});

    // ---- OneHot: the column is the result dtype --------------------------------------------------
    L.Add("OneHot", "vector", d, P([d](const std::vector<Node>& p) { return OneHot(p[0], 3, d); }),
          {V(DType::Int32, {3}, {0, 2, 1})}, {V(d, {3, 3}, {1, 0, 0, 0, 0, 1, 0, 1, 0})});
    L.Add("OneHot", "out_of_range_is_zero", d,
          P([d](const std::vector<Node>& p) { return OneHot(p[0], 2, d); }),
          {V(DType::Int64, {2, 2}, {1, 2, -1, 0})}, {V(d, {2, 2, 2}, {0, 1, 0, 0, 0, 0, 1, 0})});
    L.Add("OneHot", "uint8_indices", d, P([d](const std::vector<Node>& p) { return OneHot(p[0], 4, d); }),
          {V(DType::Uint8, {2}, {3, 0})}, {V(d, {2, 4}, {0, 0, 0, 1, 1, 0, 0, 0})});
  }
}

}  // namespace kiln::conformance::internal
