// SIMD helpers shared by the optimised CPU kernels (cpu.02 GEMM, cpu.mlp_sparse).
//
// How the runtime dispatch works, in one paragraph: the kernel bodies are
// templates written with GCC/Clang vector extensions (`Vec<W>` is W floats in
// one register), marked always_inline and free of any ISA-specific intrinsic.
// Each kernel file then defines one small entry point per instruction set,
// marked GEMMPAD_TARGET_AVX512 or GEMMPAD_TARGET_AVX2, which instantiates the
// body with W = 16 or W = 8. Inlining a plain function into a target-specific
// one is allowed, and the inlined code is compiled for the caller's ISA, so
// one source gives a zmm, a ymm and a baseline (W = 4, SSE2/NEON) build. The
// entry point is picked once at run time from what the CPU supports
// (`isa()`); `a * b + c` on vectors becomes an FMA because GCC contracts
// floating-point expressions by default (-ffp-contract=fast outside ISO mode).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "threads.h"

// Vector values passed between always_inline helpers never cross a real call,
// so the ABI note GCC prints for them does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define GEMMPAD_X86 1
#define GEMMPAD_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,fma,bmi,bmi2,popcnt")))
#define GEMMPAD_TARGET_AVX2 __attribute__((target("avx2,fma,bmi,bmi2,popcnt")))
#endif

#define GEMMPAD_INLINE inline __attribute__((always_inline))

namespace gemmpad::cpu {

enum class Isa { Generic = 0, Avx2 = 1, Avx512 = 2 };

inline const char* isa_name(Isa i) {
    switch (i) {
        case Isa::Avx512: return "avx512";
        case Isa::Avx2: return "avx2";
        default: return "generic";
    }
}

// The best instruction set this CPU supports. GEMMPAD_CPU_ISA=avx2|generic
// forces a lower one (the tests use it to exercise every path on one machine);
// asking for more than the CPU has is ignored rather than crashing.
inline Isa isa() {
    static const Isa chosen = [] {
        Isa best = Isa::Generic;
#if defined(GEMMPAD_X86)
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best = Isa::Avx2;
        if (best == Isa::Avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
            __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw"))
            best = Isa::Avx512;
#endif
        if (const char* env = std::getenv("GEMMPAD_CPU_ISA")) {
            const std::string want(env);
            for (Isa i : {Isa::Generic, Isa::Avx2, Isa::Avx512})
                if (want == isa_name(i) && static_cast<int>(i) <= static_cast<int>(best)) return i;
        }
        return best;
    }();
    return chosen;
}

// W floats in one SIMD register; aligned(4) so loads from any float address are legal.
template <int W>
struct VecT {
    typedef float type __attribute__((vector_size(4 * W), aligned(4)));
};
template <int W>
using Vec = typename VecT<W>::type;

template <int W>
GEMMPAD_INLINE Vec<W> loadv(const float* p) {
    Vec<W> v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

template <int W>
GEMMPAD_INLINE void storev(float* p, const Vec<W>& v) {
    std::memcpy(p, &v, sizeof v);
}

// max(0, v) with NumPy's NaN rule: `0 > NaN` is false, so NaN stays NaN,
// exactly like the naive kernel's `if (acc < 0) acc = 0`.
template <int W>
GEMMPAD_INLINE Vec<W> relu(const Vec<W>& v) {
    const Vec<W> zero = {};
    return zero > v ? zero : v;
}

// A 64-byte aligned float buffer that only grows: kernels keep one per thread
// (or per object) so a call at an already-seen size never allocates.
class GrowBuffer {
  public:
    float* get(size_t n) {
        if (n > cap_) {
            data_.reset(static_cast<float*>(::operator new(n * sizeof(float), std::align_val_t(64))));
            cap_ = n;
        }
        return data_.get();
    }
    size_t capacity() const { return cap_; }

  private:
    struct Free {
        void operator()(float* p) const { ::operator delete(p, std::align_val_t(64)); }
    };
    std::unique_ptr<float, Free> data_;
    size_t cap_ = 0;
};

inline size_t round_up(size_t x, size_t m) { return (x + m - 1) / m * m; }

}  // namespace gemmpad::cpu
