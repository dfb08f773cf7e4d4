// kjit run --watch: the edit-and-run loop. The session keeps the GPU and the host data; this file
// waits for saves, reloads the config, and prints each result beside the previous one.
#include <filesystem>

#include "cli/commands.hpp"
#include "report/table.hpp"
#include "util/file_watch.hpp"
#include "util/interrupt.hpp"
#include "util/units.hpp"

namespace kjit::cli {

exit_status cmd_watch(const options& o, std::ostream& out, std::ostream& err) {
    if (o.config_path.empty()) throw error(error_kind::usage, "run --watch: name the CONFIG file to watch");
    stop_gracefully_on_interrupt();  // Ctrl-C ends the wait for the next save; the loop then returns
    std::vector<std::filesystem::path> watched{o.config_path};
    if (!o.templates_dir.empty()) watched.emplace_back(o.templates_dir);
    // The config's input files too: a saved .npy is a new run (its content is part of the inputs'
    // key). Those a later edit of the config names are read, but not watched.
    try {
        for (const auto& in : load(o).pipeline.inputs)
            if (in.fill == config::fill_kind::file) watched.push_back(in.path);
    } catch (const error&) {  // a bad config is reported by the first run below
    }
    file_watch files(watched);
    run::session s = session_for(o);
    const auto gpu = s.target_if_any(o.device);

    std::optional<std::filesystem::file_time_type> saved;  // when the file that triggered the run was written
    bool templates_changed = false;
    bool first = true;
    auto next = [&]() -> std::optional<run::watch_step> {
        for (;;) {
            if (!first) {
                out << "\nwatching " << o.config_path << (o.templates_dir.empty() ? "" : " and " + o.templates_dir)
                    << " (Ctrl-C ends)" << std::endl;
                const auto changed = files.wait();
                if (!changed) return std::nullopt;
                std::error_code ec;
                saved = std::filesystem::last_write_time(*changed, ec);
                if (ec) saved.reset();
                templates_changed = !o.templates_dir.empty() &&
                                    std::filesystem::equivalent(changed->parent_path(), o.templates_dir, ec);
            }
            first = false;
            try {
                auto cfg = load(o, gpu);
                return run::watch_step{std::move(cfg.pipeline), cfg.source, std::exchange(templates_changed, false)};
            } catch (const error& e) {  // a bad edit: say why, and wait for the next save
                err << "kjit: " << e.what() << std::endl;
            }
        }
    };
    std::optional<report::record> previous;
    const run::run_request request{o.device, 1, o.load_ptx, !o.skip_ceiling, {}};
    s.watch(request, next, [&](const report::record& rec) {
        // From the save (the file's own time) to the result, before any printing.
        const std::optional<double> latency_ms =
            saved ? std::optional(std::chrono::duration<double, std::milli>(std::filesystem::file_time_type::clock::now() -
                                                                             *saved).count())
                  : std::nullopt;
        (void)print_result(rec, out, err);  // a FAIL is a result like any other here: the loop goes on
        if (previous) report::print_change(out, *previous, rec);
        if (latency_ms) out << "  save → result  " << units::duration_ms(*latency_ms) << "\n";
        out.flush();
        previous = rec;
    }, [&](const error& e) {
        err << "kjit: " << e.what() << std::endl;
    });
    finish(s, err);
    out << "stopped watching\n";
    return exit_status::ok;
}

}  // namespace kjit::cli
