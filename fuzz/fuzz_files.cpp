// libFuzzer target: the files kjit reads besides configs, each from mutated bytes. The first byte
// picks the reader, the rest is the file: a `kjit tune --replay` recording (through the command
// line, whose every refusal is one line of kjit::error: "internal error" is a finding), an entry
// of the tuning database (CACHE/tune/<hash>.json: a damaged one is a warning), or an .npy file
// (its header and data). A crash, a hang or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include <unistd.h>

#include "cli/cli.hpp"
#include "jit/disk_cache.hpp"
#include "tune/database.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/npy.hpp"

using namespace kjit;

namespace {

const std::filesystem::path& scratch() {
    static const std::filesystem::path folder = [] {
        auto path = std::filesystem::temp_directory_path() / ("kjit-fuzz-files-" + std::to_string(::getpid()));
        std::filesystem::create_directories(path / jit::k_tuning_folder);
        std::atexit([] {
            std::error_code ignored;
            std::filesystem::remove_all(scratch(), ignored);
        });
        return path;
    }();
    return folder;
}

void replay(const std::filesystem::path& file) {
    const std::string path = file.string();
    const char* argv[] = {"kjit", "tune", KJIT_SOURCE_DIR "/configs/tune_softmax.json", "--replay", path.c_str()};
    std::ostringstream out, err;
    (void)cli::run(5, argv, out, err);
    if (err.str().starts_with("kjit: internal error")) std::abort();  // (not a quote of the input)
}

void tuning_database(const std::string& bytes) {
    const config::json_value key = {{"fuzz", 1}, {"device", "GPU A"}};
    const tune::database probe(scratch(), key);
    fs::write_file_atomic(probe.file(), bytes);
    const tune::database read(scratch(), key);
    (void)read.best();
    (void)tune::key_on_same_arch(scratch(), {{"fuzz", 1}, {"device", "GPU B"}});
}

void npy_file(const std::filesystem::path& file) {
    try {
        const npy::layout at = npy::read_header(file);
        (void)npy::read_data(file, at);
    } catch (const error&) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
    const auto file = scratch() / "input";
    switch (data[0] % 3) {
        case 0:
            fs::write_file_atomic(file, bytes);
            replay(file);
            break;
        case 1: tuning_database(bytes); break;
        default:
            fs::write_file_atomic(file, bytes);
            npy_file(file);
            break;
    }
    return 0;
}
