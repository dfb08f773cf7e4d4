// libFuzzer target: a whole config file. Every input either becomes a pipeline, its generated
// CUDA source and its sweep points, or is refused with kjit::error (what the CLI prints as one
// line, exit 2). Any other exception or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "family/family.hpp"
#include "run/sweep.hpp"
#include "config/config.hpp"
#include "util/error.hpp"

using namespace kjit;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const codegen::template_set templates = codegen::template_set::embedded();
    try {
        const config::document doc =
            config::parse_document(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
        const config::pipeline p = family::load(doc);
        (void)family::plan(p, templates);
        // One shard of many: bounded work whatever the sweep's size, as `--shard` gives.
        (void)family::expand_sweep(doc, std::nullopt, run::shard{0, 4096}.indices(config::sweep_size(doc)));
    } catch (const error&) {
    }
    return 0;
}
