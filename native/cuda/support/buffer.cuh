// Device memory that only grows: the one device-buffer type of the GEMM side (the numpy
// entry points' operands, the split-K and relayout workspace). Not thread-safe: one host thread
// drives the GPU in gemmpad.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "check.cuh"

namespace gemmpad::cuda {

// A device allocation that only grows: reserve() reallocates (contents lost) only past its size.
// The same interface as the MLP's own DeviceBuffer (mlp/mlp.cuh), which this is meant to replace:
// that is why the fields are public and there is no destructor (owners release, or never do for
// buffers that live until exit, when the driver may already be gone). Until mlp/ switches, this
// one lives in namespace `support` so that the two never meet under one mangled name.
namespace support {
struct DeviceBuffer {
    void* ptr = nullptr;
    size_t bytes = 0;
    void* reserve(size_t want) {
        if (want > bytes) {
            release();
            CUDA_CHECK(cudaMalloc(&ptr, want));
            bytes = want;
        }
        return ptr;
    }
    void release() noexcept {
        if (ptr) cudaFree(ptr);  // best effort: may run while the driver shuts down
        ptr = nullptr;
        bytes = 0;
    }
};
}  // namespace support
using support::DeviceBuffer;

// A device scratch buffer that only grows (split-K partial sums and the like).
// Not thread-safe: one host thread drives the GPU in gemmpad.
void* workspace(size_t bytes);

}  // namespace gemmpad::cuda
