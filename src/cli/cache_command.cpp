// kjit cache: inspect, check, bound, clear the compile cache, and ship it to another machine
// (export / import: jit/cache_bundle).
#include <cstdio>
#include <iomanip>
#include <map>

#include "cli/commands.hpp"
#include "cuda/devices.hpp"
#include "jit/cache_bundle.hpp"
#include "run/session.hpp"
#include "util/fs.hpp"
#include "util/units.hpp"

namespace kjit::cli {

namespace {
/// A text field of an entry's meta.json, which may be damaged: anything but a string shows as `fallback`.
std::string meta_text(const nlohmann::json& meta, const char* key, const std::string& fallback) {
    const auto found = meta.find(key);
    return found != meta.end() && found->is_string() ? found->get<std::string>() : fallback;
}

/// "412 entries (sm_90a 400, sm_90 12) and 3 tuning records"
std::string contents(std::size_t entries, const std::map<std::string, std::size_t>& arches, std::size_t records) {
    std::string text = std::to_string(entries) + " entries";
    std::string by_arch;
    for (const auto& [arch, count] : arches) by_arch += (by_arch.empty() ? "" : ", ") + arch + " " + std::to_string(count);
    if (!by_arch.empty()) text += " (" + by_arch + ")";
    return text + " and " + std::to_string(records) + " tuning records";
}

void export_cache(const jit::disk_cache& cache, const std::string& file, std::ostream& out) {
    fs::check_output_path(file, "cache export");
    jit::bundle_summary made;
    const std::string bytes = jit::export_bundle(cache, &made);
    fs::write_output(file, bytes);
    out << "exported " << contents(made.entries, made.arches, made.records) << ", "
        << units::bytes(static_cast<double>(bytes.size())) << ", to " << file << "\n";
}

/// NVRTC's "13.0" as the driver counts CUDA versions (13000).
int cuda_version_number(const std::string& nvrtc_version) {
    int major = 0, minor = 0;
    return std::sscanf(nvrtc_version.c_str(), "%d.%d", &major, &minor) == 2 ? major * 1000 + minor * 10 : 0;
}

/// The bundle's entries against the GPUs here: are any for them, and can their driver load what
/// this NVRTC made? Warnings only: a bundle also serves compile-only work and other machines.
void check_against_gpus(const jit::bundle_summary& bundle, const std::string& file, std::ostream& err) {
    const cuda::probe_result driver = cuda::probe_driver();
    if (driver.state != cuda::availability::ok) {
        err << "kjit: no GPU here (" << cuda::to_string(driver.state) << "): " << file
            << "'s targets were not checked against one\n";
        return;
    }
    for (const auto& d : cuda::list_devices(driver)) {
        const std::string arch = "sm_" + std::to_string(d.arch);
        if (!bundle.arches.empty() && !bundle.arches.contains(arch) && !bundle.arches.contains(arch + "a"))
            err << "kjit: warning: none of " << file << "'s entries is for GPU " << d.index << " (" << d.name << ", " << arch
                << "): a run there compiles its own\n";
        if (d.driver_version < cuda_version_number(bundle.nvrtc_version))
            err << "kjit: warning: GPU " << d.index << "'s driver supports CUDA " << d.driver_version / 1000 << "."
                << d.driver_version % 1000 / 10 << ", older than the NVRTC " << bundle.nvrtc_version
                << " that compiled the entries: it may refuse to load them\n";
    }
}

void import_cache(jit::disk_cache& cache, const std::string& file, std::ostream& out, std::ostream& err) {
    const jit::bundle_summary added = jit::import_bundle(cache, fs::read_file(file), file);
    out << file << ": " << contents(added.entries, added.arches, added.records) << "; added " << added.entries_added
        << " entries and " << added.records_added << " records to " << cache.root().string() << " (the "
        << added.entries - added.entries_added + added.records - added.records_added
        << " it had already stay as they were)\n";
    check_against_gpus(added, file, err);
}


/// kjit cache list | stats: each entry (list), and what the cache holds against its limit.
void print_contents(const jit::disk_cache& cache, bool each_entry, std::ostream& out) {
    const auto entries = cache.list();
    std::uintmax_t total = 0;
    for (const auto& e : entries) {
        total += e.bytes;
        if (each_entry)
            out << e.key.substr(0, 12) << "  " << std::setw(10) << std::left << meta_text(e.meta, "arch", "?") << " "
                << std::setw(21) << meta_text(e.meta, "created", "?") << " " << std::setw(11)
                << units::bytes(static_cast<double>(e.bytes)) << meta_text(e.meta, "label", meta_text(e.meta, "problem", ""))
                << "\n";
    }
    const auto records = cache.records();
    std::uintmax_t record_bytes = 0;
    for (const auto& r : records) record_bytes += r.bytes;
    if (!each_entry || entries.empty()) {
        out << entries.size() << " entries, " << units::bytes(static_cast<double>(total)) << " in "
            << cache.entries_dir().string();
        if (!records.empty())
            out << "; " << records.size() << " tuning records, " << units::bytes(static_cast<double>(record_bytes)) << " in "
                << (cache.root() / jit::k_tuning_folder).string();
        total += record_bytes;
        if (cache.limit() > 0)
            out << " (limit " << units::bytes(static_cast<double>(cache.limit())) << ", "
                << std::lround(100.0 * static_cast<double>(total) / static_cast<double>(cache.limit())) << "% used)";
        out << "\n";
    }
    if (const auto left = cache.leftovers(); !left.empty())
        out << left.size() << " leftovers of interrupted writers (.tmp-*, .old-*): kjit cache clear removes them\n";
}

exit_status verify_cache(const jit::disk_cache& cache, std::ostream& out, std::ostream& err) {
    const auto damaged = cache.verify();
    for (const auto& d : damaged) err << "kjit: damaged entry " << d.key << ": " << d.problem << "\n";
    out << "verified " << cache.list().size() << " entries in " << cache.entries_dir().string() << ": " << damaged.size()
        << " damaged" << (damaged.empty() ? "" : " (kjit cache prune removes them)") << "\n";
    return damaged.empty() ? exit_status::ok : exit_status::failure;
}

void prune_cache(jit::disk_cache& cache, std::ostream& out) {
    const auto pruned = cache.prune(true);
    out << "removed " << pruned.damaged << " damaged and " << pruned.least_used << " least recently used entries, "
        << pruned.records << " tuning records, " << pruned.leftovers
        << " stale leftovers: " << units::bytes(static_cast<double>(pruned.bytes_freed)) << " freed, "
        << units::bytes(static_cast<double>(pruned.bytes_kept)) << " kept";
    if (cache.limit() > 0) out << " (limit " << units::bytes(static_cast<double>(cache.limit())) << ")";
    out << "\n";
}
}  // namespace

exit_status cmd_cache(const options& o, std::ostream& out, std::ostream& err) {
    jit::disk_cache cache = run::cache_in(o.cache_dir, o.cache_limit);
    const std::string& action = o.cache_action;
    const bool ships = action == "export" || action == "import";
    if (ships && o.cache_bundle.empty())
        throw error(error_kind::usage, "cache " + action + ": expected the bundle's file (kjit cache " + action + " FILE)");
    if (!ships && !o.cache_bundle.empty())
        throw error(error_kind::usage, "cache " + action + ": unexpected argument '" + o.cache_bundle + "'");
    if (action == "export") export_cache(cache, o.cache_bundle, out);
    else if (action == "import") import_cache(cache, o.cache_bundle, out, err);
    else if (action == "path") out << cache.entries_dir().string() << "\n";
    else if (action == "list" || action == "stats") print_contents(cache, action == "list", out);
    else if (action == "verify") return verify_cache(cache, out, err);
    else if (action == "prune") prune_cache(cache, out);
    else if (action == "clear") out << "removed " << cache.clear() << " entries from " << cache.root().string() << "\n";
    else
        throw error(error_kind::usage, "cache: expected list, stats, verify, prune, clear, path, export or import" +
                                           (action.empty() ? std::string() : ", got '" + action + "'"));
    return exit_status::ok;
}

}  // namespace kjit::cli
