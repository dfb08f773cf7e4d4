// libFuzzer target: `--set KEY=VALUE` overrides on the default config, one per input line (up to
// eight), then validation and codegen. Every input either gives a pipeline and its source or is
// refused with kjit::error; any other exception or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "family/family.hpp"
#include "config/config.hpp"
#include "util/error.hpp"

using namespace kjit;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const codegen::template_set templates = codegen::template_set::embedded();
    std::string_view rest(reinterpret_cast<const char*>(data), size);
    try {
        config::document doc = config::load_document("");
        for (int line = 0; line < 8 && !rest.empty(); ++line) {
            const std::size_t end = rest.find('\n');
            config::apply_override(doc, rest.substr(0, end));
            rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
        }
        (void)family::plan(family::load(doc), templates);
    } catch (const error&) {
    }
    return 0;
}
