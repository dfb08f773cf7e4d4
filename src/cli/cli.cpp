#include "cli/cli.hpp"

#include "cli/arguments.hpp"
#include "report/trace.hpp"
#include "util/fs.hpp"
#include "util/strings.hpp"

namespace kjit::cli {
namespace {

/// Output paths are checked before any work: a long sweep must not end in "cannot write". Each
/// result is a file of its own, and never one kjit reads.
void check_outputs(const subcommand& sub, const options& o) {
    const std::vector<std::pair<std::string, std::string>> outputs{
        {"--json", o.json_path}, {"--csv", o.csv_path}, {"--trace", o.trace_path}, {"--write-best", o.write_best_path}};
    for (const auto& [option, path] : outputs)
        if (!path.empty()) fs::check_output_path(path, option);
    std::vector<std::filesystem::path> reads(o.files.begin(), o.files.end());
    if (!o.config_path.empty()) reads.emplace_back(o.config_path);
    if (!o.diff_config.empty()) reads.emplace_back(o.diff_config);
    if (sub.config) {  // the config's input files; a config that does not load is reported by the command
        try {
            const auto files = config::input_files(load_document(o));
            reads.insert(reads.end(), files.begin(), files.end());
        } catch (const error&) {
        }
    }
    if (!o.replay_path.empty()) reads.emplace_back(o.replay_path);
    if (!o.templates_dir.empty()) {
        std::error_code ec;
        for (const auto& entry : std::filesystem::directory_iterator(o.templates_dir, ec)) reads.push_back(entry.path());
    }
    fs::check_distinct_outputs(outputs, reads);
}

exit_status run_command(const std::string& name, const options& o, std::ostream& out, std::ostream& err);

/// The command, its timeline written to o.trace_path however it ends: a failed run's timeline is
/// worth as much.
exit_status run_traced(const subcommand& sub, const options& o, std::ostream& out, std::ostream& err) {
    trace::start_collecting();
    if (const auto spawned = trace::spawned_at(); spawned && trace::main_entered())
        trace::add("process start (exec, libraries)", *spawned, *trace::main_entered());
    auto write_trace = [&] { fs::write_output(o.trace_path, trace::to_json().dump()); };
    try {
        exit_status status = exit_status::ok;
        {
            trace::span whole(std::string("kjit ") + sub.name);
            status = run_command(sub.name, o, out, err);
        }
        write_trace();
        return status;
    } catch (...) {
        write_trace();
        throw;
    }
}

exit_status dispatch(const subcommand& sub, int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
    const std::optional<options> o = parse_arguments(sub, argc, argv, out);
    if (!o) return exit_status::ok;  // --help
    check_outputs(sub, *o);
    return o->trace_path.empty() ? run_command(sub.name, *o, out, err) : run_traced(sub, *o, out, err);
}

exit_status run_command(const std::string& name, const options& o, std::ostream& out, std::ostream& err) {
    if (name == "emit") return cmd_emit(o, out);
    if (name == "compile") return cmd_compile(o, out, err);
    if (name == "sass") return cmd_sass(o, out);
    if (name == "run") return o.watch ? cmd_watch(o, out, err) : cmd_run(o, out, err);
    if (name == "sweep") return cmd_sweep(o, out, err);
    if (name == "merge") return cmd_merge(o, out, err);
    if (name == "first-call") return cmd_first_call(o, out, err);
    if (name == "tune") return cmd_tune(o, out, err);
    if (name == "devices") return cmd_devices(out);
    return cmd_cache(o, out, err);
}

}  // namespace

exit_status run(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
    trace::name_thread("main");
    try {
        if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h" ||
            std::string(argv[1]) == "help") {
            print_overview(argc < 2 ? err : out);
            return argc < 2 ? exit_status::usage : exit_status::ok;
        }
        if (std::string(argv[1]) == "--version") {
            out << "kjit " KJIT_VERSION "\n";
            return exit_status::ok;
        }
        for (const auto& sub : subcommands())
            if (argv[1] == std::string(sub.name)) return dispatch(sub, argc - 1, argv + 1, out, err);
        throw error(error_kind::usage, std::string("unknown command '") + argv[1] + "' (see kjit --help)");
    } catch (const error& e) {
        err << "kjit: " << printable_message(e.what()) << "\n";
        return exit_status_for(e.kind());
    } catch (const std::exception& e) {  // a bug or an exhausted resource: still one clear line
        err << "kjit: internal error: " << printable_message(e.what()) << "\n";
        return exit_status::failure;
    }
}

}  // namespace kjit::cli
