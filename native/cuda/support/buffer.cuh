// Memory that only grows: the one device-buffer type (GEMM operands, workspaces, the MLP's and
// the trainer's arrays) and its pinned, mapped host twin (the MLP's staging). Not thread-safe:
// one host thread drives the GPU in gemmpad.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "check.cuh"

namespace gemmpad::cuda {

// Runs before every free and pinned allocation below. The driver may make those wait for all
// work on the device, and a persistent kernel (mlp/resident.cuh) never ends on its own: its
// owner installs a guard that stops such kernels first. Returns the previous guard.
using FreeGuard = void (*)() noexcept;
FreeGuard set_free_guard(FreeGuard guard);
void run_free_guard() noexcept;

// A device allocation: reserve() reallocates (contents lost) only past its size. Fields are
// public and there is no destructor: owners release, or never do for buffers that live until
// exit, when the driver may already be gone.
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
        if (ptr) {
            run_free_guard();
            cudaFree(ptr);  // best effort: may run while the driver shuts down
        }
        ptr = nullptr;
        bytes = 0;
    }
};

// Pinned host memory mapped into the device's address space: `ptr` for the host, `device` for kernels.
struct PinnedBuffer {
    void* ptr = nullptr;
    void* device = nullptr;
    size_t bytes = 0;
    void* reserve(size_t want) {
        if (want > bytes) {
            release();
            run_free_guard();
            CUDA_CHECK(cudaHostAlloc(&ptr, want, cudaHostAllocMapped));
            bytes = want;
            CUDA_CHECK(cudaHostGetDevicePointer(&device, ptr, 0));
        }
        return ptr;
    }
    void release() noexcept {
        if (ptr) {
            run_free_guard();
            cudaFreeHost(ptr);
        }
        ptr = device = nullptr;
        bytes = 0;
    }
};

// A device scratch buffer that only grows (split-K partial sums and the like).
void* workspace(size_t bytes);

}  // namespace gemmpad::cuda
