// Everything the GEMM side's support and PTX layers offer, for code that has not yet said what it
// uses (the MLP and the trainer). A GEMM rung includes only the headers it needs instead:
//   support/  check (errors), device (properties, launch configurations), registry (the kernel
//             registry and its macros), buffer (the one device-buffer type, its pinned twin,
//             the workspace), graph (the one CUDA-graph type), events, fill (operand
//             conversion and random fills)
//   ptx/      smem, cp_async, mma (mma.sync, ldmatrix), mbarrier, cluster, tma
//   gemm/     epilogue (bias + ReLU at the store), splitk (cluster and workspace split-K)
// Kernel files include nothing from pybind11 (nvcc compiles it slowly; bindings are .cpp files).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "gemm/epilogue.cuh"
#include "gemm/splitk.cuh"
#include "ptx/cluster.cuh"
#include "ptx/cp_async.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/mma.cuh"
#include "ptx/smem.cuh"
#include "ptx/tma.cuh"
#include "support/buffer.cuh"
#include "support/check.cuh"
#include "support/device.cuh"
#include "support/events.cuh"
#include "support/fill.cuh"
#include "support/graph.cuh"
#include "support/registry.cuh"
