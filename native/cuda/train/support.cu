// Small kernels around the training step: the per-epoch loss/accuracy sums
// and the bf16 copies used by the mixed-precision kernels (forward_l1_bf16, grad_update_bf16).
#include "train.cuh"

namespace gemmpad::cuda::train {
namespace {

constexpr int SUM_THREADS = 1024;

// One block; each thread walks a fixed stride, then a fixed tree: the sums do
// not depend on scheduling, so two runs report the same loss to the last bit.
__global__ void __launch_bounds__(SUM_THREADS) epoch_sums(const float* loss, const float* correct, int n, float* out) {
    __shared__ float sl[SUM_THREADS], sc[SUM_THREADS];
    float a = 0.0f, c = 0.0f;
    for (int i = threadIdx.x; i < n; i += SUM_THREADS) {
        a += loss[i];
        c += correct[i];
    }
    sl[threadIdx.x] = a;
    sc[threadIdx.x] = c;
    __syncthreads();
    for (int w = SUM_THREADS / 2; w > 0; w >>= 1) {
        if ((int)threadIdx.x < w) {
            sl[threadIdx.x] += sl[threadIdx.x + w];
            sc[threadIdx.x] += sc[threadIdx.x + w];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        out[0] = sl[0];
        out[1] = sc[0];
    }
}

__global__ void w1_to_bf16(const float* w1, __nv_bfloat16* w1b) {
    for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < IN * PN; e += gridDim.x * blockDim.x) {
        const int i = e / PN, j = e % PN;
        w1b[e] = __float2bfloat16(j < H1 ? w1[i * H1 + j] : 0.0f);
    }
}

__global__ void x_to_bf16(const float* x, __nv_bfloat16* xb, size_t count) {
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < count; e += (size_t)gridDim.x * blockDim.x)
        xb[e] = __float2bfloat16(x[e]);
}

}  // namespace

void launch_epoch_sums(const DeviceState& s, cudaStream_t st) {
    epoch_sums<<<1, SUM_THREADS, 0, st>>>(s.loss, s.correct, s.n, s.epoch_sums);
    CUDA_CHECK_LAUNCH("train.epoch_sums");
}

void launch_w1_to_bf16(const DeviceState& s, cudaStream_t st) {
    w1_to_bf16<<<ceil_div(IN * PN, 256), 256, 0, st>>>(s.w1, s.w1b);
    CUDA_CHECK_LAUNCH("train.w1_to_bf16");
}

void launch_x_to_bf16(const float* x, __nv_bfloat16* xb, size_t count, cudaStream_t st) {
    const size_t blocks = (count + 255) / 256;
    x_to_bf16<<<(int)(blocks < 4096 ? blocks : 4096), 256, 0, st>>>(x, xb, count);
    CUDA_CHECK_LAUNCH("train.x_to_bf16");
}

}  // namespace gemmpad::cuda::train
