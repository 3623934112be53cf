// Operands on the device: float32 converted to a kernel's input type, and random fills for the
// benchmarks.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "gemmpad/kernel.h"

namespace gemmpad::cuda {

// Elementwise float32 -> `to` conversion on the device (round to nearest even; fp8 saturates
// past +-448), into n elements of that type at dst (a plain copy for F32).
void cast_f32(const float* src, void* dst, size_t n, InType to, cudaStream_t stream);

// Fill n elements of type `t` with uniform values in [lo, hi) from a counter-based hash;
// used by the benchmarks so timings never run on zeros.
void fill_uniform(void* dst, InType t, size_t n, unsigned seed, float lo, float hi, cudaStream_t stream);

}  // namespace gemmpad::cuda
