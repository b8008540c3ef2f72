// The x86 forms of int8_dot.cc's kernels. No include guard: int8_dot.cc includes this file
// twice, under AVX2's target attributes (KILN_INT8_VNNI 0) and AVX-512 VNNI's (1), each time
// in the namespace KILN_INT8_NS.

namespace KILN_INT8_NS {

/// acc + Σ over each 32-bit lane's four bytes of u (unsigned) · s (signed), exactly.
inline __m256i DotU8S8(__m256i acc, __m256i u, __m256i s) {
#if KILN_INT8_VNNI
  return _mm256_dpbusd_epi32(acc, u, s);
#else  // Pairs of products fit int16: u < 16 (Q4_0) or u <= 128 with |s| <= 127 (Q8_0).
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}

/// GGMLHalfAt with F16C's conversion (the same, exact value, in two instructions).
inline float HalfAt(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return _cvtsh_ss(bits);
}

/// The lanes' sum in int8_dot.cc's fixed order: ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)).
inline float SumLanes(__m256 v) {
  __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  a = _mm_add_ps(a, _mm_movehl_ps(a, a));
  a = _mm_add_ss(a, _mm_movehdup_ps(a));
  return _mm_cvtss_f32(a);
}

/// One block of 32 values of x into q, its scale and its sum (int8_dot.h's rule).
inline void QuantizeBlock(const float* x, int8_t* q, float& d, int32_t& sum) {
  const __m256 sign = _mm256_set1_ps(-0.0f), big = _mm256_set1_ps(std::numeric_limits<float>::max());
  __m256 v[4];
  __m256 amax = _mm256_setzero_ps(), bad = _mm256_setzero_ps();
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm256_loadu_ps(x + 8 * i);
    const __m256 a = _mm256_andnot_ps(sign, v[i]);
    bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, big, _CMP_NLE_UQ));  // NaN or Inf.
    amax = _mm256_max_ps(amax, a);
  }
  if (_mm256_movemask_ps(bad) != 0) {
    d = std::numeric_limits<float>::quiet_NaN();
    std::memset(q, 0, 32);
    sum = 0;
    return;
  }
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  d = _mm_cvtss_f32(m) / 127.0f;
  float inverse = d != 0.0f ? 1.0f / d : 0.0f;
  if (!std::isfinite(inverse)) d = inverse = 0.0f;  // max|x| below about 1e-38: a block of zeros.
  const __m256 id = _mm256_set1_ps(inverse);
  __m256i i[4];
  for (int t = 0; t < 4; ++t) i[t] = _mm256_cvtps_epi32(_mm256_mul_ps(v[t], id));  // Ties to even.
  const __m256i s = _mm256_add_epi32(_mm256_add_epi32(i[0], i[1]), _mm256_add_epi32(i[2], i[3]));
  __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
  sum = _mm_cvtsi128_si32(s4);
  // packs work within 128-bit halves: the dwords come out as i0[0:4], i1[0:4], i2[0:4], i3[0:4],
  // i0[4:8], ...; the permutation restores x's order.
  const __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(i[0], i[1]), _mm256_packs_epi32(i[2], i[3]));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q),
                      _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

inline void QuantizeRows(const float* x, int64_t m, int64_t k, Q8Rows& out) {
  const int64_t nb = k / 32;
  for (int64_t r = 0; r < m; ++r)
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t at = r * nb + b;
      QuantizeBlock(x + r * k + b * 32, out.q.data() + at * 32, out.d[static_cast<size_t>(at)],
                    out.sum[static_cast<size_t>(at)]);
    }
}

/// Columns [j0, j0 + J) and rows [r0, r0 + R) of y: per block, J blocks of W widened to bytes
/// once, each times R blocks of x.
template <int kType, int J, int R>
void Tile(const GGMLMatmul& p, const Q8Rows& x, int64_t j0, int64_t r0) {
  constexpr int64_t kBytes = kType == kGGMLQ4_0 ? 18 : 34;
  const int64_t nb = x.blocks;
  const uint8_t* rows[J];
  for (int jj = 0; jj < J; ++jj) rows[jj] = p.w + (j0 + jj) * nb * kBytes;
  __m256 acc[J][R];
  for (int jj = 0; jj < J; ++jj)
    for (int rr = 0; rr < R; ++rr) acc[jj][rr] = _mm256_setzero_ps();
  const __m256i low = _mm256_set1_epi8(0x0F);
  for (int64_t b = 0; b < nb; ++b) {
    __m256i w[J];
    __m256 dw[J];
    for (int jj = 0; jj < J; ++jj) {
      const uint8_t* block = rows[jj] + b * kBytes;
      dw[jj] = _mm256_set1_ps(HalfAt(block));
      if constexpr (kType == kGGMLQ4_0) {  // Values 0-15 in the low nibbles, 16-31 in the high.
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
        w[jj] = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v), low);
      } else {
        w[jj] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 2));
      }
    }
    for (int rr = 0; rr < R; ++rr) {
      const int64_t at = (r0 + rr) * nb + b;
      const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q.data() + at * 32));
      const __m256 dx = _mm256_set1_ps(x.d[static_cast<size_t>(at)]);
      // Q4_0 stores w + 8: each lane starts at -Σq, so the eight lanes take off 8 · Σq.
      const __m256i start = _mm256_set1_epi32(kType == kGGMLQ4_0 ? -x.sum[static_cast<size_t>(at)] : 0);
      for (int jj = 0; jj < J; ++jj) {
        const __m256i i = kType == kGGMLQ4_0
                              ? DotU8S8(start, w[jj], xq)
                              : DotU8S8(start, _mm256_abs_epi8(w[jj]), _mm256_sign_epi8(xq, w[jj]));
        acc[jj][rr] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i), _mm256_mul_ps(dw[jj], dx), acc[jj][rr]);
      }
    }
  }
  for (int jj = 0; jj < J; ++jj)
    for (int rr = 0; rr < R; ++rr) p.y[(r0 + rr) * p.n + j0 + jj] = SumLanes(acc[jj][rr]);
}

/// Rows of x per pass over W: what keeps 4 × R sums in registers (32 with AVX-512, 16 with AVX2).
constexpr int64_t kMaxRows = KILN_INT8_VNNI ? 4 : 2;

template <int kType, int R>
void Columns(const GGMLMatmul& p, const Q8Rows& x, int64_t n_begin, int64_t n_end, int64_t r0) {
  int64_t j = n_begin;
  for (; j + 4 <= n_end; j += 4) Tile<kType, 4, R>(p, x, j, r0);
  for (; j < n_end; ++j) Tile<kType, 1, R>(p, x, j, r0);
}

template <int kType>
void Run(const GGMLMatmul& p, const Q8Rows& x, int64_t n_begin, int64_t n_end) {
  for (int64_t r0 = 0; r0 < x.m; r0 += kMaxRows) {
    switch (std::min(kMaxRows, x.m - r0)) {
      case 1:
        Columns<kType, 1>(p, x, n_begin, n_end, r0);
        break;
      case 2:
        Columns<kType, 2>(p, x, n_begin, n_end, r0);
        break;
#if KILN_INT8_VNNI
      case 3:
        Columns<kType, 3>(p, x, n_begin, n_end, r0);
        break;
      default:
        Columns<kType, 4>(p, x, n_begin, n_end, r0);
        break;
#endif
    }
  }
}

inline void RunGGML(const GGMLMatmul& p, const Q8Rows& x, int64_t n_begin, int64_t n_end) {
  if (p.type == kGGMLQ4_0)
    Run<kGGMLQ4_0>(p, x, n_begin, n_end);
  else
    Run<kGGMLQ8_0>(p, x, n_begin, n_end);
}

// ---- Int8 weights [k, n] (LinearQuantMatmul) ---------------------------------------------------

/// Four rows of W (`stride` apart) at 32 columns as lanes of four bytes, one from each row:
/// t[0] holds columns 0-3 and 16-19, t[1] 4-7 and 20-23, t[2] 8-11 and 24-27, t[3] 12-15 and
/// 28-31 (the unpacks work within 128-bit halves). VNNI's operands are the unsigned w + 128.
inline void Interleave4(const uint8_t* row, int64_t stride, __m256i t[4]) {
  __m256i r0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row));
  __m256i r1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + stride));
  __m256i r2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * stride));
  __m256i r3 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 3 * stride));
#if KILN_INT8_VNNI
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  r0 = _mm256_xor_si256(r0, flip);
  r1 = _mm256_xor_si256(r1, flip);
  r2 = _mm256_xor_si256(r2, flip);
  r3 = _mm256_xor_si256(r3, flip);
#endif
  const __m256i lo01 = _mm256_unpacklo_epi8(r0, r1), hi01 = _mm256_unpackhi_epi8(r0, r1);
  const __m256i lo23 = _mm256_unpacklo_epi8(r2, r3), hi23 = _mm256_unpackhi_epi8(r2, r3);
  t[0] = _mm256_unpacklo_epi16(lo01, lo23);
  t[1] = _mm256_unpackhi_epi16(lo01, lo23);
  t[2] = _mm256_unpacklo_epi16(hi01, hi23);
  t[3] = _mm256_unpackhi_epi16(hi01, hi23);
}

/// acc + Σ over each lane's four bytes of w · x (x the same four bytes in every lane): VNNI on
/// w + 128 (the block's start takes off 128 · Σx), AVX2 on |w| and x with w's sign.
inline __m256i DotWeights(__m256i acc, __m256i t, __m256i x) {
#if KILN_INT8_VNNI
  return _mm256_dpbusd_epi32(acc, t, x);
#else
  return DotU8S8(acc, _mm256_abs_epi8(t), _mm256_sign_epi8(x, t));
#endif
}

/// One block of 32 rows of W (block `a` of x) at columns [j, j + 32 P), rows [r0, r0 + R) of x:
/// exact int32 sums per column, times x's block scale, added into `f` (rows `stride` apart,
/// in Interleave4's lane order).
template <int R, int P>
void BlockPanel(const LinearQuantMatmul& p, const Q8Rows& x, int64_t a, int64_t j, int64_t r0, float* f,
                int64_t stride) {
  constexpr int U = 4 * P;  // Vectors of 8 columns.
  const int64_t n = p.n;
  __m256i acc[R][U];
  for (int r = 0; r < R; ++r) {
    const __m256i start =
        _mm256_set1_epi32(KILN_INT8_VNNI ? -128 * x.sum[static_cast<size_t>((r0 + r) * x.blocks + a)] : 0);
    for (int u = 0; u < U; ++u) acc[r][u] = start;
  }
  const uint8_t* rows = p.q + a * 32 * n + j;
  for (int g = 0; g < 8; ++g, rows += 4 * n) {
    __m256i t[U];
    for (int pp = 0; pp < P; ++pp) Interleave4(rows + 32 * pp, n, t + 4 * pp);
    for (int r = 0; r < R; ++r) {
      int32_t four;
      std::memcpy(&four, x.q.data() + (r0 + r) * x.k + a * 32 + 4 * g, 4);
      const __m256i xb = _mm256_set1_epi32(four);
      for (int u = 0; u < U; ++u) acc[r][u] = DotWeights(acc[r][u], t[u], xb);
    }
  }
  for (int r = 0; r < R; ++r) {
    const __m256 dx = _mm256_set1_ps(x.d[static_cast<size_t>((r0 + r) * x.blocks + a)]);
    float* fr = f + (r0 + r) * stride;
    for (int u = 0; u < U; ++u)
      _mm256_storeu_ps(fr + 8 * u,
                       _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[r][u]), dx, _mm256_loadu_ps(fr + 8 * u)));
  }
}

/// Rows of x per pass and 32-column panels per step: what keeps the sums in 32 (AVX-512) or 16
/// (AVX2) registers.
constexpr int kLinearRows = KILN_INT8_VNNI ? 2 : 1;
constexpr int kLinearPanels = KILN_INT8_VNNI ? 2 : 1;

/// Columns [n_begin, end) of y, end - n_begin the whole 32-column panels; returns `end`. W is
/// read one block of 32 rows at a time across all the panels (rows in order: a walk down one
/// panel would touch a page per row), each block's sums kept in float per column; at the end of
/// each block of scales, y += s · sums (+ z · the block's sum of x).
inline int64_t RunLinear(const LinearQuantMatmul& p, const Q8Rows& x, const float* xsum, int64_t n_begin,
                         int64_t n_end) {
  const int64_t width = (n_end - n_begin) / 32 * 32, m = x.m, n = p.n;
  if (width == 0) return n_begin;
  const int64_t blocks = p.k / p.block, per = p.block / 32;
  std::vector<float> f(static_cast<size_t>(m * width)), y(f.size(), 0.0f);
  constexpr int64_t kWide = 32 * kLinearPanels;
  for (int64_t wb = 0; wb < blocks; ++wb) {
    std::fill(f.begin(), f.end(), 0.0f);
    for (int64_t a = wb * per; a < (wb + 1) * per; ++a) {
      int64_t r = 0;
      for (; r + kLinearRows <= m; r += kLinearRows) {
        int64_t c = 0;
        for (; c + kWide <= width; c += kWide)
          BlockPanel<kLinearRows, kLinearPanels>(p, x, a, n_begin + c, r, f.data() + c, width);
        for (; c < width; c += 32) BlockPanel<kLinearRows, 1>(p, x, a, n_begin + c, r, f.data() + c, width);
      }
      for (; r < m; ++r) {
        int64_t c = 0;
        for (; c + kWide <= width; c += kWide)
          BlockPanel<1, kLinearPanels>(p, x, a, n_begin + c, r, f.data() + c, width);
        for (; c < width; c += 32) BlockPanel<1, 1>(p, x, a, n_begin + c, r, f.data() + c, width);
      }
    }
    for (int64_t r = 0; r < m; ++r) {
      const __m256 xs = _mm256_set1_ps(xsum != nullptr ? xsum[r * blocks + wb] : 0.0f);
      for (int64_t c = 0; c < width; c += 32) {
        const float* t = f.data() + r * width + c;  // Back to columns in order (Interleave4's lanes).
        const __m256 t0 = _mm256_loadu_ps(t), t1 = _mm256_loadu_ps(t + 8), t2 = _mm256_loadu_ps(t + 16),
                     t3 = _mm256_loadu_ps(t + 24);
        const __m256 v[4] = {_mm256_permute2f128_ps(t0, t1, 0x20), _mm256_permute2f128_ps(t2, t3, 0x20),
                             _mm256_permute2f128_ps(t0, t1, 0x31), _mm256_permute2f128_ps(t2, t3, 0x31)};
        for (int e = 0; e < 4; ++e) {
          const int64_t col = wb * n + n_begin + c + 8 * e;
          float* yv = y.data() + r * width + c + 8 * e;
          __m256 acc = _mm256_fmadd_ps(v[e], _mm256_loadu_ps(p.scale + col), _mm256_loadu_ps(yv));
          if (p.zero != nullptr) acc = _mm256_fmadd_ps(_mm256_loadu_ps(p.zero + col), xs, acc);
          _mm256_storeu_ps(yv, acc);
        }
      }
    }
  }
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < width; c += 8) {
      __m256 v = _mm256_loadu_ps(y.data() + r * width + c);
      if (p.bias != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(p.bias + n_begin + c));
      _mm256_storeu_ps(p.y + r * n + n_begin + c, v);
    }
  return n_begin + width;
}

}  // namespace KILN_INT8_NS
