// The CPU forward pass of the 784-100-100-10 MLP: shared declarations.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

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

// Weights laid out for cpu.mlp_amx (mlp_amx.cpp): each layer's W rounded to bf16 and cut into AMX B tiles
// (32 inputs by 16 outputs, 1 KB each, pairs of inputs side by side as TDPBF16PS reads them), inputs padded
// to whole tiles with zeros; the biases stay float32 (SparseWeights' padded ones).
struct TileWeights {
    std::vector<uint16_t> W1, W2, W3;
    const float *b1 = nullptr, *b2 = nullptr, *b3 = nullptr;
};
TileWeights pack_tile_weights(const float* W1, const float* W2, const float* W3, const SparseWeights& padded);

// "" when this CPU and kernel let cpu.mlp_amx run, else why not (one line, asked once).
const std::string& amx_unavailable();

// sparse_forward's result on AMX tiles: bf16 products summed in float32, 16 rows at a time.
// Call only where amx_unavailable() is "".
void tile_forward(const TileWeights& w, Input x, float* probs, int batch, Hidden hidden = {});

// One row's softmax, z [kOut] -> p [kOut], with the steps of gemmpad.runtime.model.softmax, so NaN and
// Inf come out the same: a NaN anywhere makes the max NaN and with it the whole row.
GEMMPAD_INLINE void softmax_row(const float* z, float* p) {
    float m = z[0];
    for (int j = 1; j < kOut; ++j) m = (z[j] > m || z[j] != z[j]) ? z[j] : m;
    float e[kOut], s = 0.0f;
    for (int j = 0; j < kOut; ++j) s += (e[j] = std::exp(z[j] - m));
    for (int j = 0; j < kOut; ++j) p[j] = e[j] / s;
}

// Row-wise softmax in place on [rows, kOut], NumPy's NaN/Inf semantics.
void softmax_rows(float* z, int rows);

}  // namespace gemmpad::cpu::mlp
