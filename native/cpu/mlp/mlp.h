// The CPU forward pass of the 784-100-100-10 MLP: shared declarations.
#pragma once

#include <cstddef>

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

// probs[b, :] = softmax(relu(relu(x W1 + b1) W2 + b2) W3 + b3) for b < batch,
// with the zero entries of every layer's input skipped. Threads when batch is large.
void sparse_forward(const SparseWeights& w, const float* x, float* probs, int batch);

// Row-wise softmax in place on [rows, kOut], NumPy's NaN/Inf semantics.
void softmax_rows(float* z, int rows);

}  // namespace gemmpad::cpu::mlp
