// Split-K: K cut into slices whose partial tiles are added up, either through distributed shared
// memory inside a thread-block cluster (cluster_splits, cluster_reduce_store) or through a global
// workspace and a second kernel (splitk_reduce).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "gemmpad/kernel.h"
#include "../ptx/cluster.cuh"
#include "../support/device.cuh"
#include "epilogue.cuh"

namespace gemmpad::cuda {

// Split-K over thread-block clusters (the slices of one output tile form a cluster and add up
// through distributed shared memory, cluster_reduce_store): how many slices for `tiles` tiles of
// k_tiles k-tiles each. As many as fill blocks_per_sm blocks on every SM, at most 8 (the
// portable cluster size), each slice at least one k-tile and none empty, and every cluster
// resident at once (on Hopper a GPC's SMs take whole clusters only: a cluster that waits for a
// second wave doubles the time). 1: no split (the tiles fill the SMs, or no clusters before
// sm_90). `kernel`, `threads`, `smem` as for resident_clusters.
int cluster_splits(const void* kernel, int threads, size_t smem, int tiles, int k_tiles, int blocks_per_sm);

// Split-K's second step: C = act(sum of the S partial [M, N] slices at ws + bias), the
// slices added in order (deterministic).
void splitk_reduce(int M, int N, int S, const float* ws, const float* bias, float* C, Act act, cudaStream_t stream);

#ifdef __CUDACC__  // device code: .cu files only
// Split-K's reduction inside a thread-block cluster, through distributed shared memory: every
// block of the cluster holds its partial sums of one [rows, cols] tile of C (row pitch `pitch`
// floats, cols and pitch multiples of 4) at `tile` in its own shared memory; block `rank` of S
// (at most 8) adds rows [rank * rows / S, ...) of all S tiles in rank order (the same sum
// whatever ran first), applies bias and act, and stores them at C[m0 + r][n0 + c]. `nthreads`
// threads of the block take part (tid: 0..nthreads-1). Only the tile's part inside C is read.
// cluster_reduce_store puts it between two cluster barriers (cluster_reduce_barriers). A remote
// load is slow (NOTES.md): a thread keeps BATCH items' loads in flight, BATCH * MAX_S = 16, and
// reads its own block's tile directly.
template <int MAX_S, int BATCH>
__device__ __forceinline__ void cluster_reduce_rows(const float* tile, int rows, int cols, int pitch, int m0, int n0,
                                                    int M, int N, const float* __restrict__ bias, Act act,
                                                    float* __restrict__ C, int tid, int nthreads) {
    const int S = (int)cluster_size(), rank = (int)cluster_rank();
    const int per = ceil_div(rows, S), r_begin = rank * per, r_end = min(min(rows, r_begin + per), M - m0);
    const int quads = ceil_div(min(cols, N - n0), 4), items = max(0, r_end - r_begin) * quads;
    const bool vec_store = N % 4 == 0 && (reinterpret_cast<uintptr_t>(C) & 15) == 0;
    unsigned base[MAX_S];
#pragma unroll
    for (int p = 0; p < MAX_S; ++p) base[p] = p < S ? cluster_map_u32(tile, p) : 0;
    for (int i0 = tid; i0 < items; i0 += BATCH * nthreads) {
        float4 v[BATCH][MAX_S];
        int r[BATCH], c[BATCH];
#pragma unroll
        for (int u = 0; u < BATCH; ++u) {
            const int i = i0 + u * nthreads;
            r[u] = i < items ? r_begin + i / quads : -1;
            c[u] = (i % quads) * 4;
            const int off = r[u] * pitch + c[u];
#pragma unroll
            for (int p = 0; p < MAX_S; ++p)
                if (r[u] >= 0 && p < S)
                    v[u][p] = p == rank ? *reinterpret_cast<const float4*>(tile + off)
                                        : ld_cluster_v4(base[p] + off * (int)sizeof(float));
        }
#pragma unroll
        for (int u = 0; u < BATCH; ++u) {
            if (r[u] < 0) break;
            float4 sum = v[u][0];
#pragma unroll
            for (int p = 1; p < MAX_S; ++p)
                if (p < S) {
                    sum.x += v[u][p].x; sum.y += v[u][p].y; sum.z += v[u][p].z; sum.w += v[u][p].w;
                }
            const int gr = m0 + r[u], gc = n0 + c[u];
            float* dst = C + (size_t)gr * N + gc;
            if (vec_store && gc + 3 < N) {
                *reinterpret_cast<float4*>(dst) =
                    make_float4(epilogue(sum.x, bias, gc, act), epilogue(sum.y, bias, gc + 1, act),
                                epilogue(sum.z, bias, gc + 2, act), epilogue(sum.w, bias, gc + 3, act));
            } else {
                const float w[4] = {sum.x, sum.y, sum.z, sum.w};
                for (int e = 0; e < 4 && gc + e < N; ++e) dst[e] = epilogue(w[e], bias, gc + e, act);  // bias has N
            }
        }
    }
}
// `reduce` between the reduction's two cluster barriers. Every thread of every block of the cluster
// must pass both: threads that add nothing (wgmma.cuh's producer warpgroup) call it with nothing.
template <class F>
__device__ __forceinline__ void cluster_reduce_barriers(F&& reduce) {
    cluster_arrive_release();
    cluster_wait_acquire();  // every block's partial tile is written
    reduce();
    cluster_arrive_relaxed();
    cluster_wait_acquire();  // no block leaves while another still reads its tile
}
__device__ __forceinline__ void cluster_reduce_store(const float* tile, int rows, int cols, int pitch, int m0, int n0,
                                                     int M, int N, const float* __restrict__ bias, Act act,
                                                     float* __restrict__ C, int tid, int nthreads) {
    cluster_reduce_barriers([&] {
        const unsigned S = cluster_size();
        if (S <= 2) cluster_reduce_rows<2, 8>(tile, rows, cols, pitch, m0, n0, M, N, bias, act, C, tid, nthreads);
        else if (S <= 4) cluster_reduce_rows<4, 4>(tile, rows, cols, pitch, m0, n0, M, N, bias, act, C, tid, nthreads);
        else cluster_reduce_rows<8, 2>(tile, rows, cols, pitch, m0, n0, M, N, bias, act, C, tid, nthreads);
    });
}
#endif  // __CUDACC__

}  // namespace gemmpad::cuda
