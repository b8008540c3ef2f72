// Complex numbers end to end: printing, host access, graphs on every backend, the gradient
// convention, and the errors for what complex numbers do not support.

#include <gtest/gtest.h>

#include <complex>
#include <vector>

#include "kiln/kiln.h"
#include "test_util.h"

namespace kiln::graph {
namespace {

using kiln::test::Throws;
using C64 = std::complex<float>;
using C128 = std::complex<double>;

TEST(Complex, PrintsAsGoDoes) {
  const Tensor z = Tensor::FromValue(std::vector<C64>{{1, 2}, {3, -1.5f}, {0, -0.0f}});
  EXPECT_EQ(z.ToString(), "[3]complex64{(1+2i), (3-1.5i), (0-0i)}");
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor s = Tensor::FromScalar(C128(std::nan(""), -inf));
  EXPECT_EQ(s.ToString(), "complex128((NaN-Infi))");
  EXPECT_TRUE(Throws([&] { (void)z.ToDoubles(); }, {"complex", "ToVector"}));
  EXPECT_EQ(z.ToVector<C64>()[1], C64(3, -1.5f));
}

TEST(Complex, ArithmeticOnEveryBackend) {
  kiln::test::ForEachBackend([&](const compute::BackendPtr& backend) {
    SCOPED_TRACE(backend->Name());
    // z * conj(z) = |z|^2, Abs is real, the parts come apart and back together.
    std::vector<Tensor> out = ExecOnce(
        backend,
        [](Node re, Node im) -> std::vector<Node> {
          Node z = Complex(re, im);
          return {Real(z * Conj(z)), Abs(z), Complex(Imag(z), Real(z)), ReduceAllSum(z)};
        },
        Tensor::FromValue(std::vector<double>{3, -5}), Tensor::FromValue(std::vector<double>{4, 12}));
    EXPECT_EQ(out[0].ToDoubles(), (std::vector<double>{25, 169}));
    EXPECT_EQ(out[1].ToDoubles(), (std::vector<double>{5, 13}));
    EXPECT_EQ(out[2].ToVector<C128>(), (std::vector<C128>{{4, 3}, {12, -5}}));
    EXPECT_EQ(out[3].Item<C128>(), C128(-2, 16));
  });
}

TEST(Complex, GradientIsTheConjugateConvention) {
  // L = sum |z|^2 = sum (re^2 + im^2): dL/dre + i dL/dim = 2 z.
  kiln::test::ForEachBackend([&](const compute::BackendPtr& backend) {
    SCOPED_TRACE(backend->Name());
    std::vector<Tensor> out = ExecOnce(
        backend,
        [](Node z) -> std::vector<Node> {
          Node loss = ReduceAllSum(Real(z * Conj(z)));
          return Gradient(loss, {z});
        },
        Tensor::FromValue(std::vector<C64>{{1, 2}, {-3, 0.5f}}));
    EXPECT_EQ(out[0].ToVector<C64>(), (std::vector<C64>{{2, 4}, {-6, 1}}));
  });
}

TEST(Complex, FourierTransformOfAnImpulseAndAConstant) {
  kiln::test::ForEachBackend([&](const compute::BackendPtr& backend) {
    SCOPED_TRACE(backend->Name());
    std::vector<Tensor> out = ExecOnce(
        backend,
        [](Node x) -> std::vector<Node> {
          return {FFT(ConvertDType(x, DType::Complex64)), RealFFT(x), InverseRealFFT(RealFFT(x))};
        },
        Tensor::FromValue(std::vector<float>{1, 0, 0, 0}));
    EXPECT_EQ(out[0].ToVector<C64>(), (std::vector<C64>{1, 1, 1, 1}));  // An impulse has a flat spectrum.
    EXPECT_EQ(out[1].shape(), Shape(DType::Complex64, {3}));
    EXPECT_EQ(out[2].ToDoubles(), (std::vector<double>{1, 0, 0, 0}));
  });
}

TEST(Complex, ErrorsNameWhatIsWrong) {
  Graph g("errors");
  Node z = g.Parameter(Shape(DType::Complex64, {4}));
  Node x = g.Parameter(Shape(DType::Float32, {4}));
  EXPECT_TRUE(Throws([&] { Less(z, z); }, {"Less", "Complex64"}));
  EXPECT_TRUE(Throws([&] { ReduceMax(z); }, {"ReduceMax", "Complex64"}));
  EXPECT_TRUE(Throws([&] { Sin(z); }, {"Sin", "float"}));
  EXPECT_TRUE(Throws([&] { FFT(x); }, {"FFT", "complex", "Float32"}));
  EXPECT_TRUE(Throws([&] { RealFFT(z); }, {"RealFFT", "Float32 or Float64"}));
  EXPECT_TRUE(Throws([&] { FFT(z, {8}); }, {"FFT", "last axis", "8"}));
  EXPECT_TRUE(Throws([&] { FFT(z, {4, 4}); }, {"FFT", "1-D"}));
  EXPECT_TRUE(Throws([&] { FFT(ReduceAllSum(z)); }, {"FFT", "scalar"}));
  EXPECT_TRUE(Throws([&] { InverseRealFFT(z, {4}); }, {"InverseRealFFT", "3 elements", "fft_length 4"}));
  Node h = g.Parameter(Shape(DType::Float16, {4}));
  EXPECT_TRUE(Throws([&] { Complex(h, h); }, {"Complex", "Float32 or Float64"}));
  EXPECT_TRUE(Throws([&] { Gradient(ReduceAllSum(z), {z}); }, {"Gradient", "float"}));
  EXPECT_TRUE(Throws(
      [&] {
        ScatterMax(z, g.Parameter(Shape(DType::Int32, {1, 1})), g.Parameter(Shape(DType::Complex64, {1})));
      },
      {"Max or Min", "Complex64"}));
}

}  // namespace
}  // namespace kiln::graph
