// The disk cache on its own (no NVRTC): publish, hit, corruption, concurrent writers, clear.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "helpers.hpp"
#include "jit/disk_cache.hpp"

using namespace kjit;

namespace {
const std::string k_key = "0123456789abcdef0123456789abcdef";
jit::cache_entry sample_entry(const std::string& tag = "") {
    return {"// ptx " + tag, std::string("\x7f" "ELF cubin ") + tag + std::string(1000, 'x'), {{"label", "sample"}}};
}
}  // namespace

TEST_CASE("miss, store, hit") {
    kjit::testing::temp_dir dir;
    jit::disk_cache cache(dir.path());
    CHECK(cache.lookup(k_key).status == jit::lookup_status::miss);
    cache.store(k_key, sample_entry(), false);
    const auto found = cache.lookup(k_key);
    REQUIRE(found.status == jit::lookup_status::hit);
    CHECK(found.entry.ptx == sample_entry().ptx);
    CHECK(found.entry.cubin == sample_entry().cubin);
    CHECK(found.entry.meta["label"] == "sample");
    CHECK(cache.list().size() == 1);
}

TEST_CASE("a truncated, altered or half-missing entry is corrupt, never a hit") {
    kjit::testing::temp_dir dir;
    jit::disk_cache cache(dir.path());
    const auto entry_dir = cache.entries_dir() / k_key;

    cache.store(k_key, sample_entry(), false);
    std::filesystem::resize_file(entry_dir / "program.cubin", 10);
    auto found = cache.lookup(k_key);
    CHECK(found.status == jit::lookup_status::corrupt);
    CHECK(found.problem.find("truncated") != std::string::npos);
    CHECK(found.entry.cubin.empty());

    cache.store(k_key, sample_entry(), true);  // replace
    CHECK(cache.lookup(k_key).status == jit::lookup_status::hit);
    {
        std::fstream f(entry_dir / "program.ptx", std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(3);
        f.put('#');
    }
    found = cache.lookup(k_key);
    CHECK(found.status == jit::lookup_status::corrupt);
    CHECK(found.problem == "ptx hash mismatch");

    cache.store(k_key, sample_entry(), true);
    std::filesystem::remove(entry_dir / "meta.json");
    CHECK(cache.lookup(k_key).status == jit::lookup_status::corrupt);

    std::ofstream(entry_dir / "meta.json") << "{not json";
    CHECK(cache.lookup(k_key).status == jit::lookup_status::corrupt);
    cache.store(k_key, sample_entry(), true);
    CHECK(cache.lookup(k_key).status == jit::lookup_status::hit);
}

TEST_CASE("without replace, an existing entry is kept") {
    kjit::testing::temp_dir dir;
    jit::disk_cache cache(dir.path());
    cache.store(k_key, sample_entry("first"), false);
    cache.store(k_key, sample_entry("second"), false);
    CHECK(cache.lookup(k_key).entry.ptx == sample_entry("first").ptx);
    cache.store(k_key, sample_entry("third"), true);
    CHECK(cache.lookup(k_key).entry.ptx == sample_entry("third").ptx);
}

TEST_CASE("concurrent writers of one key leave one valid entry and no temp files") {
    kjit::testing::temp_dir dir;
    jit::disk_cache cache(dir.path());
    std::vector<std::jthread> writers;
    for (int i = 0; i < 8; ++i)
        writers.emplace_back([&, i] { cache.store(k_key, sample_entry(), i % 2 == 0); });
    writers.clear();  // join
    CHECK(cache.lookup(k_key).status == jit::lookup_status::hit);
    std::size_t files = 0;
    for (const auto& item : std::filesystem::directory_iterator(cache.entries_dir())) {
        CHECK(item.path().filename() == k_key);
        ++files;
    }
    CHECK(files == 1);
}

TEST_CASE("clear removes every entry") {
    kjit::testing::temp_dir dir;
    jit::disk_cache cache(dir.path());
    cache.store(k_key, sample_entry(), false);
    cache.store("fedcba9876543210fedcba9876543210", sample_entry(), false);
    CHECK(cache.clear() == 2);
    CHECK(cache.list().empty());
    CHECK(cache.lookup(k_key).status == jit::lookup_status::miss);
}

TEST_CASE("clear removes only what kjit wrote: entries and leftovers, not other folders") {
    kjit::testing::temp_dir dir;
    jit::disk_cache cache(dir.path());
    cache.store(k_key, sample_entry(), false);
    for (const char* other : {"venv", "vendor", "v1x", "data"}) std::filesystem::create_directories(dir.path() / other / "keep");
    std::filesystem::create_directories(cache.entries_dir() / "notes");  // a user's folder inside v1
    std::filesystem::create_directories(cache.entries_dir() / (".tmp-" + k_key + "-1.2.3"));
    std::filesystem::create_directories(cache.entries_dir() / (".old-" + k_key + "-4.5.6"));
    CHECK(cache.leftovers().size() == 2);
    CHECK(cache.clear() == 1);
    for (const char* other : {"venv", "vendor", "v1x", "data"}) CHECK(std::filesystem::exists(dir.path() / other / "keep"));
    CHECK(std::filesystem::exists(cache.entries_dir() / "notes"));
    CHECK(cache.leftovers().empty());
    CHECK(cache.list().empty());
}

TEST_CASE("a meta.json that is a FIFO is corrupt at once, not a hang") {
    kjit::testing::temp_dir dir;
    jit::disk_cache cache(dir.path());
    cache.store(k_key, sample_entry(), false);
    const auto meta = cache.entries_dir() / k_key / "meta.json";
    std::filesystem::remove(meta);
    REQUIRE(::mkfifo(meta.c_str(), 0600) == 0);
    const auto found = cache.lookup(k_key);
    CHECK(found.status == jit::lookup_status::corrupt);
    CHECK(found.problem.find("not a regular file") != std::string::npos);
    CHECK(cache.list().at(0).meta.contains("problem"));
}

TEST_CASE("default location: KJIT_CACHE_DIR, then XDG_CACHE_HOME, then HOME") {
    const std::string saved_kjit = std::getenv("KJIT_CACHE_DIR") ? std::getenv("KJIT_CACHE_DIR") : "";
    const std::string saved_xdg = std::getenv("XDG_CACHE_HOME") ? std::getenv("XDG_CACHE_HOME") : "";
    const std::string saved_home = std::getenv("HOME") ? std::getenv("HOME") : "";
    ::setenv("KJIT_CACHE_DIR", "/tmp/a", 1);
    ::setenv("XDG_CACHE_HOME", "/tmp/b", 1);
    CHECK(jit::disk_cache::default_root() == "/tmp/a");
    ::unsetenv("KJIT_CACHE_DIR");
    CHECK(jit::disk_cache::default_root() == "/tmp/b/kjit");
    ::unsetenv("XDG_CACHE_HOME");
    ::setenv("HOME", "/tmp/home", 1);
    CHECK(jit::disk_cache::default_root() == "/tmp/home/.cache/kjit");
    ::setenv("XDG_CACHE_HOME", "relative/cache", 1);  // invalid by the XDG spec: ignored
    CHECK(jit::disk_cache::default_root() == "/tmp/home/.cache/kjit");
    ::unsetenv("XDG_CACHE_HOME");
    ::unsetenv("HOME");  // a private per-user folder, never a shared one
    const auto fallback = jit::disk_cache::default_root();
    CHECK(fallback.filename() == "kjit-cache-" + std::to_string(::getuid()));
    CHECK((std::filesystem::status(fallback).permissions() & std::filesystem::perms::others_all) ==
          std::filesystem::perms::none);
    if (!saved_kjit.empty()) ::setenv("KJIT_CACHE_DIR", saved_kjit.c_str(), 1);
    if (!saved_xdg.empty()) ::setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1);
    ::setenv("HOME", saved_home.c_str(), 1);
}
