// The Highway targets every SIMD file of the cpu backend compiles (include it before
// hwy/foreach_target.h): all attainable ones, dispatched at run time to the best of AVX3 / AVX2,
// with the portable baseline (EMU128, or HWY_SCALAR with GCC < 12.3, where Highway marks EMU128
// broken); SSSE3 and SSE4 are left out (no CPU that runs kiln lacks AVX2 and has them).
// No include guard: the defines are all it holds and each is set only once.

#ifndef HWY_COMPILE_ALL_ATTAINABLE
#define HWY_COMPILE_ALL_ATTAINABLE
#endif
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4)
#endif
