// kjit first-call: child processes of kjit itself in several start states.
#include <filesystem>

#include "cli/commands.hpp"
#include "report/files.hpp"
#include "report/progress.hpp"
#include "report/trace.hpp"
#include "run/first_call.hpp"
#include "util/interrupt.hpp"
#include "util/fs.hpp"
#include "util/strings.hpp"
#include "util/units.hpp"

namespace kjit::cli {

namespace {

/// What every child gets: the user's config and overrides, a tiny timing loop (the children are
/// about start-up, and every extra launch would land in "the rest"), no copy-ceiling probe.
std::vector<std::string> common_arguments(const options& o, bool have_gpu) {
    std::vector<std::string> common;
    if (!o.config_path.empty()) common.push_back(o.config_path);
    for (const auto& s : o.sets) common.insert(common.end(), {"--set", s});
    if (!o.templates_dir.empty()) common.insert(common.end(), {"--templates", o.templates_dir});
    if (have_gpu)
        common.insert(common.end(), {"--skip-ceiling", "--set", "measure.warmup=0", "--set", "measure.repeat=1", "--set",
                                     "measure.max_ms=0"});
    return common;
}

/// Runs kjit itself as a child in a start state, each with its own --json file in `root`: its
/// result and its rows, or an error with its output where it failed.
class child_runner {
public:
    child_runner(std::filesystem::path root, std::string self, std::string log, std::vector<std::string> common)
        : m_root(std::move(root)), m_self(std::move(self)), m_log(std::move(log)), m_common(std::move(common)) {}

    [[nodiscard]] std::pair<run::child_result, std::vector<report::row>> operator()(
            const run::start_state& state, const std::filesystem::path& cache, const std::vector<std::pair<std::string, std::string>>& env) {
        const std::string json_file = (m_root / ("child" + std::to_string(m_count++) + ".json")).string();
        std::vector<std::string> args = state.args;
        args.insert(args.end(), m_common.begin(), m_common.end());
        args.insert(args.end(), {"--cache-dir", cache.string(), "--json", json_file});
        const std::string trace_file = json_file + ".trace";
        if (trace::collecting()) args.insert(args.end(), {"--trace", trace_file});
        trace::span span("child: " + state.name);
        const auto result = run::run_child(m_self, args, env, m_log);
        span.end();
        if (trace::collecting()) trace::merge_file(trace_file);
        if (interrupted()) throw error(error_kind::interrupted, "first-call: interrupted; nothing was written");
        if (result.exit_code != 0) {
            std::string output;
            try {
                output = fs::read_file(m_log);
            } catch (const error&) {
            }
            throw error(error_kind::driver, "first-call: the child for state " + state.name + " exited " +
                                                std::to_string(result.exit_code) + ":\n" + output);
        }
        return {result, report::read_rows(json_file)};
    }

    /// A folder for an empty cache, new each call.
    [[nodiscard]] std::filesystem::path empty_cache() const { return m_root / ("empty-" + std::to_string(m_count)); }

private:
    std::filesystem::path m_root;
    std::string m_self;  ///< kjit itself
    std::string m_log;   ///< where the children's output goes
    std::vector<std::string> m_common;
    int m_count = 0;
};

/// The rows of a child in `state` that report its call: the state's name, and for a first call
/// the process's wall time and what followed the run.
void keep_rows(const run::start_state& state, const run::child_result& result, std::vector<report::row>& child_rows,
               std::vector<report::row>& rows) {
    for (auto& r : child_rows) {
        const int call = r["call_index"].is_number() ? r["call_index"].get<int>() : 1;
        if (call != state.take_call) continue;
        r["first_call_state"] = state.name;
        if (state.take_call == 1) {
            r["process_wall_ms"] = result.wall_ms;
            if (r["process_elapsed_ms"].is_number()) r["process_exit_ms"] = result.wall_ms - r["process_elapsed_ms"].get<double>();
        }
        rows.push_back(std::move(r));
    }
}

/// The median of each state's processes, phase by phase, then what each state is and what the
/// figures say.
void print_summary(std::ostream& out, const std::vector<report::row>& rows, const std::vector<run::start_state>& states, bool have_gpu) {
    const auto summary = run::summarize_first_call(rows);
    if (!have_gpu) out << "no GPU here: the children compile only, so these are the compile-side phases\n";
    constexpr std::size_t k_time_width = 12;
    out << "  " << padded("state", 20) << padded("process wall (min..max)", 30);
    for (const char* title : {"CUDA init", "context", "NVRTC", "PTX→cubin", "load"}) out << padded(title, k_time_width);
    out << "first launch\n";
    for (const auto& s : summary) {
        const auto cell = [&](const char* column) {
            return s.contains(column) ? units::duration_ms(s[column].get<double>()) : std::string("-");
        };
        std::string wall = "-";
        if (s.contains("process_wall_ms"))
            wall = cell("process_wall_ms") + " (" + cell("process_wall_min_ms") + ".." + cell("process_wall_max_ms") + ")";
        out << "  " << padded(s.value("first_call_state", ""), 20) << padded(wall, 30);
        for (const char* column : {"driver_init_ms", "context_ms", "nvrtc_ms", "ptx_to_cubin_ms", "module_load_ms"})
            out << padded(cell(column), k_time_width);
        out << cell("first_launch_ms") << "\n";
    }
    out << "\n";
    for (const auto& state : states) out << "  " << state.name << ": " << state.description << "\n";
    out << "\n" << run::explain_first_call(summary);
}

}  // namespace

exit_status cmd_first_call(const options& o, std::ostream& out, std::ostream& err) {
    (void)load(o);  // a bad config is reported here, once, before any child starts
    // Ctrl-C reaches the children too; this process then stops after the child it waits for, and
    // unwinding removes its scratch folder (the caches of every state).
    stop_gracefully_on_interrupt();
    const fs::temp_directory scratch("kjit-first-call");
    const auto& root = scratch.path();
    // Whether there is a GPU, asked of a child (`kjit devices`): while a process of its user holds
    // CUDA initialized, another's cuInit takes 12 ms instead of 100 to 190 (H200, 2026-12-04), so
    // this process must not initialize CUDA before its children start as fresh processes would.
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    const std::string log = (root / "child.log").string();
    const bool have_gpu = run::run_child(self, {"devices"}, {}, log).exit_code == 0;
    child_runner child(root, self, log, common_arguments(o, have_gpu));

    const auto warm_cache = root / "warm-cache";
    const auto driver_cache = root / "driver-cache";
    const auto states = run::first_call_states(have_gpu);
    // Fill the shared cache once (a compile for this machine's GPU, or sm_90 without one).
    (void)child(run::warm_up_state(have_gpu), warm_cache, {{"CUDA_CACHE_PATH", driver_cache.string()}});

    std::vector<report::row> rows;
    report::progress_bar bar(err, states.size() * static_cast<std::size_t>(o.repeat), report::progress_wanted(2, false));
    for (const auto& state : states) {
        auto env = state.env;
        env.emplace_back("CUDA_CACHE_PATH", driver_cache.string());  // never the user's own cache
        if (state.warm_driver_cache) (void)child(state, warm_cache, env);
        for (int k = 0; k < o.repeat; ++k) {
            auto [result, child_rows] = child(state, state.empty_cache ? child.empty_cache() : warm_cache, env);
            keep_rows(state, result, child_rows, rows);
            bar.step(state.name);
        }
    }
    bar.finish();
    print_summary(out, rows, states, have_gpu);
    write_rows(o, rows);
    return exit_status::ok;
}

}  // namespace kjit::cli
