// CPU side of the registry. A CPU kernel is a plain function over host memory.
#pragma once

#include <atomic>

#include "gemmpad/kernel.h"

namespace gemmpad::cpu {

// Ctrl-C during a long product. Python hears a signal only between bytecodes, so a kernel running for
// minutes (cpu.01_naive at 3000^3) kept Ctrl-C waiting. The module counts SIGINTs in a handler it puts in
// front of Python's (bind_module.cpp); a kernel compares the count with the one at its call's start
// between blocks of work and returns early, and the binding then raises KeyboardInterrupt.
inline std::atomic<unsigned>& sigint_presses() {
    static std::atomic<unsigned> presses{0};
    return presses;
}
inline bool stopped(unsigned presses_at_start) {
    return presses_at_start != GemmProblem::kUnwatched &&
           sigint_presses().load(std::memory_order_relaxed) != presses_at_start;
}

using Launch = std::function<void(const GemmProblem&)>;
using CpuRegistry = Registry<Launch>;

}  // namespace gemmpad::cpu

// GEMMPAD_REGISTER_CPU("cpu.01_naive", "fp32", "one line", fn)
#define GEMMPAD_REGISTER_CPU(NAME, PRECISION, SUMMARY, FN)                                   \
    static const bool GEMMPAD_CONCAT(gemmpad_registered_, __LINE__) =                        \
        ::gemmpad::cpu::CpuRegistry::instance().add(                                         \
            ::gemmpad::KernelInfo{NAME, PRECISION, ::gemmpad::InType::F32, SUMMARY,           \
                                  ::gemmpad::repo_path(__FILE__)},                           \
            FN)
