// CPU side of the registry. A CPU kernel is a plain function over host memory.
#pragma once

#include "gemmpad/kernel.h"

namespace gemmpad::cpu {

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
