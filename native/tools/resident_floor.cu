// The resident kernel's floor on a host: host write -> a polling kernel sees it -> it answers ->
// the host sees the answer, with no network in between (native/cuda/mlp/NOTES.md, 2026-11-29 night).
// mode 0: one thread polls an 8-byte word and answers one word (fence 1: __threadfence_system first);
// mode 1: 392 threads read 784 stamped slots and the word in one look, as resident.cu's poll does;
// mode 2: mode 1 answering with 11 slots. Also the SM clock while it polls (clock64 / globaltimer).
// Run: nvcc -O3 -arch=sm_90a -o /tmp/resident_floor native/tools/resident_floor.cu && /tmp/resident_floor
#include <cstdio>
#include <cstdint>
#include <chrono>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
struct Box { alignas(128) uint64_t ctl; alignas(128) uint64_t x[784]; alignas(128) uint64_t ans[16]; alignas(128) uint64_t mhz; };
__device__ __forceinline__ uint64_t ldv(const uint64_t* p){uint64_t v;asm volatile("ld.volatile.global.u64 %0,[%1];":"=l"(v):"l"(p):"memory");return v;}
__device__ __forceinline__ void ldv2(const uint64_t* p,uint64_t&a,uint64_t&b){asm volatile("ld.volatile.global.v2.u64 {%0,%1},[%2];":"=l"(a),"=l"(b):"l"(p):"memory");}
__device__ __forceinline__ void stv(uint64_t* p,uint64_t v){asm volatile("st.volatile.global.u64 [%0],%1;"::"l"(p),"l"(v):"memory");}
__device__ __forceinline__ uint64_t gt(){uint64_t t;asm volatile("mov.u64 %0,%globaltimer;":"=l"(t));return t;}
__global__ void k(Box* b, int mode, int fence) {
  __shared__ uint64_t sc; uint64_t seen = 0; int tid = threadIdx.x;
  uint64_t c0 = clock64(), t0 = gt(); int n = 0;
  for (;;) {
    uint64_t a = 0, bb = 0, c;
    if (mode == 0) {
      if (tid == 0) { do { c = ldv(&b->ctl); } while ((uint32_t)c == seen && !(c >> 63)); sc = c; }
      __syncthreads(); c = sc; __syncthreads();
    } else {
      for (;;) {
        if (tid < 392) ldv2(&b->x[2*tid], a, bb);
        if (tid == 0) sc = ldv(&b->ctl);
        __syncthreads(); c = sc; uint32_t s = (uint32_t)c;
        bool ok = (c >> 63) || (s != seen && (tid >= 392 || ((uint32_t)(a>>32)==s && (uint32_t)(bb>>32)==s)));
        if (__syncthreads_and(ok)) break;
      }
    }
    if (c >> 63) break;
    seen = (uint32_t)c;
    if (mode == 2) { if (tid < 11) stv(&b->ans[tid], seen << 32 | tid); }
    else if (tid == 0) { if (fence) __threadfence_system(); stv(&b->ans[0], seen << 32); }
    if (++n == 1000 && tid == 0) { uint64_t dc = clock64() - c0, dt = gt() - t0; stv(&b->mhz, dc * 1000 / (dt ? dt : 1)); }
  }
}
int main() {
  Box* h; cudaHostAlloc(&h, sizeof(Box), cudaHostAllocMapped); Box* d; cudaHostGetDevicePointer(&d, h, 0);
  cudaStream_t st; cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  for (int mode = 0; mode < 3; ++mode) for (int fence = 0; fence < (mode == 0 ? 2 : 1); ++fence) {
    memset(h, 0, sizeof(Box));
    k<<<1, 512, 0, st>>>(d, mode, fence);
    std::vector<double> rt; uint32_t seq = 0;
    for (int i = 0; i < 20000; ++i) {
      ++seq; auto t0 = std::chrono::steady_clock::now();
      if (mode) for (int j = 0; j < 784; ++j) __atomic_store_n(&h->x[j], (uint64_t)seq << 32 | j, __ATOMIC_RELAXED);
      __atomic_store_n(&h->ctl, (uint64_t)seq, __ATOMIC_RELEASE);
      int need = mode == 2 ? 11 : 1;
      for (;;) { int got = 0; for (int j = 0; j < need; ++j) got += (uint32_t)(__atomic_load_n(&h->ans[j], __ATOMIC_ACQUIRE) >> 32) == seq; if (got == need) break; }
      auto t1 = std::chrono::steady_clock::now();
      if (i >= 1000) rt.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    __atomic_store_n(&h->ctl, (uint64_t)1 << 63, __ATOMIC_RELEASE); cudaStreamSynchronize(st);
    std::sort(rt.begin(), rt.end());
    printf("mode %d fence %d: median %.2f us p10 %.2f p90 %.2f  SM %llu MHz\n", mode, fence, rt[rt.size()/2], rt[rt.size()/10], rt[rt.size()*9/10], (unsigned long long)h->mhz);
  }
  // the host's own cost: writing 784 slots
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 10000; ++i) for (int j = 0; j < 784; ++j) __atomic_store_n(&h->x[j], (uint64_t)i << 32 | j, __ATOMIC_RELAXED);
  printf("host: 784 slot stores %.3f us\n", std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 10000);
  return 0;
}
