// How a fused MLP call is run: the registry of whole-network kernels (each registers itself
// with GEMMPAD_REGISTER_FUSED, as GEMM rungs do with GEMMPAD_REGISTER_CUDA), the plan each picks
// per batch (design, tile rows, engine) and the launch of that plan.
#include <stdexcept>
#include <string>
#include <vector>

#include "mlp.cuh"

namespace gemmpad::cuda {
namespace {

struct FusedVariant {
    MlpKernelInfo info;
    FusedKind kind;
};

std::vector<FusedVariant>& variants() {
    static std::vector<FusedVariant> list;  // filled during static initialisation, read afterwards
    return list;
}

}  // namespace

bool register_fused(const MlpKernelInfo& info, FusedKind kind) {
    variants().push_back({info, kind});
    return true;
}

bool fused_kind(const std::string& name, FusedKind& kind) {
    for (const auto& v : variants())
        if (v.info.name == name) {
            kind = v.kind;
            return true;
        }
    return false;
}

const std::vector<MlpKernelInfo>& mlp_kernel_list() {
    static const std::vector<MlpKernelInfo> list = [] {
        std::vector<MlpKernelInfo> out;
        for (const auto& v : variants()) out.push_back(v.info);
        return out;
    }();
    return list;
}

// Measured choices (H200; NOTES.md has the probe runs behind them): FMAs while a tile has few rows
// (14 blocks of 8 hidden units for 1-2 row tiles, 7 of 16 beyond); from 65
// rows with clusters, the k-split kernel (fused_mlp_ksplit.cu) while one wave of
// its clusters covers the batch, then the row-block kernel (fused_mlp_tc.cu,
// its x tile by TMA on sm_90).
// Without clusters: 16-row 3xTF32 / tf32 split tiles from 129 rows, the
// row-block kernel from 384 (tf32) / 1024 rows.
FusedPlan fused_plan(FusedKind kind, int batch) {
    if (kind == FusedKind::Resident) throw std::logic_error("cuda.mlp_resident has no launch plan (resident.cu)");
    constexpr int kRowsFrom = 1024, kRowsFromTf32 = 384;  // batches from here run the row-block kernel
    const Engine tc = kind == FusedKind::Tf32 ? Engine::Tf32 : Engine::Tf32x3;
    FusedPlan p;
    // sm_90 with clusters: the k-split kernel with the smallest tile whose tiles all run in one wave
    // of clusters (H200: 16 rows up to 240, 32 to 480, 64 to 960; tf32, two blocks per SM: 16 rows
    // up to 512, 32 to 1024), the row-block kernel beyond
    const bool sm90 = fused_clusters_enabled() && fused_ksplit_available();  // clusters off: the sm_80-89 paths
    const bool ksplit = batch > 64 && sm90;
    if (ksplit) {
        p.design = FusedPlan::KSplit;
        p.engine = tc;
        for (int bm : {16, 32, 64}) {
            p.bm = bm;
            if ((batch + bm - 1) / bm <= fused_ksplit_max_clusters(p)) return p;
        }
    }
    if (ksplit || batch >= (kind == FusedKind::Tf32 ? kRowsFromTf32 : kRowsFrom)) {
        p.design = FusedPlan::Rows;
        p.bm = batch >= 3072 ? 32 : 16;
        p.engine = tc;
        p.tma_x = sm90;
        return p;
    }
    if (kind == FusedKind::Fp32Tc || batch > 128) {
        p.bm = 16, p.engine = tc, p.cols = 16;
        p.cluster = batch <= 15 * 16;  // 15 clusters of 7 such blocks fit at once
        return p;
    }
    p.engine = Engine::Fma;
    if (batch <= 4) p.bm = 1, p.cols = 8;
    else if (batch <= 8) p.bm = 2, p.cols = 8;
    else if (batch <= 64) p.bm = 2, p.cols = 16;
    else p.bm = 4, p.cols = 16;
    return p;
}

void launch_fused(const FusedPlan& plan, const FusedWeights& w, const void* x, float* out, int batch,
                  const FusedScratch& scratch, cudaStream_t stream, const FusedHidden& hidden) {
    // (each design checks its own 8-bit x: the split kernel only by slices, the row-block one only by TMA)
    if (plan.design == FusedPlan::Rows) launch_fused_rows(plan, w, x, out, batch, stream, hidden);
    else if (plan.design == FusedPlan::KSplit) launch_fused_ksplit(plan, w, x, out, batch, stream, hidden);
    else launch_fused_split(plan, w, x, out, batch, scratch, stream, hidden);
}

}  // namespace gemmpad::cuda
