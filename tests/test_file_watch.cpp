// file_watch: saves in place and by rename are seen, other files in the folder are not, and an
// interrupt ends the wait. Real inotify on a temp folder; no GPU.
#include <fstream>
#include <thread>

#include "helpers.hpp"
#include "util/file_watch.hpp"
#include "util/interrupt.hpp"

using namespace kjit;

namespace {
void write(const std::filesystem::path& path, const std::string& text) { std::ofstream(path) << text; }
}  // namespace

TEST_CASE("file_watch: an in-place save and a rename over the file are seen; a neighbour is not") {
    kjit::testing::temp_dir dir;
    const auto config = dir.path() / "c.json";
    write(config, "{}");
    file_watch watch({config});

    std::jthread in_place([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        write(dir.path() / "other.json", "{}");  // not watched: must not wake it
        write(config, "{\"n\": 1}");
    });
    const auto first = watch.wait();
    REQUIRE(first.has_value());
    CHECK(first->filename() == "c.json");
    in_place.join();

    std::jthread renamed([&] {  // how vim and most IDEs save: a new file renamed over the old
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        write(dir.path() / "c.json.tmp", "{\"n\": 2}");
        std::filesystem::rename(dir.path() / "c.json.tmp", config);
    });
    const auto second = watch.wait();
    REQUIRE(second.has_value());
    CHECK(second->filename() == "c.json");
}

TEST_CASE("file_watch: Ctrl-C ends the wait with nothing") {
    kjit::testing::temp_dir dir;
    file_watch watch({dir.path()});
    set_interrupted(true);
    const auto got = watch.wait(std::chrono::milliseconds(10));
    set_interrupted(false);
    CHECK_FALSE(got.has_value());
}

TEST_CASE("file_watch: a folder that does not exist is an io error naming it") {
    CHECK_THROWS_WITH_AS(file_watch({std::filesystem::path("/nonexistent-kjit/c.json")}),
                         doctest::Contains("/nonexistent-kjit"), error);
}
