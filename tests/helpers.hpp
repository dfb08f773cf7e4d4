// Shared test helpers: a scratch directory, the shipped configs, error-message checks, and a
// child process watched until it is ready for a signal.
#pragma once
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli.hpp"

#include "config/config.hpp"
#include "family/family.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

namespace kjit::testing {

using temp_dir = fs::temp_directory;

inline std::string config_path(const std::string& name) { return std::string(KJIT_SOURCE_DIR) + "/configs/" + name; }

/// The embedded default config as a document, to be edited by a test.
inline config::document default_document() { return config::load_document(""); }

/// The pipeline after `edit` changes the default document.
template <class Edit>
config::pipeline pipeline_with(Edit edit) {
    auto doc = default_document();
    edit(doc.json);
    return family::load(doc);
}

/// What `kjit args…` printed and returned, run in process.
struct cli_result {
    exit_status status;
    std::string out, err;
};
inline cli_result kjit_cli(std::vector<std::string> args) {
    args.insert(args.begin(), "kjit");
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    std::ostringstream out, err;
    const auto status = cli::run(static_cast<int>(argv.size()), argv.data(), out, err);
    return {status, out.str(), err.str()};
}

/// The message of the kjit::error that `f` throws, checking its kind.
template <class F>
std::string error_message(F&& f, error_kind expected = error_kind::config) {
    try {
        f();
    } catch (const error& e) {
        CHECK(e.kind() == expected);
        return e.what();
    }
    FAIL("expected a kjit::error");
    return {};
}

/// Waits until `ready()` holds or `child` has ended, looking every 2 ms for 60 s at most: true
/// where the child still runs. A child that ended is reaped here (a later waitpid on it fails).
/// What a signal to a working kjit waits on: a fixed delay from the fork once came after CI's
/// faster machine had finished the work.
inline bool runs_when_ready(pid_t child, const std::function<bool()>& ready) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    int status = 0;
    while (::waitpid(child, &status, WNOHANG) == 0) {
        if (ready() || std::chrono::steady_clock::now() >= deadline) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
}

}  // namespace kjit::testing
