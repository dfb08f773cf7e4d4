// Internal to src/run: a phase timed on the host clock and recorded, with the phase's name put in
// front of any error it throws; and numbers as messages show them.
#pragma once
#include <cmath>
#include <cstdio>
#include <string>
#include <type_traits>

#include "report/record.hpp"
#include "report/trace.hpp"
#include "util/error.hpp"

namespace kjit::run::detail {

/// Runs `work`, records its host-clock time as `which`, and prefixes any kjit::error with the
/// phase so that "cuMemAlloc failed" reads "device alloc: cuMemAlloc(…) failed: …".
template <class Work>
auto timed(report::record& rec, report::phase which, Work&& work) {
    trace::span span(report::phase_name(which));
    auto finish = [&] { rec.set(which, span.end()); };
    try {
        if constexpr (std::is_void_v<decltype(work())>) {
            work();
            finish();
        } else {
            auto result = work();
            finish();
            return result;
        }
    } catch (const error& e) {
        throw error(e.kind(), std::string(report::phase_title(which)) + ": " + e.what());
    }
}

inline std::string number(double value) {
    if (std::isnan(value)) return "nan";
    char text[40];
    std::snprintf(text, sizeof text, "%.9g", value);
    return text;
}


}  // namespace kjit::run::detail
