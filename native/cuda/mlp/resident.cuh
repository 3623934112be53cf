// cuda.mlp_resident: a persistent kernel that holds the network on the GPU and waits for
// requests in mapped pinned host memory, so that a batch-1 forward pass costs no launch: the host
// writes the input stamped with a sequence number, the kernel (polling over PCIe) computes and
// writes the probabilities back stamped alike, which the host spins on. On sm_90 a cluster of four
// blocks holds W1 in shared memory (a quarter each); elsewhere one block reads it through L2.
// No pybind11 here: mlp.cu owns a Resident per Mlp and bind_mlp.cpp exposes it.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "mlp.cuh"

namespace gemmpad::cuda {

// Rows one request carries: Mlp::forward sends larger batches as several requests.
inline constexpr int kResidentRows = 8;

// A stamped value, as NCCL's low-latency protocol moves data: 8 bytes, the float's bits low and
// the request's sequence number high, written and read as one 8-byte access (atomic on both
// sides), so a reader that sees its sequence number has that request's value, whatever order
// PCIe delivered the other slots in. No fence, no second round trip for a flag.
using ResidentSlot = uint64_t;
inline ResidentSlot resident_slot(float v, uint32_t seq) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return (uint64_t)seq << 32 | bits;
}

// Host <-> kernel mailbox, one mapped pinned allocation. The host writes the rows' slots of `x`,
// then the control word; the kernel reads the control word and row 0 in one round trip and takes
// the request once every slot carries the control word's sequence number. It answers with
// `probs` (and `h1`, `h2` when asked) and `span` (its globaltimer span in ns, low 32 bits),
// every slot stamped.
struct ResidentMailbox {
    alignas(128) uint64_t control;  // written by the host: resident_control() below
    alignas(128) ResidentSlot x[kResidentRows][kIn];
    alignas(128) ResidentSlot probs[kResidentRows][kOut];
    ResidentSlot h1[kResidentRows][kHidden];
    ResidentSlot h2[kResidentRows][kHidden];
    ResidentSlot span;
    // written by the kernel when it returns on its own after idling (Resident's idle_exit_s):
    // bit 32 set, bits 0-31 the last request it answered; 0 while it runs
    alignas(128) uint64_t exited;
};

// The control word: bits 0-31 the request's sequence number (0: none yet), 32-39 its rows
// (1..kResidentRows), bit 40 "also write h1 and h2", bit 63 "stop: return now".
inline constexpr uint64_t kResidentStop = uint64_t{1} << 63, kResidentHidden = uint64_t{1} << 40;
inline constexpr uint64_t resident_control(uint32_t seq, int rows, bool hidden) {
    return seq | (uint64_t)(rows & 0xff) << 32 | (hidden ? kResidentHidden : 0);
}

// Thrown by Resident::forward when its kernel was stopped from elsewhere (stop_all_residents).
struct ResidentStopped : std::logic_error {
    using std::logic_error::logic_error;
};

class Resident {
  public:
    // Device weights as the GPU Mlp holds them (they must outlive this object): W1 [784][100]
    // row-major, W2 [112][112] and W3 [112][16] padded, biases padded to 112 / 112 / 16.
    // skip_zeros: W1 is all finite, so the one-block design may skip zero pixels. clusters: the
    // four-block design where the device has it (set_fused_clusters(False) asks for one block,
    // the sm_80-89 design, testable on Hopper). The kernel starts at once on its own non-blocking
    // stream, so other work on the GPU is never queued behind it.
    // idle_exit_s: the kernel returns after that long without a request (0: never), so that an
    // idle one leaves the GPU to other contexts (OpenGL drawing loses a timeslice per frame beside
    // a running one: NOTES.md); the next forward() starts it again.
    Resident(const float* w1, const float* w2, const float* w3, const float* b1, const float* b2, const float* b3,
             bool skip_zeros, bool clusters, double idle_exit_s);
    // Stops the kernel (stop(), errors swallowed: a destructor must not throw).
    ~Resident();
    Resident(const Resident&) = delete;
    Resident& operator=(const Resident&) = delete;

    // out [batch, 10] (h1 / h2 [batch, 100] where not null) for host x [batch, 784], in requests
    // of up to kResidentRows rows. Spins briefly, then yields, until each is answered; throws
    // CudaError after `timeout_s` without an answer (or when the kernel has died). Returns the
    // sum of the requests' GPU spans in microseconds.
    double forward(const float* x, float* out, int batch, float* h1, float* h2, double timeout_s = 2.0);
    // Sets the stop flag and waits (polling the stream) up to `timeout_s` for the kernel to
    // return; CudaError on timeout, after which the mailbox is left allocated (the kernel may
    // still read it). Idempotent.
    void stop(double timeout_s = 2.0);
    bool running() const { return running_.load(std::memory_order_acquire); }
    // Blocks of the running design: 4 (a cluster, W1 in shared memory) or 1.
    int blocks() const { return blocks_; }
    // Whether the kernel returned after idling (forward() starts it again).
    bool idle() const { return __atomic_load_n(&box_->exited, __ATOMIC_ACQUIRE) != 0; }
    double idle_exit_s() const { return idle_exit_s_; }
    // stop() without leaving the process-wide list (stop_all_residents holds it).
    void halt(double timeout_s);

  private:
    void launch(uint32_t seen);                 // the kernel, taking requests after `seen`
    void restart_if_idle();                     // after an idle exit: wait for the kernel's end, launch it again
    void check_alive(const char* waiting_for);  // throws if the kernel has failed or ended (other than idling)
    cudaStream_t stream_ = nullptr;
    PinnedBuffer mailbox_;             // the ResidentMailbox, mapped
    ResidentMailbox* box_ = nullptr;   // its host address
    ResidentMailbox* dbox_ = nullptr;  // the same, as the kernel sees it
    uint32_t seq_ = 0;
    int blocks_ = 1;
    double idle_exit_s_ = 0.0;
    size_t smem_ = 0;
    const float *w1_ = nullptr, *w2_ = nullptr, *w3_ = nullptr, *b1_ = nullptr, *b2_ = nullptr, *b3_ = nullptr;
    bool skip_zeros_ = true;
    uint64_t control_ = 0;  // the last control word written
    std::atomic<bool> running_{false};  // read by other threads (running(), stop_all_residents)
    bool abandoned_ = false;  // stop() timed out: never free the mailbox
    std::mutex mu_;           // one request or stop at a time
};

// Stop every running resident kernel in the process (errors swallowed). The free guard of
// support/buffer.cuh, so it runs before every buffer's cudaFree / cudaFreeHost / cudaHostAlloc
// (the GEMM side's too): the driver may make those wait for all work on the device, and a
// resident kernel never ends on its own. Its Mlp starts a new one on its next call.
void stop_all_residents() noexcept;

}  // namespace gemmpad::cuda
