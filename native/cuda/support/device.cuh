// The device a kernel runs on, and how to launch on it: its properties (read once), the
// shared-memory opt-in limit, launch configurations with thread-block clusters and how many
// clusters fit, and the small arithmetic every launch does (ceil_div, operand widths).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "gemmpad/kernel.h"
#include "check.cuh"

namespace gemmpad::cuda {

// Properties of the current device, read once.
const cudaDeviceProp& device_props();

// The architectures this module was compiled for, as CMake was given them
// ("80-real,86-real,89-real,90a-real,90-virtual"; native/CMakeLists.txt), for `gemmpad info`.
std::string build_arch_list();

// Largest dynamic shared memory a block may opt into on this device
// (99 KB on consumer Ampere/Ada, 227 KB on Hopper). Kernels size their
// tiles against this instead of assuming Hopper.
size_t max_smem_per_block_optin();
// Throws std::runtime_error("<what> needs N bytes of shared memory per block; this device
// allows M") when `bytes` exceeds max_smem_per_block_optin().
void require_smem(size_t bytes, const std::string& what);

// Bytes per operand element of `t`.
inline constexpr size_t in_bytes(InType t) { return t == InType::F32 ? sizeof(float) : t == InType::F8E4M3 ? 1 : 2; }

// a / b rounded up (b > 0). For a > 0 without forming a + b - 1, which wraps for a near 2^31
// (a (2^31 - 1) x 1 GEMM); a <= 0 keeps the old formula, so no caller sees another value.
inline constexpr int ceil_div(int a, int b) { return a > 0 ? (a - 1) / b + 1 : (a + b - 1) / b; }

// Whether an fp32 GEMM may move A, B and C as float4 (06, 07, 19): every row a whole number of
// float4s (K and N multiples of 4) and every matrix 16-byte aligned, so no float4 straddles a row.
inline bool float4_rows(const GemmProblem& p) {
    const auto at16 = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; };
    return p.K % 4 == 0 && p.N % 4 == 0 && at16(p.A) && at16(p.B) && at16(p.C);
}

// How many clusters of `size` (2..8) blocks of `kernel` (`threads` threads, `smem` bytes of
// dynamic shared memory, its attribute already set) can be resident at once; 0 where none can
// (no clusters before sm_90). The device is queried once per kernel.
int resident_clusters(const void* kernel, int threads, size_t smem, int size);

// A cudaLaunchKernelEx configuration; with more than one block in `cluster` (an int: blocks
// along x) the blocks run in thread-block clusters of that shape (sm_90), described in
// attr[0], which must outlive the launch.
inline cudaLaunchConfig_t make_launch_config(dim3 grid, dim3 block, size_t smem, cudaStream_t stream, dim3 cluster,
                                             cudaLaunchAttribute* attr) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    if (cluster.x * cluster.y * cluster.z > 1) {
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = cluster.x;
        attr[0].val.clusterDim.y = cluster.y;
        attr[0].val.clusterDim.z = cluster.z;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
    }
    return cfg;
}

}  // namespace gemmpad::cuda
