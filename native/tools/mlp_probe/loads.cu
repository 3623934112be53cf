// Modes "loads" (and part of "all" and "final"): launch floors and dependent-load latencies, the SM
// clock, load rates (16-byte loads, bulk copies, multicast), the cluster barrier, mma.sync throughput,
// and the launch / completion alternatives for one small kernel. Its toy kernels live here.
#include "probe.cuh"

namespace probe {

namespace {

__global__ void pcie_kernel(const float4* __restrict__ x, float* __restrict__ out, int n4, int write) {
    float4 v = threadIdx.x < n4 ? x[threadIdx.x] : make_float4(0, 0, 0, 0);
    float s = v.x + v.y + v.z + v.w;
    if (write && threadIdx.x < 10) out[threadIdx.x] = s;
}

__global__ void write_kernel(float* __restrict__ out) {
    if (threadIdx.x < 10) out[threadIdx.x] = threadIdx.x;
}

__device__ __forceinline__ unsigned long long globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void clock_kernel(long long* res, long long cycles) {
    const long long c0 = clock64();
    const unsigned long long t0 = globaltimer();
    while (clock64() - c0 < cycles) {
    }
    const long long c1 = clock64();
    const unsigned long long t1 = globaltimer();
    res[0] = c1 - c0;
    res[1] = (long long)(t1 - t0);
}

// Dependent loads: latency of one access to `p` (host-mapped, L2 or HBM).
__global__ void chase_kernel(const unsigned* p, int n, unsigned* sink, long long* cycles) {
    unsigned i = 0;
    const long long c0 = clock64();
    for (int k = 0; k < n; ++k) i = p[i];
    const long long c1 = clock64();
    sink[0] = i;
    cycles[0] = (c1 - c0) / n;
}

// mma.m16n8k8 tf32 throughput: 8 independent accumulators per warp.
__global__ void mma_kernel(int iters, float* sink) {
    float d[8][4] = {};
    uint32_t a[4] = {0x3f800000u, 0x3f000000u, 0x3e800000u, 0x3f800000u};
    uint32_t b0 = 0x3f800000u ^ threadIdx.x, b1 = 0x3e000000u;
    for (int it = 0; it < iters; ++it)
#pragma unroll
        for (int j = 0; j < 8; ++j)
            asm volatile(
                "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                "{%0,%1,%2,%3};\n"
                : "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
                : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    float s = 0;
    for (int j = 0; j < 8; ++j) s += d[j][0] + d[j][1] + d[j][2] + d[j][3];
    if (s == 12345.0f) sink[0] = s;
}

// 8 independent 16-byte loads per thread in flight. mode 0: block b reads its own region
// of n4 float4s; 1: every block reads the same n4 (from the start); 7: the same, block b
// starting at (b % 7) / 7 of it.
__global__ void ldg8_kernel(const float4* __restrict__ src, int n4, int mode, float* sink) {
    const float4* base = mode == 0 ? src + (size_t)blockIdx.x * n4 : src;
    const int start = mode > 1 ? (int)((long long)(blockIdx.x % mode) * n4 / mode) : 0;
    float4 acc = make_float4(0, 0, 0, 0);
    for (int i0 = 0; i0 < n4; i0 += 8 * blockDim.x) {
        float4 v[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const int i = i0 + j * blockDim.x + threadIdx.x;
            v[j] = i < n4 ? __ldg(base + (start + i) % n4) : make_float4(0, 0, 0, 0);
        }
#pragma unroll
        for (int j = 0; j < 8; ++j) acc.x += v[j].x, acc.y += v[j].y, acc.z += v[j].z, acc.w += v[j].w;
    }
    if (acc.x + acc.y + acc.z + acc.w == 12345.0f) sink[0] = 1;
}

// `pieces` bulk copies of `piece` bytes into shared memory, one mbarrier. distinct: block b
// reads its own bytes; else all blocks read the same.
__global__ void bulk_kernel(const char* src, unsigned piece, int pieces, int distinct, float* sink) {
    extern __shared__ __align__(128) unsigned char buf[];
    __shared__ __align__(8) uint64_t bar;
    if (threadIdx.x == 0) {
        mbar_init(&bar, 1);
        mbar_init_fence();
        mbar_expect_tx(&bar, piece * pieces);
        const char* s0 = src + (distinct ? (size_t)blockIdx.x * piece * pieces : 0);
        for (int p = 0; p < pieces; ++p) bulk_copy(buf + (size_t)p * piece, s0 + (size_t)p * piece, piece, &bar);
    }
    __syncthreads();
    mbar_wait(&bar, 0);
    if (buf[threadIdx.x] == 123 && buf[piece * pieces - 1 - threadIdx.x] == 45) sink[0] = 1;
}

// The same bytes to every block of a cluster of C: block r issues pieces r, r + C, ...
// with .multicast::cluster (one L2 read, C deliveries).
__global__ void mcast_kernel(const char* src, unsigned piece, int pieces, int C, float* sink) {
    extern __shared__ __align__(128) unsigned char buf[];
    __shared__ __align__(8) uint64_t bar;
    const unsigned rank = cluster_rank();
    if (threadIdx.x == 0) {
        mbar_init(&bar, 1);
        mbar_init_fence();
        mbar_expect_tx(&bar, piece * pieces);
    }
    __syncthreads();
    cluster_arrive_release();
    cluster_wait_acquire();  // every block's barrier is initialised before any copy lands
    if (threadIdx.x == 0)
        for (int p = (int)rank; p < pieces; p += C)
            bulk_copy_multicast(buf + (size_t)p * piece, src + (size_t)p * piece, piece, &bar,
                                (uint16_t)((1u << C) - 1));
    mbar_wait(&bar, 0);
    cluster_arrive_release();
    cluster_wait_acquire();
    if (buf[threadIdx.x] == 123 && buf[piece * pieces - 1 - threadIdx.x] == 45) sink[0] = 1;
}

__global__ void cbar_kernel(int n) {
    for (int i = 0; i < n; ++i) {
        cluster_arrive_release();
        cluster_wait_acquire();
    }
}

__global__ void flag_kernel(const float4* __restrict__ x, float* __restrict__ out, volatile unsigned* flag) {
    const float4 v = threadIdx.x < 196 ? x[threadIdx.x] : make_float4(0, 0, 0, 0);
    const float s = v.x + v.y + v.z + v.w;
    if (threadIdx.x < 10) out[threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence_system();
        *flag = 1;
    }
}

struct ToyParam {
    float x[784];
};
__global__ void param_kernel(ToyParam p, float* __restrict__ out) {
    float s = 0;
    for (int i = threadIdx.x; i < 784; i += blockDim.x) s += p.x[i];
    if (threadIdx.x < 10) out[threadIdx.x] = s;
}

void launch_cluster(cudaStream_t st, void (*k)(int), int blocks, int threads, int cluster, int n) {
    cudaLaunchAttribute attr[1];
    const cudaLaunchConfig_t cfg = make_launch_config(dim3(blocks), dim3(threads), 0, st, cluster, attr);
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, k, n));
}


}  // namespace

void Probe::loads() {
    if (mode != "loads") {  // "loads": the load-rate section only
        std::printf("\n== floors (graph: event, kernel, event; kernel = events, e2e = host launch + sync), median of 2000\n");
        auto row = [](const char* what, Timing t) { std::printf("  %-58s kernel %6.2f us  e2e %6.2f us\n", what, t.kernel_us, t.e2e_us); };
        row("empty kernel, 1 block x 32", time_graph(st, [&] { launch_empty(st, 1, 32, 1); }, 2000));
        if (mode == "all") row("empty kernel, 7 blocks x 448", time_graph(st, [&] { launch_empty(st, 7, 448, 1); }, 2000));
        row("empty kernel, 7 blocks x 448, cluster 7", time_graph(st, [&] { launch_empty(st, 7, 448, 7); }, 2000));
        row("empty kernel, 112 blocks x 448, cluster 7", time_graph(st, [&] { launch_empty(st, 112, 448, 7); }, 2000));
        row("empty kernel, 128 blocks x 224", time_graph(st, [&] { launch_empty(st, 128, 224, 1); }, 2000));
        row("20 empty kernels back to back (per kernel)", time_graph(st, [&] { launch_empty(st, 7, 448, 7); }, 500, 20));
        row("read 3136 B mapped host (196 thr) + write 40 B mapped", time_graph(st, [&] {
                pcie_kernel<<<1, 224, 0, st>>>(reinterpret_cast<const float4*>(x_map), out_map, 196, 1);
            }, 2000));
        row("read 3136 B device + write 40 B device", time_graph(st, [&] {
                pcie_kernel<<<1, 224, 0, st>>>(reinterpret_cast<const float4*>(x_dev), out_dev, 196, 1);
            }, 2000));
        row("write 40 B mapped host only", time_graph(st, [&] { write_kernel<<<1, 32, 0, st>>>(out_map); }, 2000));
        row("memcpy node H2D 3136 B, empty kernel, memcpy node D2H 40 B",
            time_graph(st, [&] { launch_empty(st, 1, 32, 1); }, 2000, 1, {}, {},
                       [&] { CUDA_CHECK(cudaMemcpyAsync(x_dev, x_host, 3136, cudaMemcpyHostToDevice, st)); },
                       [&] { CUDA_CHECK(cudaMemcpyAsync(out_host, out_dev, 40, cudaMemcpyDeviceToHost, st)); }));
        row("memcpy node H2D 3136 B, empty kernel, (out mapped)",
            time_graph(st, [&] { launch_empty(st, 1, 32, 1); }, 2000, 1, {}, {},
                       [&] { CUDA_CHECK(cudaMemcpyAsync(x_dev, x_host, 3136, cudaMemcpyHostToDevice, st)); }));

        // latency of single dependent accesses
        {
            const int n = 64;
            unsigned *chain_h, *chain_map, *chain_d, *sink;
            long long *cyc, *cyc_dev;
            CUDA_CHECK(cudaHostAlloc(&chain_h, 4096 * 4, cudaHostAllocMapped));
            CUDA_CHECK(cudaHostGetDevicePointer((void**)&chain_map, chain_h, 0));
            const size_t big = (size_t)256 << 20;  // 1 GB of unsigned: beyond L2
            CUDA_CHECK(cudaMalloc(&chain_d, big * 4));
            CUDA_CHECK(cudaMalloc(&sink, 64));
            CUDA_CHECK(cudaHostAlloc(&cyc, 64, cudaHostAllocMapped));  // read after sync
            CUDA_CHECK(cudaHostGetDevicePointer((void**)&cyc_dev, cyc, 0));
            for (int i = 0; i < 4096; ++i) chain_h[i] = (i + 64 * 7) % 4096;  // 64 steps, different lines
            std::vector<unsigned> hop(4096);
            for (int i = 0; i < 4096; ++i) hop[i] = (i + 97) % 4096;
            CUDA_CHECK(cudaMemcpy(chain_d, hop.data(), 4096 * 4, cudaMemcpyHostToDevice));
            chase_kernel<<<1, 1, 0, st>>>(chain_map, n, sink, cyc_dev);
            CUDA_CHECK(cudaStreamSynchronize(st));
            chase_kernel<<<1, 1, 0, st>>>(chain_map, n, sink, cyc_dev);
            CUDA_CHECK(cudaStreamSynchronize(st));
            const long long host_cyc = cyc[0];
            chase_kernel<<<1, 1, 0, st>>>(chain_d, n, sink, cyc_dev);  // warms L2 with the chain
            CUDA_CHECK(cudaStreamSynchronize(st));
            chase_kernel<<<1, 1, 0, st>>>(chain_d, n, sink, cyc_dev);
            CUDA_CHECK(cudaStreamSynchronize(st));
            const long long l2_cyc = cyc[0];
            // HBM: a chain with ~16 MB hops (fresh lines every time)
            for (int i = 0; i < n + 1; ++i) {
                const unsigned at = (unsigned)((size_t)i * 3900000u), next = (unsigned)((size_t)(i + 1) * 3900000u);
                CUDA_CHECK(cudaMemcpy(chain_d + at, &next, 4, cudaMemcpyHostToDevice));
            }
            void* flush;
            CUDA_CHECK(cudaMalloc(&flush, 256 << 20));
            CUDA_CHECK(cudaMemset(flush, 1, 256 << 20));  // evict L2
            chase_kernel<<<1, 1, 0, st>>>(chain_d, n, sink, cyc_dev);
            CUDA_CHECK(cudaStreamSynchronize(st));
            std::printf("  dependent load latency (cycles): mapped host %lld, L2 %lld, HBM %lld\n", host_cyc, l2_cyc, cyc[0]);
            // clock under the same cadence as a batch-1 loop (launch, sync, repeat)
            std::vector<double> mhz;
            for (int i = 0; i < 300; ++i) {
                clock_kernel<<<1, 1, 0, st>>>(cyc_dev, 20000);
                CUDA_CHECK(cudaStreamSynchronize(st));
                mhz.push_back(cyc[1] > 0 ? 1000.0 * cyc[0] / cyc[1] : 0);
            }
            std::printf("  SM clock from clock64 / globaltimer over 20000 cycles, launch-sync cadence: median %.0f MHz (min %.0f, max %.0f)\n",
                        median(mhz), *std::min_element(mhz.begin(), mhz.end()), *std::max_element(mhz.begin(), mhz.end()));
            CUDA_CHECK(cudaFree(flush));
            CUDA_CHECK(cudaFree(chain_d));
            CUDA_CHECK(cudaFreeHost(chain_h));
            CUDA_CHECK(cudaFree(sink));
            CUDA_CHECK(cudaFreeHost(cyc));
        }
    }  // mode != "loads"
    // Loads: in-flight LSU loads vs bulk copies vs multicast; rotation; cluster barrier
    {
        float* sink;
        CUDA_CHECK(cudaMalloc(&sink, 64));
        const double fl = time_graph(st, [&] { launch_empty(st, 1, 32, 1); }, 1000).kernel_us;
        auto bw = [&](const char* what, double bytes_per_block, int blocks, Timing t) {
            std::printf("  %-66s %6.2f us (+%5.2f over empty) = %5.1f GB/s per SM, %5.2f TB/s total\n", what,
                        t.kernel_us, t.kernel_us - fl, bytes_per_block / ((t.kernel_us - fl) * 1e3),
                        bytes_per_block * blocks / ((t.kernel_us - fl) * 1e6));
        };
        const float4* xd4 = reinterpret_cast<const float4*>(x_dev);
        const float4* w14 = reinterpret_cast<const float4*>(fw.w1f);
        bw("LSU 8 in flight, 7 blocks x 448, own 50 KB each", 50176, 7,
           time_graph(st, [&] { ldg8_kernel<<<7, 448, 0, st>>>(xd4, 3136, 0, sink); }, 1000));
        bw("LSU 8 in flight, 14 blocks x 448, own 25 KB each", 25088, 14,
           time_graph(st, [&] { ldg8_kernel<<<14, 448, 0, st>>>(xd4, 1568, 0, sink); }, 1000));
        bw("LSU 8 in flight, 132 blocks x 448, own 96 KB each", 6080 * 16, 132,
           time_graph(st, [&] { ldg8_kernel<<<132, 448, 0, st>>>(xd4, 6080, 0, sink); }, 300));
        bw("LSU 8 in flight, 128 blocks x 448, same 351 KB (W1)", 351232, 128,
           time_graph(st, [&] { ldg8_kernel<<<128, 448, 0, st>>>(w14, 21952, 1, sink); }, 300));
        bw("LSU 8 in flight, 128 blocks x 448, same 351 KB, rotated start", 351232, 128,
           time_graph(st, [&] { ldg8_kernel<<<128, 448, 0, st>>>(w14, 21952, 7, sink); }, 300));
        bw("LSU 8 in flight, 128 blocks x 224, same 351 KB, rotated start", 351232, 128,
           time_graph(st, [&] { ldg8_kernel<<<128, 224, 0, st>>>(w14, 21952, 7, sink); }, 300));
        const char* xc = reinterpret_cast<const char*>(x_dev);
        const char* wc = reinterpret_cast<const char*>(fw.w1f);
        CUDA_CHECK(cudaFuncSetAttribute(bulk_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 196608));
        CUDA_CHECK(cudaFuncSetAttribute(mcast_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 196608));
        bw("bulk copy, 7 blocks, own 49 KB each (1 copy)", 50176, 7,
           time_graph(st, [&] { bulk_kernel<<<7, 128, 50176, st>>>(xc, 50176, 1, 1, sink); }, 1000));
        bw("bulk copy, 14 blocks, own 25 KB each (1 copy)", 25088, 14,
           time_graph(st, [&] { bulk_kernel<<<14, 128, 25088, st>>>(xc, 25088, 1, 1, sink); }, 1000));
        bw("bulk copy, 132 blocks, own 94 KB each (2 copies)", 96256, 132,
           time_graph(st, [&] { bulk_kernel<<<132, 128, 96256, st>>>(xc, 48128, 2, 1, sink); }, 300));
        bw("bulk copy, 128 blocks, same 192 KB of W1 (4 copies)", 196608, 128,
           time_graph(st, [&] { bulk_kernel<<<128, 128, 196608, st>>>(wc, 49152, 4, 0, sink); }, 300));
        for (int C : {2, 4}) {
            const std::string what = "multicast, cluster " + std::to_string(C) + ", 128 blocks, same 192 KB of W1";
            bw(what.c_str(), 196608, 128, time_graph(st, [&] {
                   cudaLaunchAttribute attr[1];
                   const cudaLaunchConfig_t cfg = make_launch_config(dim3(128), dim3(128), 196608, st, C, attr);
                   CUDA_CHECK(cudaLaunchKernelEx(&cfg, mcast_kernel, wc, 49152u, 4, C, sink));
               }, 300));
        }
        const Timing cb = time_graph(st, [&] { launch_cluster(st, cbar_kernel, 7, 448, 7, 100); }, 300);
        std::printf("  cluster barrier (arrive.release + wait.acquire), cluster of 7 x 448: %.3f us each\n",
                    (cb.kernel_us - fl) / 100);
        const int iters = 4096;
        const Timing t = time_graph(st, [&] { mma_kernel<<<132, 256, 0, st>>>(iters, sink); }, 50);
        const double flops = 132.0 * 8 * iters * 8 * 16 * 8 * 8 * 2;
        std::printf("  mma.sync m16n8k8 tf32, 132 x 8 warps x 8 chains: %.1f us = %.0f TFLOP/s\n", t.kernel_us,
                    flops / (t.kernel_us * 1e-6) / 1e12);
        CUDA_CHECK(cudaFree(sink));
    }
    if (mode == "loads") return;  // "loads": the load rates only
    // Launch and completion alternatives for one small kernel (reads 3136 B mapped, writes 40 B mapped)
    {
        std::printf("\n== launch / completion alternatives (small kernel: 3136 B mapped in, 40 B mapped out), median of 2000\n");
        const float4* xm4 = reinterpret_cast<const float4*>(x_map);
        auto k = [&] { pcie_kernel<<<1, 224, 0, st>>>(xm4, out_map, 196, 1); };
        Timing t = time_graph(st, k, 2000);
        std::printf("  V1 graph [event, kernel, event] + cudaStreamSynchronize:      kernel %5.2f  e2e %5.2f us\n", t.kernel_us, t.e2e_us);
        auto host_loop = [](const std::function<void()>& call) { return host_median_us(call, 2000, 100); };
        {
            const Graph graph = Graph::capture(st, cudaStreamCaptureModeRelaxed, k);
            std::printf("  V2 graph [kernel] + cudaStreamSynchronize:                              e2e %5.2f us\n",
                        host_loop([&] { graph.launch(st); CUDA_CHECK(cudaStreamSynchronize(st)); }));
            std::printf("  V7 cudaGraphLaunch alone (host call, then sync untimed):                e2e %5.2f us\n", [&] {
                std::vector<double> es;
                for (int i = 0; i < 2100; ++i) {
                    const auto t0 = clk::now();
                    graph.launch(st);
                    const auto t1 = clk::now();
                    CUDA_CHECK(cudaStreamSynchronize(st));
                    if (i >= 100) es.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
                }
                return median(es);
            }());
        }
        std::printf("  V3 direct launch + cudaStreamSynchronize:                               e2e %5.2f us\n",
                    host_loop([&] { k(); CUDA_CHECK(cudaStreamSynchronize(st)); }));
        {
            cudaEvent_t e0, e1;
            CUDA_CHECK(cudaEventCreate(&e0));
            CUDA_CHECK(cudaEventCreate(&e1));
            unsigned *flag_h, *flag_d;
            CUDA_CHECK(cudaHostAlloc(&flag_h, 64, cudaHostAllocMapped));
            CUDA_CHECK(cudaHostGetDevicePointer((void**)&flag_d, flag_h, 0));
            for (int variant = 0; variant < 2; ++variant) {
                const Graph graph = Graph::capture(st, cudaStreamCaptureModeRelaxed, [&] {
                    CUDA_CHECK(cudaEventRecordWithFlags(e0, st, cudaEventRecordExternal));
                    if (variant == 0) k();
                    else flag_kernel<<<1, 224, 0, st>>>(xm4, out_map, flag_d);
                    CUDA_CHECK(cudaEventRecordWithFlags(e1, st, cudaEventRecordExternal));
                });
                std::vector<double> es, es2, ks;
                for (int i = 0; i < 2100; ++i) {
                    *(volatile unsigned*)flag_h = 0;
                    const auto t0 = clk::now();
                    graph.launch(st);
                    if (variant == 0) {
                        while (cudaEventQuery(e1) == cudaErrorNotReady) {
                        }
                    } else {
                        while (*(volatile unsigned*)flag_h == 0) {
                        }
                    }
                    const auto t1 = clk::now();
                    CUDA_CHECK(cudaEventSynchronize(e1));
                    const auto t2 = clk::now();
                    float ms = 0;
                    CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
                    if (i >= 100)
                        es.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count()),
                            es2.push_back(std::chrono::duration<double, std::micro>(t2 - t0).count()), ks.push_back(ms * 1e3);
                }
                std::printf("  %s kernel %5.2f  e2e %5.2f us (to the event too: %5.2f)\n",
                            variant == 0 ? "V4 graph [event, kernel, event], spin on cudaEventQuery:"
                                         : "V5 graph [event, kernel, event], spin on a mapped flag: ",
                            median(ks), median(es), median(es2));
            }
            // V6: x travels as a kernel parameter (3136 B), updated in the executable graph each call
            {
                static ToyParam xp;
                std::memcpy(xp.x, x_all.data(), sizeof(xp.x));
                cudaGraph_t g;
                cudaGraphExec_t ge;
                CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeRelaxed));
                CUDA_CHECK(cudaEventRecordWithFlags(e0, st, cudaEventRecordExternal));
                param_kernel<<<1, 224, 0, st>>>(xp, out_map);
                CUDA_CHECK(cudaEventRecordWithFlags(e1, st, cudaEventRecordExternal));
                CUDA_CHECK(cudaStreamEndCapture(st, &g));
                size_t n = 0;
                CUDA_CHECK(cudaGraphGetNodes(g, nullptr, &n));
                std::vector<cudaGraphNode_t> nodes(n);
                CUDA_CHECK(cudaGraphGetNodes(g, nodes.data(), &n));
                cudaGraphNode_t kn = nullptr;
                for (auto nd : nodes) {
                    cudaGraphNodeType ty;
                    CUDA_CHECK(cudaGraphNodeGetType(nd, &ty));
                    if (ty == cudaGraphNodeTypeKernel) kn = nd;
                }
                cudaKernelNodeParams kp{};
                CUDA_CHECK(cudaGraphKernelNodeGetParams(kn, &kp));
                CUDA_CHECK(cudaGraphInstantiate(&ge, g, 0));
                float* om = out_map;
                void* args[] = {&xp, &om};
                kp.kernelParams = args;
                kp.extra = nullptr;
                std::vector<double> es, ks;
                for (int i = 0; i < 2100; ++i) {
                    const auto t0 = clk::now();
                    xp.x[i % 784] += 1.0f;
                    CUDA_CHECK(cudaGraphExecKernelNodeSetParams(ge, kn, &kp));
                    CUDA_CHECK(cudaGraphLaunch(ge, st));
                    CUDA_CHECK(cudaStreamSynchronize(st));
                    const auto t1 = clk::now();
                    float ms = 0;
                    CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
                    if (i >= 100) es.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count()), ks.push_back(ms * 1e3);
                }
                std::printf("  V6 x as a kernel parameter, cudaGraphExecKernelNodeSetParams + launch + sync: kernel %5.2f  e2e %5.2f us\n",
                            median(ks), median(es));
                CUDA_CHECK(cudaGraphExecDestroy(ge));
                CUDA_CHECK(cudaGraphDestroy(g));
            }
            CUDA_CHECK(cudaEventDestroy(e0));
            CUDA_CHECK(cudaEventDestroy(e1));
            CUDA_CHECK(cudaFreeHost(flag_h));
        }
    }
    std::fflush(stdout);
}

}  // namespace probe
