// The native training engine for the 784-100-100-10 MLP: shapes, the device
// state every kernel sees, and the launchers of the step kernels.
//
// One SGD step is three launches, whatever the batch size (or, fp32, every step of an epoch in one
// persistent launch: epoch_persistent.cu):
//   forward_l1_fp32: layer 1, split over K (X[idx] @ W1, partial sums per K slice)
//   rows: everything that is row-local: sum the K slices, bias, ReLU, layers 2
//      and 3, softmax cross-entropy, and the backward pass of the deltas
//      (dZ3 -> dZ2 -> dZ1), one block per 4 rows of the batch
//   grad_update_fp32: all weight gradients dW = A^T dZ (bias = an extra input column of
//      ones) fused with the optimiser update (SGD, momentum, weight decay)
// The mixed-precision mode swaps forward_l1_fp32 and grad_update_fp32 for bf16 tensor-core versions
// (forward_l1_bf16, grad_update_bf16) that read a bf16 copy of the dataset and of W1; master weights,
// velocities, layers 2-3 and the softmax stay fp32.
//
// A whole epoch of these launches is captured once into a CUDA graph that
// reads the batch order and the hyperparameters from device memory, so an
// epoch costs one graph launch; without the graph the same launches take about a
// quarter longer. The epoch is then the sum of the three kernels' latencies: at
// these sizes each is bound by dependent memory round trips and block-wide syncs,
// not by FLOPs (~0.1 GFLOP a step). Against torch: the README's training table.
// Figure (H200 2026-12-01, assets/benchmarks/h200/train.json): native fp32: an epoch of 60,000 images 13.2 ms at batch 64, 4.9 at batch 256 (epoch_ms_median)
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "../common.cuh"
#include "trainer.h"

namespace gemmpad::cuda::train {

inline constexpr int IN = 784, H1 = 100, H2 = 100, OUT = 10;
inline constexpr int KSLICES = 7;          // layer-1 forward: K = 784 split into 7 slices of 112
inline constexpr int KSLICE = IN / KSLICES;
inline constexpr int W1_KTILES = 25;       // the persistent epoch's layer-1 partial sums: one per 32-row tile of W1
inline constexpr int PN = 112;             // padded row length of the partial sums and of bf16 W1 / dZ1 (7 x 16)
inline constexpr int ROWS_PER_BLOCK = 8;   // rows: at most, one warp per row for the softmax

// Everything the step kernels touch. All device pointers, allocated once.
struct DeviceState {
    int n = 0;                 // dataset rows
    int batch = 0;             // full batch size
    int batch_pad = 0;         // batch rounded up to 16 (tensor-core tiles)
    const float* x = nullptr;  // [n, 784] fp32 (fp32 mode)
    const __nv_bfloat16* xb = nullptr;  // [n, 784] bf16 (mixed mode)
    const int32_t* labels = nullptr;    // [n]
    const float* targets = nullptr;     // [n, 10] soft targets, or null: the labels' one-hot rows
    const int32_t* perm = nullptr;      // [n] batch order of the current epoch
    const Hyper* hyper = nullptr;
    // parameters (fp32 master), velocities, bf16 copy of W1 [784, PN]
    float *w1, *b1, *w2, *b2, *w3, *b3;
    float *v_w1, *v_b1, *v_w2, *v_b2, *v_w3, *v_b3;
    __nv_bfloat16* w1b = nullptr;
    // activations and deltas of one step
    float* part;   // [KSLICES (W1_KTILES in fp32 mode), batch_pad, PN] layer-1 partial sums
    float* h1;     // [batch, 100]
    float* h2;     // [batch, 100]
    float* dz1;    // [batch, 100]
    float* dz2;    // [batch, 100]
    float* dz3;    // [batch, 10]
    __nv_bfloat16* dz1b = nullptr;  // [batch_pad, PN] (mixed mode)
    // per-sample loss and correctness, in epoch order
    float* loss;       // [n]
    float* correct;    // [n] 1.0 / 0.0
    float* epoch_sums; // [2]: sum of loss, sum of correct
};

// One step on batch rows perm[offset, offset + rows).
void launch_forward_l1_fp32(const DeviceState& s, int offset, int rows, cudaStream_t st);
void launch_rows(const DeviceState& s, int offset, int rows, bool mixed, cudaStream_t st);
// Opts rows into > 48 KB of shared memory; call once before launching (not while capturing).
void setup_rows_kernel();
void launch_grad_update_fp32(const DeviceState& s, int offset, int rows, cudaStream_t st);
void launch_forward_l1_bf16(const DeviceState& s, int offset, int rows, cudaStream_t st);
void launch_grad_update_bf16(const DeviceState& s, int offset, int rows, cudaStream_t st);
// The persistent epoch (fp32): its grid (one block an SM), or 0 where the GPU cannot run it (no cooperative
// launch, under 120 SMs: a block a gradient tile, or its shared memory does not fit); call before
// launching (not while capturing).
int epoch_persistent_grid();
// Every step of the epoch in one cooperative launch; part must hold W1_KTILES slices, s.batch at most
// PERSISTENT_MAX_BATCH.
void launch_epoch_persistent(const DeviceState& s, int grid, cudaStream_t st);
// Sums loss and correct over the epoch into epoch_sums.
void launch_epoch_sums(const DeviceState& s, cudaStream_t st);
// W1 (fp32) -> w1b (bf16, padded to PN columns with zeros).
void launch_w1_to_bf16(const DeviceState& s, cudaStream_t st);
// Dataset fp32 -> bf16.
void launch_x_to_bf16(const float* x, __nv_bfloat16* xb, size_t count, cudaStream_t st);

}  // namespace gemmpad::cuda::train
