// The CPU forward pass of the 784-100-100-10 MLP: shared declarations.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../simd.h"

namespace gemmpad::cpu::mlp {

constexpr int kIn = 784, kH1 = 100, kH2 = 100, kOut = 10;
// Output widths padded to whole AVX-512 registers (zero weights, zero bias),
// so every row of a weight matrix is a whole number of vector loads.
constexpr int kH1P = 112, kH2P = 112, kOutP = 16;

// Weights laid out for cpu.mlp_sparse: W[l] is [inputs][padded outputs],
// row i holding the weights fed by input i, so skipping input i skips a row.
struct SparseWeights {
    const float* W1;  // [kIn][kH1P]
    const float* b1;  // [kH1P]
    const float* W2;  // [kH1][kH2P]
    const float* b2;  // [kH2P]
    const float* W3;  // [kH2][kOutP]
    const float* b3;  // [kOutP]
    // 0 * Inf is NaN, so a zero input may only be skipped when its row is finite.
    bool finite1, finite2, finite3;
};

// What an 8-bit pixel becomes: x * (1/255) in float32, the very operation gemmpad.inputs.preprocess
// applies to uint8 images (np.float32(1.0 / 255.0)), so the 8-bit path sees the same floats.
inline constexpr float kPixelScale = (float)(1.0 / 255.0);

// The input of one forward pass: float32 rows, or uint8 pixels scaled by kPixelScale
// (exactly one of the two is non-null), [batch, kIn] either way.
struct Input {
    const float* f32 = nullptr;
    const uint8_t* u8 = nullptr;
};

// Where a forward pass also leaves the post-ReLU hidden activations it computed, [batch, kH1]
// and [batch, kH2] (nullptr: not asked; then nothing is written and nothing is spent).
struct Hidden {
    float* h1 = nullptr;
    float* h2 = nullptr;
};

// probs[b, :] = softmax(relu(relu(x W1 + b1) W2 + b2) W3 + b3) for b < batch,
// with the zero entries of every layer's input skipped. Threads when batch is large.
// 8-bit rows are scaled into a row buffer as each row starts (no whole-batch float copy).
void sparse_forward(const SparseWeights& w, Input x, float* probs, int batch, Hidden hidden = {});

// Row-wise softmax in place on [rows, kOut], NumPy's NaN/Inf semantics.
void softmax_rows(float* z, int rows);

}  // namespace gemmpad::cpu::mlp
