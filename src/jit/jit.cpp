#include "jit/jit.hpp"

#include <ctime>
#include <regex>
#include <set>
#include <sstream>

#include "report/trace.hpp"
#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/strings.hpp"

namespace kjit::jit {
namespace {

nlohmann::json kernels_to_json(const std::vector<kernel_resources>& kernels) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& k : kernels)
        list.push_back({{"name", k.name}, {"registers", k.registers}, {"stack_bytes", k.stack_bytes},
                        {"spill_store_bytes", k.spill_store_bytes}, {"spill_load_bytes", k.spill_load_bytes}});
    return list;
}

std::vector<kernel_resources> kernels_from_json(const nlohmann::json& list) {
    std::vector<kernel_resources> kernels;
    for (const auto& k : list)
        kernels.push_back({k.at("name"), k.at("registers"), k.at("stack_bytes"), k.at("spill_store_bytes"),
                           k.at("spill_load_bytes")});
    return kernels;
}

std::string utc_now() {
    const std::time_t now = std::time(nullptr);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    return text;
}

}  // namespace

std::string cache_key(const compile_request& request) {
    field_hasher h;
    h.add("kjit-cache").add(std::to_string(disk_cache::k_format_version)).add(KJIT_VERSION);
    h.add(built_nvrtc_version()).add(std::to_string(request.arch));
    // Where this machine keeps the toolkit's headers is not part of the program (their version is
    // NVRTC's, above): the key names the folder by its role, so that one program has one key on
    // every machine and a cache made on one serves another (kjit cache export).
    const std::string include_option = "--include-path=" + toolkit_include_dir();
    for (const auto& option : request.nvrtc_options())
        h.add(option == include_option ? std::string("--include-path=<toolkit>") : option);
    h.add(to_string(request.method)).add("--link--");
    for (const auto& option : request.link_options()) h.add(option);
    h.add(request.source);
    return h.hex_digest();
}

std::string annotate_log(const std::string& log, const std::string& source, const std::string& program_name) {
    const std::vector<std::string> lines = lines_of(source);
    const std::regex location(std::regex_replace(program_name, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                              R"(\((\d+)\): (error|warning))");
    std::set<std::size_t> shown;
    std::ostringstream out;
    out << log;
    for (std::sregex_iterator it(log.begin(), log.end(), location), end; it != end; ++it) {
        const std::size_t at = std::stoul((*it)[1]);
        if (!shown.insert(at).second || at == 0 || at > lines.size()) continue;
        out << "\n\ngenerated source around line " << at << ":";
        for (std::size_t i = at > 2 ? at - 2 : 1; i <= std::min(lines.size(), at + 2); ++i)
            out << "\n" << (i == at ? " > " : "   ") << i << " | " << lines[i - 1];
    }
    return out.str();
}

namespace {

/// Fills `out` from the cache entry found for its key; false where the entry is corrupt (hashes can
/// match while a field has the wrong type), which `found` then says, as a lookup does.
bool take_cached(lookup_result& found, build_output& out) {
    try {
        out.kernels = kernels_from_json(found.entry.meta.value("kernels", nlohmann::json::array()));
        out.nvrtc_log = found.entry.meta.value("nvrtc_log", "");
        out.link_log = found.entry.meta.value("link_log", "");
        out.nvrtc_version = found.entry.meta.value("nvrtc_version", built_nvrtc_version());
        out.cache_status = "hit";
        out.ptx = std::move(found.entry.ptx);
        out.cubin = std::move(found.entry.cubin);
        return true;
    } catch (const nlohmann::json::exception& e) {
        out.kernels.clear();
        found.status = lookup_status::corrupt;
        found.problem = std::string("meta.json: ") + e.what();
        return false;
    }
}

/// Compiles the request into `out`; a failed compile throws (a config error where NVRTC rejected
/// an option, a compile error with the annotated log otherwise) and leaves nothing to cache.
/// Returns whether -minimal stayed on, which the cache entry records.
bool compile_into(const compile_request& request, const std::string& label, build_output& out) {
    compile_result compiled = compile(request);
    out.compiled = true;
    out.load_ms = compiled.load_ms;
    out.nvrtc_ms = compiled.nvrtc_ms;
    out.ptx_to_cubin_ms = compiled.ptx_to_cubin_ms;
    out.front_end_ms = compiled.front_end_ms;
    out.optimizer_ms = compiled.optimizer_ms;
    out.nvrtc_log = compiled.nvrtc_log;
    out.link_log = compiled.link_log;
    out.nvrtc_version = nvrtc_version();
    if (compiled.options_rejected)  // the config's doing, not the source's: a config error (exit 2)
        throw error(error_kind::config, label + ": compile.options: NVRTC rejected an option: " + compiled.nvrtc_log);
    if (!compiled.ok) {
        const bool in_nvrtc = compiled.ptx.empty();
        throw error(error_kind::compile,
                    (in_nvrtc ? "NVRTC failed to compile " : "PTX → cubin failed for ") + label + ":\n" +
                        (in_nvrtc ? annotate_log(compiled.nvrtc_log, request.source, request.program_name) : compiled.link_log));
    }
    out.ptx = std::move(compiled.ptx);
    out.cubin = std::move(compiled.cubin);
    out.kernels = std::move(compiled.kernels);
    return compiled.minimal;
}

/// Stores what was compiled under its key. A cache that cannot be written (read-only, full, not a
/// directory) must not fail a compile that worked: say so once, and carry on without it.
void store_built(const compile_request& request, const std::string& label, bool minimal, bool replace, disk_cache& cache,
                 build_output& out) {
    trace::span span("cache_store");
    cache_entry entry{out.ptx, out.cubin, nlohmann::json::object()};
    entry.meta = {{"label", label},
                  {"created", utc_now()},
                  {"arch", request.real_arch()},
                  {"nvrtc_version", out.nvrtc_version},
                  {"nvrtc_options", request.nvrtc_options()},
                  {"link_options", request.link_options()},
                  {"method", to_string(request.method)},
                  {"minimal", minimal},
                  {"nvrtc_ms", out.nvrtc_ms},
                  {"ptx_to_cubin_ms", out.ptx_to_cubin_ms},
                  {"nvrtc_log", out.nvrtc_log},
                  {"link_log", out.link_log},
                  {"kernels", kernels_to_json(out.kernels)}};
    if (!cache.unwritable()) {
        try {
            cache.store(out.key, entry, replace);
        } catch (const error& e) {
            cache.mark_unwritable();
            out.cache_problem = std::string(e.what()) + "; carrying on without the cache";
        }
    }
    out.store_ms = span.end();
}

}  // namespace

build_output build(const compile_request& request, disk_cache* cache, cache_mode mode, const std::string& label) {
    build_output out;
    out.key = cache_key(request);
    out.method = request.method;
    out.cache_status = mode == cache_mode::off ? "off" : mode == cache_mode::refresh ? "refresh" : "miss";
    const bool use_cache = cache != nullptr && mode != cache_mode::off;
    bool replace = mode == cache_mode::refresh;
    if (use_cache && mode == cache_mode::use) {
        trace::span span("cache_lookup");
        lookup_result found = cache->lookup(out.key);
        out.lookup_ms = span.end();
        if (found.status == lookup_status::hit && take_cached(found, out)) return out;
        if (found.status == lookup_status::corrupt) {
            out.cache_problem = "cache entry " + out.key + " is corrupt (" + found.problem + "); recompiled and replaced";
            replace = true;
        }
    }
    const bool minimal = compile_into(request, label, out);
    if (use_cache) store_built(request, label, minimal, replace, *cache, out);
    return out;
}

}  // namespace kjit::jit
