// Conformance rows of complex numbers: the arithmetic, reductions, contractions and scatters that
// take Complex64 and Complex128, Complex/Real/Imag/Conj, and the Fourier transforms. Expected
// values are computed here with std::complex<double> (the transforms by the O(n²) definition of
// the DFT, independent of the FFT library the backends use) and rounded to the dtype.

#include <cmath>
#include <complex>
#include <functional>
#include <numbers>
#include <string>

#include "internal.h"
#include "kiln/graph/function.h"
#include "kiln/graph/gather.h"
#include "kiln/graph/ops_complex.h"
#include "kiln/graph/ops_util.h"
#include "kiln/graph/ragged.h"

namespace kiln::conformance::internal {

using namespace kiln::graph;  // NOLINT
using Nodes = std::vector<Node>;
using Z = std::complex<double>;
using Zs = std::vector<Z>;

namespace {

/// Results computed in complex<double>: a relative error of a few ulps of the part dtype, and an
/// absolute one for parts that cancel to near zero.
Tolerance Tol(DType d) {
  return d == DType::Complex64 ? Tolerance{1e-6, 2e-6, 0} : Tolerance{1e-14, 1e-13, 0};
}

Zs Map(const Zs& x, const std::function<Z(Z)>& f) {
  Zs y;
  for (const Z& z : x) y.push_back(f(z));
  return y;
}
Zs Map2(const Zs& a, const Zs& b, const std::function<Z(Z, Z)>& f) {
  Zs y;
  for (size_t i = 0; i < a.size(); ++i) y.push_back(f(a[i], b[i]));
  return y;
}
std::vector<double> Parts(const Zs& x, bool imag) {
  std::vector<double> v;
  for (const Z& z : x) v.push_back(imag ? z.imag() : z.real());
  return v;
}

/// The DFT of each row of `x` (rows of length n) by its definition; `sign` -1 forward, +1
/// inverse (then divided by n).
Zs Dft(const Zs& x, int64_t n, int sign) {
  Zs y(x.size());
  for (size_t r = 0; r < x.size() / static_cast<size_t>(n); ++r) {
    for (int64_t k = 0; k < n; ++k) {
      Z acc = 0;
      for (int64_t t = 0; t < n; ++t) {
        const double angle =
            sign * 2 * std::numbers::pi * static_cast<double>(k * t % n) / static_cast<double>(n);
        acc += x[r * static_cast<size_t>(n) + static_cast<size_t>(t)] * Z(std::cos(angle), std::sin(angle));
      }
      y[r * static_cast<size_t>(n) + static_cast<size_t>(k)] = sign > 0 ? acc / static_cast<double>(n) : acc;
    }
  }
  return y;
}

/// The first m values of each row of length n.
Zs Head(const Zs& x, int64_t n, int64_t m) {
  Zs y;
  for (size_t r = 0; r < x.size() / static_cast<size_t>(n); ++r)
    for (int64_t k = 0; k < m; ++k) y.push_back(x[r * static_cast<size_t>(n) + static_cast<size_t>(k)]);
  return y;
}

/// The Hermitian rows of length n that m = n/2+1 values per row stand for.
Zs Hermitian(const Zs& half, int64_t n) {
  const int64_t m = n / 2 + 1;
  Zs y;
  for (size_t r = 0; r < half.size() / static_cast<size_t>(m); ++r) {
    const Z* h = half.data() + r * static_cast<size_t>(m);
    for (int64_t k = 0; k < n; ++k) y.push_back(k < m ? h[k] : std::conj(h[n - k]));
  }
  return y;
}

/// Row-major [p, q] x [q, s] product.
Zs MatMulOf(const Zs& a, const Zs& b, int p, int q, int s) {
  Zs y(static_cast<size_t>(p * s));
  for (int i = 0; i < p; ++i)
    for (int j = 0; j < s; ++j)
      for (int k = 0; k < q; ++k)
        y[static_cast<size_t>(i * s + j)] +=
            a[static_cast<size_t>(i * q + k)] * b[static_cast<size_t>(k * s + j)];
  return y;
}

void AddElementwiseRows(CaseList& L, DType d) {
  const Zs a = {{1, 2}, {-0.5, 1.5}, {3, -1}, {-2, -0.25}};
  const Zs b = {{0.5, -1}, {2, 0.5}, {-1, 3}, {1.5, 2}};
  const Tolerance tol = Tol(d);
  const DType part = ComplexPartDType(d);
  const Tensor ta = C(d, {4}, a), tb = C(d, {4}, b);
  auto unary = [&](const std::string& name, Node (*fn)(Node), const std::function<Z(Z)>& f) {
    L.Add(name, "values", d, Fn1(fn), {ta}, {C(d, {4}, Map(a, f))}, tol);
  };
  unary(
      "Neg", [](Node x) { return Neg(x); }, [](Z z) { return -z; });
  unary(
      "Sqrt", [](Node x) { return Sqrt(x); }, [](Z z) { return std::sqrt(z); });
  unary(
      "Rsqrt", [](Node x) { return Rsqrt(x); }, [](Z z) { return 1.0 / std::sqrt(z); });
  unary(
      "Exp", [](Node x) { return Exp(x); }, [](Z z) { return std::exp(z); });
  unary(
      "Log", [](Node x) { return Log(x); }, [](Z z) { return std::log(z); });
  unary(
      "Square", [](Node x) { return Square(x); }, [](Z z) { return z * z; });
  unary(
      "Reciprocal", [](Node x) { return Reciprocal(x); }, [](Z z) { return 1.0 / z; });
  unary(
      "Inverse", [](Node x) { return Inverse(x); }, [](Z z) { return 1.0 / z; });
  unary(
      "OnePlus", [](Node x) { return OnePlus(x); }, [](Z z) { return 1.0 + z; });
  unary(
      "OneMinus", [](Node x) { return OneMinus(x); }, [](Z z) { return 1.0 - z; });
  unary(
      "MinusOne", [](Node x) { return MinusOne(x); }, [](Z z) { return z - 1.0; });
  unary(
      "Conj", [](Node x) { return Conj(x); }, [](Z z) { return std::conj(z); });
  // Values known in closed form, independent of the C++ library the kernels call: e^(i pi/2) = i,
  // log(-1) = i pi, sqrt(-4) = 2i, sqrt(3+4i) = 2+i.
  const double pi = std::numbers::pi;
  L.Add("Exp", "closed_form", d, Fn1([](Node x) { return Exp(x); }), {C(d, {2}, {{0, 0}, {0, pi / 2}})},
        {C(d, {2}, {{1, 0}, {0, 1}})}, tol);
  L.Add("Log", "closed_form", d, Fn1([](Node x) { return Log(x); }), {C(d, {3}, {{1, 0}, {-1, 0}, {0, 1}})},
        {C(d, {3}, {{0, 0}, {0, pi}, {0, pi / 2}})}, tol);
  L.Add("Sqrt", "closed_form", d, Fn1([](Node x) { return Sqrt(x); }), {C(d, {3}, {{-4, 0}, {0, 2}, {3, 4}})},
        {C(d, {3}, {{0, 2}, {1, 1}, {2, 1}})}, tol);
  L.Add("Rsqrt", "closed_form", d, Fn1([](Node x) { return Rsqrt(x); }), {C(d, {2}, {{-4, 0}, {0, 2}})},
        {C(d, {2}, {{0, -0.5}, {0.5, -0.5}})}, tol);
  // The magnitude and the parts are real.
  L.Add("Abs", "magnitude", d, Fn1([](Node x) { return Abs(x); }), {ta},
        {Rounded(part, {4}, Parts(Map(a, [](Z z) { return Z(std::abs(z)); }), false))}, tol);
  L.Add("Abs", "pythagorean", d, Fn1([](Node x) { return Abs(x); }), {C(d, {2}, {{3, 4}, {-5, 12}})},
        {V(part, {2}, {5, 13})}, tol);
  L.Add("Real", "values", d, Fn1(Real), {ta}, {V(part, {4}, Parts(a, false))});
  L.Add("Imag", "values", d, Fn1(Imag), {ta}, {V(part, {4}, Parts(a, true))});

  auto binary = [&](const std::string& name, Node (*fn)(Node, Node), const std::function<Z(Z, Z)>& f) {
    L.Add(name, "values", d, Fn2(fn), {ta, tb}, {C(d, {4}, Map2(a, b, f))}, tol);
  };
  binary(
      "Add", [](Node x, Node y) { return Add(x, y); }, [](Z x, Z y) { return x + y; });
  binary(
      "Sub", [](Node x, Node y) { return Sub(x, y); }, [](Z x, Z y) { return x - y; });
  binary(
      "Mul", [](Node x, Node y) { return Mul(x, y); }, [](Z x, Z y) { return x * y; });
  binary(
      "Div", [](Node x, Node y) { return Div(x, y); }, [](Z x, Z y) { return x / y; });
  // A complex scalar broadcast against a vector.
  L.Add("Mul", "scalar_broadcast", d, Fn2([](Node x, Node y) { return Mul(x, y); }), {C(d, {}, {{0, 1}}), ta},
        {C(d, {4}, Map(a, [](Z z) { return Z(0, 1) * z; }))}, tol);
  // Real scalars: a + 0i.
  L.Add("AddScalar", "values", d, P([](const Nodes& p) { return AddScalar(p[0], 2); }), {ta},
        {C(d, {4}, Map(a, [](Z z) { return z + 2.0; }))}, tol);
  L.Add("SubScalar", "values", d, P([](const Nodes& p) { return SubScalar(p[0], 0.5); }), {ta},
        {C(d, {4}, Map(a, [](Z z) { return z - 0.5; }))}, tol);
  L.Add("MulScalar", "values", d, P([](const Nodes& p) { return MulScalar(p[0], -3); }), {ta},
        {C(d, {4}, Map(a, [](Z z) { return z * -3.0; }))}, tol);
  L.Add("DivScalar", "values", d, P([](const Nodes& p) { return DivScalar(p[0], 4); }), {ta},
        {C(d, {4}, Map(a, [](Z z) { return z / 4.0; }))}, tol);
  // Equality compares both parts.
  const Tensor mixed = C(d, {4}, {a[0], Z(a[1].real(), 7), a[2], Z(9, a[3].imag())});
  L.Add("Equal", "both_parts", d, Fn2([](Node x, Node y) { return Equal(x, y); }), {ta, mixed},
        {V(DType::Bool, {4}, {1, 0, 1, 0})});
  L.Add("NotEqual", "both_parts", d, Fn2([](Node x, Node y) { return NotEqual(x, y); }), {ta, mixed},
        {V(DType::Bool, {4}, {0, 1, 0, 1})});
  L.Add("IsZero", "both_parts", d, Fn1(IsZero), {C(d, {4}, {{0, 0}, {1, 0}, {0, 1}, {-0.0, 0}})},
        {V(DType::Bool, {4}, {1, 0, 0, 1})});
  // Conversions: the real part (NumPy's astype), a real value as v + 0i, between widths.
  L.Add("ConvertDType", "complex_to_real_part", d,
        P([part](const Nodes& p) { return ConvertDType(p[0], part); }), {ta},
        {V(part, {4}, Parts(a, false))});
  L.Add("ConvertDType", "complex_to_int32", d,
        P([](const Nodes& p) { return ConvertDType(p[0], DType::Int32); }), {ta},
        {V(DType::Int32, {4}, {1, 0, 3, -2})});
  L.Add("ConvertDType", "complex_to_bool_either_part", d,
        P([](const Nodes& p) { return ConvertDType(p[0], DType::Bool); }),
        {C(d, {3}, {{0, 0}, {0, 1}, {2, 0}})}, {V(DType::Bool, {3}, {0, 1, 1})});
  const DType other = d == DType::Complex64 ? DType::Complex128 : DType::Complex64;
  L.Add("ConvertDType", "between_complex", d,
        P([other](const Nodes& p) { return ConvertDType(p[0], other); }), {ta}, {C(other, {4}, a)});
  L.Add("ConvertDType", "from_float", part, P([d](const Nodes& p) { return ConvertDType(p[0], d); }),
        {V(part, {2}, {1.5, -2})}, {C(d, {2}, {{1.5, 0}, {-2, 0}})});
  // Complex numbers from their parts; a scalar part broadcasts.
  L.Add("Complex", "parts", part, Fn2(Complex), {V(part, {4}, Parts(a, false)), V(part, {4}, Parts(a, true))},
        {ta});
  L.Add("Complex", "scalar_imaginary", part, Fn2(Complex), {V(part, {2}, {1, 2}), V(part, {}, {-1})},
        {C(d, {2}, {{1, -1}, {2, -1}})});
  // Bitcast: a complex number is its real then its imaginary part.
  L.Add("Bitcast", "to_parts", d, P([part](const Nodes& p) { return Bitcast(p[0], part); }), {ta},
        {V(part, {4, 2}, {1, 2, -0.5, 1.5, 3, -1, -2, -0.25})});
  L.Add("Bitcast", "from_parts", part, P([d](const Nodes& p) { return Bitcast(p[0], d); }),
        {V(part, {2, 2}, {1, 2, -0.5, 1.5})}, {C(d, {2}, {a[0], a[1]})});
}

void AddReductionRows(CaseList& L, DType d) {
  const Tolerance tol = Tol(d);
  // m = [[1+i, 2-i, 0.5+2i], [-1+0.5i, 3, 1-i]].
  const Zs m = {{1, 1}, {2, -1}, {0.5, 2}, {-1, 0.5}, {3, 0}, {1, -1}};
  const Tensor tm = C(d, {2, 3}, m);
  const Zs rows = {m[0] + m[1] + m[2], m[3] + m[4] + m[5]};
  const Zs cols = {m[0] * m[3], m[1] * m[4], m[2] * m[5]};
  const Z all_sum = rows[0] + rows[1], all_product = cols[0] * cols[1] * cols[2];
  L.Add("ReduceSum", "axis1", d, P([](const Nodes& p) { return ReduceSum(p[0], {1}); }), {tm},
        {C(d, {2}, rows)}, tol);
  L.Add("ReduceProduct", "axis0", d, P([](const Nodes& p) { return ReduceProduct(p[0], {0}); }), {tm},
        {C(d, {3}, cols)}, tol);
  L.Add("ReduceAllSum", "values", d, Fn1(ReduceAllSum), {tm}, {C(d, {}, {all_sum})}, tol);
  L.Add("ReduceAllProduct", "values", d, Fn1(ReduceAllProduct), {tm}, {C(d, {}, {all_product})}, tol);
  L.Add("ReduceAllMultiply", "values", d, Fn1(ReduceAllMultiply), {tm}, {C(d, {}, {all_product})}, tol);
  L.Add("ReduceAndKeep", "sum_axis1", d, P([](const Nodes& p) {
          return ReduceAndKeep(p[0], [](Node x, const std::vector<int>& axes) { return ReduceSum(x, axes); },
                               {1});
        }),
        {tm}, {C(d, {2, 1}, rows)}, tol);
  const Tensor mask = V(DType::Bool, {2, 3}, {1, 0, 1, 0, 1, 1});
  const Zs masked = {m[0] + m[2], m[4] + m[5]};
  L.Add("MaskedReduceSum", "axis1", d, P([](const Nodes& p) { return MaskedReduceSum(p[0], p[1], {1}); }),
        {tm, mask}, {C(d, {2}, masked)}, tol);
  L.Add("MaskedReduceAndKeep", "sum_axis1", d,
        P([](const Nodes& p) { return MaskedReduceAndKeep(p[0], p[1], MaskedReduceSum, {1}); }), {tm, mask},
        {C(d, {2, 1}, masked)}, tol);
  L.Add("MaskedReduceAllSum", "values", d, Fn2(MaskedReduceAllSum), {tm, mask},
        {C(d, {}, {masked[0] + masked[1]})}, tol);
  L.Add("ConsecutiveDifference", "vector", d,
        P([](const Nodes& p) { return ConsecutiveDifference(p[0], 0, false); }),
        {C(d, {3}, {m[0], m[1], m[2]})}, {C(d, {2}, {m[1] - m[0], m[2] - m[1]})}, tol);
  // A ragged sum: rows {m0, m1}, {}, {m2}.
  L.Add("Ragged2D.ReduceSumCols", "rows", d,
        P([](const Nodes& p) { return MakeRagged2D(3, p[0], p[1]).ReduceSumCols(); }),
        {C(d, {3}, {m[0], m[1], m[2]}), V(DType::Int32, {3}, {0, 0, 2})}, {C(d, {3}, {m[0] + m[1], 0, m[2]})},
        tol);
}

void AddContractionRows(CaseList& L, DType d) {
  const Tolerance tol = Tol(d);
  // a: [2, 3], b: [3, 2].
  const Zs a = {{1, 1}, {2, -1}, {0.5, 2}, {-1, 0.5}, {3, 0}, {1, -1}};
  const Zs b = {{0, 1}, {1, 0}, {2, 2}, {-1, 1}, {0.5, -0.5}, {1, 3}};
  const Tensor ta = C(d, {2, 3}, a), tb = C(d, {3, 2}, b);
  const Tensor ab = C(d, {2, 2}, MatMulOf(a, b, 2, 3, 2));
  auto row = [&](const std::string& name, Node (*fn)(Node, Node)) {
    L.Add(name, "matrices", d, Fn2(fn), {ta, tb}, {ab}, tol);
  };
  row("MatMul", [](Node x, Node y) { return MatMul(x, y); });
  row("Dot.Product", [](Node x, Node y) { return Dot(x, y).Product(); });
  row("Dot.General", [](Node x, Node y) { return Dot(x, y).General({1}, {}, {0}, {}); });
  row("Dot.MatMul", [](Node x, Node y) { return Dot(x, y).MatMul(); });
  row("Dot.Einsum", [](Node x, Node y) { return Dot(x, y).Einsum("ij,jk->ik"); });
  row("Einsum", [](Node x, Node y) { return Einsum("ij,jk->ik", x, y); });
  row("DotGeneral", [](Node x, Node y) { return DotGeneral(x, {1}, {}, y, {0}, {}); });
  row("EinsumAxes", [](Node x, Node y) { return EinsumAxes(x, y, {{1, 0}}, {}); });
  // DotProduct does not conjugate (NumPy's dot, not vdot).
  const Zs u = {a[0], a[1], a[2]}, v = {b[0], b[2], b[4]};
  L.Add("DotProduct", "vectors", d, Fn2(DotProduct), {C(d, {3}, u), C(d, {3}, v)},
        {C(d, {}, {u[0] * v[0] + u[1] * v[1] + u[2] * v[2]})}, tol);
}

void AddScatterAndControlRows(CaseList& L, DType d) {
  const Tolerance tol = Tol(d);
  const Zs x = {{1, 1}, {0, -2}, {3, 0.5}, {-1, 0}};
  const Zs up = {{0.5, 0.5}, {1, -1}, {2, 0}};
  const Tensor idx = V(DType::Int32, {3, 1}, {1, 1, 3});
  const Zs added = {x[0], x[1] + up[0] + up[1], x[2], x[3] + up[2]};
  L.Add("ScatterAdd", "duplicates_add", d, P([](const Nodes& p) { return ScatterAdd(p[0], p[1], p[2]); }),
        {C(d, {4}, x), idx, C(d, {3}, up)}, {C(d, {4}, added)}, tol);
  L.Add("ScatterSum", "duplicates_add", d,
        P([](const Nodes& p) { return ScatterSum(p[0], p[1], p[2], /*sorted=*/false, /*unique=*/false); }),
        {C(d, {4}, x), idx, C(d, {3}, up)}, {C(d, {4}, added)}, tol);
  L.Add("Scatter", "rows_add_up", d,
        P([](const Nodes& p) { return Scatter(p[0], p[1], Shape(p[1].dtype(), {3})); }),
        {V(DType::Int32, {3, 1}, {2, 0, 2}), C(d, {3}, up)}, {C(d, {3}, {up[1], 0, up[0] + up[2]})}, tol);
  // A function called twice and branches over closures, on complex values.
  L.Add("NewFunction.Call", "called_twice", d, GP([d](Graph& g, const Nodes& p) {
          Function axpb = NewFunction(g, "axpb", [d](Graph& fg) {
            Node a = Parameter(fg, "a", Shape(d, {2})), b = Parameter(fg, "b", Shape(d, {}));
            return std::vector<Node>{a * a + b};
          });
          return axpb.Call({axpb.Call({p[0], p[1]})[0], p[1]})[0];
        }),
        {C(d, {2}, {x[0], x[1]}), C(d, {}, {Z(0, 1)})},
        {C(d, {2},
           Map({x[0], x[1]},
               [](Z z) {
                 const Z once = z * z + Z(0, 1);
                 return once * once + Z(0, 1);
               }))},
        tol);
  L.Add("If(closures)", "both_branches", d, GP([d](Graph& g, const Nodes& p) {
          Function plus =
              NewClosure(g, [d](Graph& fg) { return Nodes{OnePlus(Parameter(fg, "x", Shape(d, {2})))}; });
          Function minus =
              NewClosure(g, [d](Graph& fg) { return Nodes{MinusOne(Parameter(fg, "x", Shape(d, {2})))}; });
          return Nodes{If(Scalar(g, DType::Bool, true), plus, minus, {p[0]})[0],
                       If(Scalar(g, DType::Bool, false), plus, minus, {p[0]})[0]};
        }),
        {C(d, {2}, {x[0], x[1]})}, {C(d, {2}, {x[0] + 1.0, x[1] + 1.0}), C(d, {2}, {x[0] - 1.0, x[1] - 1.0})},
        tol);
}

void AddTransformRows(CaseList& L, DType d) {
  const Tolerance tol = d == DType::Complex64 ? Tolerance{1e-5, 1e-5, 0} : Tolerance{1e-12, 1e-12, 0};
  const DType part = ComplexPartDType(d);
  // Two rows of a mixed-radix length (6) and one of a prime length (5).
  Zs six;
  for (int i = 0; i < 12; ++i) six.emplace_back(std::sin(1.0 + i) * 2, std::cos(0.5 * i) - 0.25);
  Zs five;
  for (int i = 0; i < 5; ++i) five.emplace_back(0.5 * i - 1, (i % 3) - 0.5);
  // Round the inputs to the dtype first: the expected values are of the rounded inputs.
  auto rounded = [d](const Zs& z) {
    if (d == DType::Complex128) return z;
    Zs r;
    for (const Z& v : z) r.emplace_back(static_cast<float>(v.real()), static_cast<float>(v.imag()));
    return r;
  };
  six = rounded(six);
  five = rounded(five);
  L.Add("FFT", "rows_of_6", d, Fn1([](Node x) { return FFT(x); }), {C(d, {2, 6}, six)},
        {C(d, {2, 6}, Dft(six, 6, -1))}, tol);
  L.Add("FFT", "prime_5", d, Fn1([](Node x) { return FFT(x, {5}); }), {C(d, {5}, five)},
        {C(d, {5}, Dft(five, 5, -1))}, tol);
  L.Add("InverseFFT", "rows_of_6", d, Fn1([](Node x) { return InverseFFT(x); }), {C(d, {2, 6}, six)},
        {C(d, {2, 6}, Dft(six, 6, +1))}, tol);
  L.Add("InverseFFT", "round_trip_5", d, Fn1([](Node x) { return InverseFFT(FFT(x)); }), {C(d, {5}, five)},
        {C(d, {5}, five)}, tol);
  // Real transforms: the n/2+1 non-negative frequencies of a real signal, and back.
  Zs real6, real5;
  for (const Z& z : six) real6.emplace_back(z.real(), 0);
  for (const Z& z : five) real5.emplace_back(z.real(), 0);
  L.Add("RealFFT", "rows_of_6", part, Fn1([](Node x) { return RealFFT(x); }),
        {V(part, {2, 6}, Parts(real6, false))}, {C(d, {2, 4}, Head(Dft(real6, 6, -1), 6, 4))}, tol);
  L.Add("RealFFT", "odd_5", part, Fn1([](Node x) { return RealFFT(x); }), {V(part, {5}, Parts(real5, false))},
        {C(d, {3}, Head(Dft(real5, 5, -1), 5, 3))}, tol);
  // InverseRealFFT reads the Hermitian spectrum the values stand for (imaginary parts of the
  // frequency 0 and n/2 ignored): its result is the real part of that spectrum's inverse.
  Zs half6 = Head(six, 6, 4), half5 = Head(five, 5, 3);
  L.Add("InverseRealFFT", "default_length_6", d, Fn1([](Node x) { return InverseRealFFT(x); }),
        {C(d, {2, 4}, half6)}, {Rounded(part, {2, 6}, Parts(Dft(Hermitian(half6, 6), 6, +1), false))}, tol);
  L.Add("InverseRealFFT", "odd_length_5", d, Fn1([](Node x) { return InverseRealFFT(x, {5}); }),
        {C(d, {3}, half5)}, {Rounded(part, {5}, Parts(Dft(Hermitian(half5, 5), 5, +1), false))}, tol);
  L.Add("RealFFT", "round_trip_6", part, Fn1([](Node x) { return InverseRealFFT(RealFFT(x)); }),
        {V(part, {2, 6}, Parts(real6, false))}, {V(part, {2, 6}, Parts(real6, false))}, tol);
}

}  // namespace

void AddComplexCatalogue(std::vector<CatalogueEntry>& e) {
  const std::vector<DType> complex = {DType::Complex64, DType::Complex128};
  const std::vector<DType> real = {DType::Float32, DType::Float64};
  const std::vector<CatalogueEntry> entries = {
      {"Complex", {OpType::Complex}},
      {"Real", {OpType::Real}},
      {"Imag", {OpType::Imag}},
      {"Conj", {OpType::Conj}},
      {"FFT", {OpType::Fft}, false, false, complex},
      {"InverseFFT", {OpType::Fft}, false, false, complex},
      {"RealFFT", {OpType::Fft}, false, false, real},
      {"InverseRealFFT", {OpType::Fft}, false, false, complex},
  };
  e.insert(e.end(), entries.begin(), entries.end());
}

void AddComplexCases(CaseList& L) {
  for (DType d : kComplex) {
    AddElementwiseRows(L, d);
    AddReductionRows(L, d);
    AddContractionRows(L, d);
    AddScatterAndControlRows(L, d);
    AddTransformRows(L, d);
  }
}

}  // namespace kiln::conformance::internal
