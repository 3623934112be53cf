// The TMA copy engine (sm_90): tensor maps (host) and bulk and tensor copies between global
// and shared memory (device), completion counted on an mbarrier or in bulk groups.
#pragma once

#include <cuda.h>  // CUtensorMap and its enums (types only)
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "smem.cuh"

namespace gemmpad::cuda {

// A 2-D TMA tensor map over a row-major [rows, cols] matrix of `type` (`elem_bytes`
// each) whose rows lie `ld` elements apart (0: cols), read in boxes of box_rows x
// box_cols; no interleave, zeros past the edges. cuTensorMapEncodeTiled comes from the
// driver at run time (no link against libcuda).
CUtensorMap tensor_map_2d(const void* base, CUtensorMapDataType type, size_t elem_bytes, uint64_t rows, uint64_t cols,
                          uint32_t box_rows, uint32_t box_cols, CUtensorMapSwizzle swizzle, const std::string& what,
                          uint64_t ld = 0);
// A TMA tensor map of `rank` (<= 5) dimensions, innermost first: sizes `dims`, the outer ones'
// strides in bytes (multiples of 16, in any order: a map can visit rows out of order) and a box
// of `box` elements. tensor_map_2d is this map for a matrix.
CUtensorMap tensor_map(const void* base, CUtensorMapDataType type, uint32_t rank, const uint64_t* dims,
                       const uint64_t* strides, const uint32_t* box, CUtensorMapSwizzle swizzle, const std::string& what);

#ifdef __CUDACC__  // device code: .cu files only
// `bytes` (a multiple of 16, both addresses 16-byte aligned) from global to
// shared memory by the copy engine; completion counted on `bar`.
__device__ __forceinline__ void bulk_copy(void* smem_dst, const void* gmem_src, unsigned bytes, uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                     smem_u32(smem_dst)),
                 "l"(gmem_src), "r"(bytes), "r"(smem_u32(bar))
                 : "memory");
#endif
}
// bulk_copy into the same shared-memory offset of every block of the cluster in `mask`
// (bit r: rank r), counted on the mbarrier at `bar`'s offset in each of them: one L2
// read, several deliveries. Their mbarriers must be initialised first (a cluster barrier).
__device__ __forceinline__ void bulk_copy_multicast(void* smem_dst, const void* gmem_src, unsigned bytes, uint64_t* bar,
                                                    uint16_t mask) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], %4;\n" ::"r"(
            smem_u32(smem_dst)),
        "l"(gmem_src), "r"(bytes), "r"(smem_u32(bar)), "h"(mask)
        : "memory");
#endif
}

// tma_load_2d into the same shared-memory offset of every block of the cluster in `mask` (bit
// r: rank r), counted on the mbarrier at `bar`'s offset in each: one L2 read, several deliveries.
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const CUtensorMap* map, int c_inner, int c_outer,
                                                      uint64_t* bar, uint16_t mask) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(
            smem_u32(dst)),
        "l"(map), "r"(c_inner), "r"(c_outer), "r"(smem_u32(bar)), "h"(mask)
        : "memory");
#endif
}
// One 2-D box of a TMA tensor map (tensor_map_2d) into shared memory (128-byte aligned),
// at column c_inner, row c_outer; completion counted on `bar`.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, int c_inner, int c_outer, uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
            smem_u32(dst)),
        "l"(map), "r"(c_inner), "r"(c_outer), "r"(smem_u32(bar))
        : "memory");
#endif
}

// One 4-D or 5-D box of a TMA tensor map (tensor_map) into shared memory at coordinates c0 (innermost)...
__device__ __forceinline__ void tma_load_4d(void* dst, const CUtensorMap* map, int c0, int c1, int c2, int c3,
                                            uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(
            smem_u32(dst)),
        "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(smem_u32(bar))
        : "memory");
#endif
}
__device__ __forceinline__ void tma_load_5d(void* dst, const CUtensorMap* map, int c0, int c1, int c2, int c3, int c4,
                                            uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile(
        "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], [%7];\n" ::"r"(
            smem_u32(dst)),
        "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(smem_u32(bar))
        : "memory");
#endif
}

// A 2-D box of shared memory (laid out as the tensor map's box, swizzle included) stored to the
// global tensor at column c_inner, row c_outer by the copy engine; parts past the tensor's edges
// are not written. The stores since the last bulk_commit() form one bulk group; bulk_wait_read<N>
// returns once at most N of this thread's groups still read shared memory, bulk_wait<N> once at
// most N are still writing.
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, const void* src, int c_inner, int c_outer) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(map),
                 "r"(c_inner), "r"(c_outer), "r"(smem_u32(src))
                 : "memory");
#endif
}
__device__ __forceinline__ void bulk_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
#endif
}
template <int N>
__device__ __forceinline__ void bulk_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}
#endif  // __CUDACC__

}  // namespace gemmpad::cuda
