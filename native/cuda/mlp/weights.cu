// The weight layouts the fused kernels read (weights.cuh); Mlp's constructor uploads them once.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "weights.cuh"

namespace gemmpad::cuda::layout {

std::vector<float> padded(const float* src, int rows, int cols, int prows, int pcols) {
    std::vector<float> out((size_t)prows * pcols, 0.0f);
    for (int r = 0; r < rows; ++r) std::memcpy(&out[(size_t)r * pcols], src + (size_t)r * cols, cols * sizeof(float));
    return out;
}

// A padded [K][N] matrix (K a multiple of 8, N of `cols`) in the fused kernels'
// fragment order (fused_common.cuh): [N/cols][K/8][32 lanes][cols/4]. Lane
// (g = lane / 4, t = lane % 4) holds M[8j+t][c] and M[8j+t+4][c] for each
// n-tile of the group, c = cols * p + g (+ 8): 16 columns for the pairs of
// n-tiles most kernels read, 8 for the split kernel's single n-tiles.
std::vector<float> fragment_order(const std::vector<float>& m, int K, int N, int cols) {
    std::vector<float> out((size_t)K * N);
    size_t i = 0;
    for (int p = 0; p < N / cols; ++p)
        for (int j = 0; j < K / 8; ++j)
            for (int lane = 0; lane < 32; ++lane) {
                const int g = lane / 4, t = lane % 4;
                for (int c = cols * p + g; c < cols * (p + 1); c += 8) {
                    out[i++] = m[(size_t)(8 * j + t) * N + c];
                    out[i++] = m[(size_t)(8 * j + t + 4) * N + c];
                }
            }
    return out;
}

// `m` rounded to tf32 (as tf32_round in fused_common.cuh) and stored as fp16 divided by `scale`,
// the power of two that brings the largest finite value into [2^14, 2^15): tf32 and fp16 both
// hold 10 bits of mantissa, so every value is exact down to 2^-29 of the largest (fp16's normal
// range), and below that off by less than 2^-39 of it. NaN and Inf stay NaN and Inf.
std::vector<__half> tf32_as_half(const std::vector<float>& m, float& scale) {
    std::vector<float> r(m.size());
    float top = 0.0f;
    for (size_t i = 0; i < m.size(); ++i) {
        uint32_t u;
        std::memcpy(&u, &m[i], 4);
        if (std::isfinite(m[i])) u = (u + 0x1000u) & 0xffffe000u;
        std::memcpy(&r[i], &u, 4);
        if (std::isfinite(r[i])) top = std::max(top, std::fabs(r[i]));
    }
    int exp = 0;
    if (top > 0.0f) {
        std::frexp(top, &exp);  // top = f * 2^exp, 0.5 <= f < 1
        exp -= 15;              // top / 2^exp in [2^14, 2^15)
    }
    scale = std::ldexp(1.0f, exp);
    std::vector<__half> out(m.size());
    for (size_t i = 0; i < m.size(); ++i) out[i] = __float2half_rn(std::ldexp(r[i], -exp));
    return out;
}

}  // namespace gemmpad::cuda::layout
