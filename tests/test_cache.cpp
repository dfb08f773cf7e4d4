// The disk cache on its own (no NVRTC): publish, hit, corruption, concurrent writers, clear, and
// the bound: least-recently-used pruning, verify, leftovers, sizes.
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <set>
#include <thread>

#include "helpers.hpp"
#include "jit/cache_bundle.hpp"
#include "jit/disk_cache.hpp"
#include "util/fs.hpp"
#include "util/units.hpp"

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

namespace {
std::string key_of(int i) {
    std::string key = k_key;
    key[0] = "0123456789abcdef"[i % 16];
    key[1] = "0123456789abcdef"[i / 16 % 16];
    return key;
}
/// Sets an entry's last use `minutes` ago, as a hit long ago would have.
void used_minutes_ago(const jit::disk_cache& cache, const std::string& key, int minutes) {
    std::filesystem::last_write_time(cache.entries_dir() / key,
                                     std::filesystem::file_time_type::clock::now() - std::chrono::minutes(minutes));
}
std::uintmax_t entry_bytes(const jit::disk_cache& cache) {
    std::uintmax_t total = 0;
    for (const auto& e : cache.list()) total += e.bytes;
    return total;
}
}  // namespace

TEST_CASE("prune keeps the most recently used entries that fit the limit; a hit counts as a use") {
    kjit::testing::temp_dir dir;
    jit::disk_cache unbounded(dir.path(), 0);
    for (int i = 0; i < 6; ++i) {
        unbounded.store(key_of(i), sample_entry(std::to_string(i)), false);
        used_minutes_ago(unbounded, key_of(i), 60 - i);  // entry 5 is the newest
    }
    const std::uintmax_t one = entry_bytes(unbounded) / 6;
    CHECK(unbounded.prune().least_used == 0);  // no limit: nothing goes
    CHECK(unbounded.list().size() == 6);

    REQUIRE(unbounded.lookup(key_of(0)).status == jit::lookup_status::hit);  // the oldest becomes the newest
    jit::disk_cache bounded(dir.path(), 3 * one + one / 2);
    const auto pruned = bounded.prune();
    CHECK(pruned.least_used == 3);
    CHECK(pruned.bytes_kept <= bounded.limit());
    CHECK(pruned.bytes_freed == 3 * one);
    std::set<std::string> kept;
    for (const auto& e : bounded.list()) kept.insert(e.key);
    CHECK(kept == std::set<std::string>{key_of(0), key_of(4), key_of(5)});
    CHECK(bounded.leftovers().empty());  // removed entries leave no .old-*
}

TEST_CASE("tuning records (CACHE/tune/<hash>.json) are counted by stats and pruned with the entries, oldest first; no other file") {
    kjit::testing::temp_dir dir;
    jit::disk_cache unbounded(dir.path(), 0);
    unbounded.store(key_of(0), sample_entry("0"), false);
    used_minutes_ago(unbounded, key_of(0), 30);
    const std::uintmax_t entry = entry_bytes(unbounded);
    const auto tune = dir.path() / jit::k_tuning_folder;
    std::filesystem::create_directories(tune);
    const auto record = [&](int i, int minutes_ago) {
        const auto path = tune / (std::string(31, 'a') + std::to_string(i) + ".json");
        std::ofstream(path) << std::string(entry, 'r');  // a record as large as the entry
        std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now() - std::chrono::minutes(minutes_ago));
        return path;
    };
    const auto oldest = record(1, 60), newest = record(2, 10);
    std::ofstream(tune / "notes.json") << std::string(10 * entry, 'n');  // not kjit's: never counted, never removed
    CHECK(unbounded.records().size() == 2);
    const auto stats = kjit::testing::kjit_cli({"cache", "stats", "--cache-dir", dir.path().string()});
    CHECK(stats.out.find("1 entries") != std::string::npos);
    CHECK(stats.out.find("; 2 tuning records, ") != std::string::npos);

    jit::disk_cache bounded(dir.path(), 2 * entry + entry / 2);  // room for two of the three
    const auto pruned = bounded.prune();
    CHECK(pruned.records == 1);
    CHECK(pruned.least_used == 0);
    CHECK_FALSE(std::filesystem::exists(oldest));
    CHECK(std::filesystem::exists(newest));
    CHECK(std::filesystem::exists(tune / "notes.json"));
    CHECK(bounded.list().size() == 1);
}

TEST_CASE("verify re-hashes every entry without marking it used; prune(true) removes the damaged ones") {
    kjit::testing::temp_dir dir;
    jit::disk_cache cache(dir.path());
    for (int i = 0; i < 3; ++i) cache.store(key_of(i), sample_entry(std::to_string(i)), false);
    used_minutes_ago(cache, key_of(1), 30);
    const auto before = std::filesystem::last_write_time(cache.entries_dir() / key_of(1));
    CHECK(cache.verify().empty());
    CHECK(std::filesystem::last_write_time(cache.entries_dir() / key_of(1)) == before);

    std::ofstream(cache.entries_dir() / key_of(1) / "program.cubin", std::ios::app) << "tail";
    const auto damaged = cache.verify();
    REQUIRE(damaged.size() == 1);
    CHECK(damaged[0].key == key_of(1));
    CHECK(damaged[0].problem.find("cubin") != std::string::npos);
    CHECK(cache.prune().damaged == 0);  // a plain prune only bounds the size
    const auto pruned = cache.prune(true);
    CHECK(pruned.damaged == 1);
    CHECK(cache.list().size() == 2);
    CHECK(cache.verify().empty());
}

TEST_CASE("prune removes stale leftovers of killed writers, but not a writer at work") {
    kjit::testing::temp_dir dir;
    jit::disk_cache cache(dir.path());
    cache.store(k_key, sample_entry(), false);
    const auto stale = cache.entries_dir() / (".tmp-" + k_key + "-1.2.3");
    const auto fresh = cache.entries_dir() / (".tmp-" + k_key + "-4.5.6");
    std::filesystem::create_directories(stale);
    std::filesystem::create_directories(fresh);
    std::filesystem::last_write_time(stale, std::filesystem::file_time_type::clock::now() - std::chrono::hours(2));
    CHECK(cache.prune().leftovers == 1);
    CHECK_FALSE(std::filesystem::exists(stale));
    CHECK(std::filesystem::exists(fresh));
    CHECK(cache.lookup(k_key).status == jit::lookup_status::hit);
}

TEST_CASE("an entry removed while it is being read is a miss, not a damaged entry") {
    kjit::testing::temp_dir dir;
    jit::disk_cache cache(dir.path());
    cache.store(k_key, sample_entry(), false);
    std::atomic<bool> stop{false};
    std::thread remover([&] {
        jit::disk_cache other(dir.path(), 1);  // a limit of 1 byte: every prune removes the entry
        while (!stop) {
            (void)other.prune();
            cache.store(k_key, sample_entry(), false);
        }
    });
    int corrupt = 0;
    for (int i = 0; i < 2000; ++i) corrupt += cache.lookup(k_key).status == jit::lookup_status::corrupt;
    stop = true;
    remover.join();
    CHECK(corrupt == 0);
}

TEST_CASE("cache sizes: KJIT_CACHE_LIMIT and --cache-limit take 2GiB, 500MB or bytes; anything else is exit 2") {
    CHECK(units::parse_bytes("2GiB") == std::uintmax_t{2} << 30);
    CHECK(units::parse_bytes("500 MB") == 500'000'000u);
    CHECK(units::parse_bytes("1.5kib") == 1536u);
    CHECK(units::parse_bytes("4096") == 4096u);
    CHECK(units::parse_bytes("0") == 0u);
    for (const char* bad : {"", "-1GiB", "2 GiBs", "GiB", "1e300", "nan", "1x"}) CHECK_FALSE(units::parse_bytes(bad));

    const std::string saved = std::getenv("KJIT_CACHE_LIMIT") ? std::getenv("KJIT_CACHE_LIMIT") : "";
    ::setenv("KJIT_CACHE_LIMIT", "64MiB", 1);
    CHECK(jit::disk_cache::default_limit() == std::uintmax_t{64} << 20);
    ::setenv("KJIT_CACHE_LIMIT", "lots", 1);
    CHECK(kjit::testing::error_message([] { (void)jit::disk_cache::default_limit(); }, error_kind::usage)
              .find("KJIT_CACHE_LIMIT=lots") != std::string::npos);
    ::unsetenv("KJIT_CACHE_LIMIT");
    CHECK(jit::disk_cache::default_limit() == jit::disk_cache::k_default_limit);
    if (!saved.empty()) ::setenv("KJIT_CACHE_LIMIT", saved.c_str(), 1);

    const auto r = kjit::testing::kjit_cli({"cache", "prune", "--cache-limit", "ten"});
    CHECK(r.status == exit_status::usage);
    CHECK(r.err.find("--cache-limit ten") != std::string::npos);
}

TEST_CASE("kjit cache verify finds a damaged entry (exit 1); prune removes it; stats shows the limit") {
    kjit::testing::temp_dir dir;
    jit::disk_cache cache(dir.path());
    for (int i = 0; i < 3; ++i) cache.store(key_of(i), sample_entry(std::to_string(i)), false);
    const std::string d = dir.path().string();
    CHECK(kjit::testing::kjit_cli({"cache", "verify", "--cache-dir", d}).status == exit_status::ok);
    std::ofstream(cache.entries_dir() / key_of(2) / "program.ptx") << "changed";
    const auto verify = kjit::testing::kjit_cli({"cache", "verify", "--cache-dir", d});
    CHECK(verify.status == exit_status::failure);
    CHECK(verify.err.find(key_of(2)) != std::string::npos);
    CHECK(verify.out.find("1 damaged") != std::string::npos);
    const auto prune = kjit::testing::kjit_cli({"cache", "prune", "--cache-dir", d, "--cache-limit", "0"});
    CHECK(prune.status == exit_status::ok);
    CHECK(prune.out.find("removed 1 damaged and 0 least recently used") != std::string::npos);
    const auto stats = kjit::testing::kjit_cli({"cache", "stats", "--cache-dir", d, "--cache-limit", "1MiB"});
    CHECK(stats.out.find("2 entries") != std::string::npos);
    CHECK(stats.out.find("limit 1.00 MiB") != std::string::npos);
}

TEST_CASE("the cache deletes only its own entries: not through a linked version folder, not a key-named folder of someone else's") {
    kjit::testing::temp_dir dir, elsewhere;
    // v1 is a link to a folder outside the cache that holds key-named folders of its own.
    const auto outside = elsewhere.path() / k_key;
    std::filesystem::create_directories(outside);
    std::ofstream(outside / "program.ptx") << "not kjit's";
    std::filesystem::create_directories(dir.path() / "root");
    std::filesystem::create_directory_symlink(elsewhere.path(), dir.path() / "root" / "v1");
    jit::disk_cache linked(dir.path() / "root", 1);  // a one-byte limit: prune would take everything it sees
    (void)linked.prune(true);
    (void)linked.clear();
    CHECK(std::filesystem::exists(outside / "program.ptx"));

    // A key-named folder that holds something kjit never writes, in another version's folder.
    jit::disk_cache cache(dir.path() / "cache");
    cache.store(k_key, sample_entry(), false);
    const auto foreign = dir.path() / "cache" / "v2" / k_key;
    std::filesystem::create_directories(foreign);
    std::ofstream(foreign / "notes.txt") << "mine";
    CHECK(cache.clear() == 1);  // kjit's entry, and only it
    CHECK(std::filesystem::exists(foreign / "notes.txt"));
    CHECK(cache.leftovers().empty());  // the entry was renamed away, then deleted
}

TEST_CASE("kjit cache export / import: a fresh cache gets every entry and tuning record; what it had stays") {
    kjit::testing::temp_dir from, to, scratch;
    jit::disk_cache source(from.path()), fresh(to.path());
    for (int i = 0; i < 3; ++i) source.store(key_of(i), sample_entry(std::to_string(i)), false);
    REQUIRE(source.add_record(jit::k_tuning_folder, key_of(7) + ".json", R"({"best": 1})"));
    CHECK_FALSE(source.add_record(jit::k_tuning_folder, key_of(7) + ".json", R"({"best": 2})"));  // never replaced
    // The fresh cache has one entry of its own and a record of the same name, different: both stay.
    fresh.store(key_of(1), sample_entry("1"), false);
    REQUIRE(fresh.add_record(jit::k_tuning_folder, key_of(7) + ".json", R"({"best": 3})"));
    const std::string bundle = (scratch.path() / "cache.kjit").string();

    const auto exported = kjit::testing::kjit_cli({"cache", "export", bundle, "--cache-dir", from.path().string()});
    CHECK(exported.status == exit_status::ok);
    CHECK(exported.out.find("exported 3 entries") != std::string::npos);
    CHECK(exported.out.find("and 1 tuning records") != std::string::npos);
    const auto imported = kjit::testing::kjit_cli({"cache", "import", bundle, "--cache-dir", to.path().string()});
    CHECK(imported.status == exit_status::ok);
    CHECK(imported.out.find("added 2 entries and 0 records") != std::string::npos);
    for (int i = 0; i < 3; ++i) CHECK(fresh.lookup(key_of(i)).entry.ptx == sample_entry(std::to_string(i)).ptx);
    CHECK(fs::read_file(to.path() / jit::k_tuning_folder / (key_of(7) + ".json")) == R"({"best": 3})");
    // Again: nothing new.
    CHECK(kjit::testing::kjit_cli({"cache", "import", bundle, "--cache-dir", to.path().string()}).out.find(
              "added 0 entries and 0 records") != std::string::npos);
}

TEST_CASE("kjit cache import refuses, adding nothing, a bundle of another kjit, a damaged one, or no bundle (exit 2)") {
    kjit::testing::temp_dir from, to;
    jit::disk_cache source(from.path()), fresh(to.path());
    for (int i = 0; i < 2; ++i) source.store(key_of(i), sample_entry(std::to_string(i)), false);
    const std::string bundle = jit::export_bundle(source);
    const auto import_refused = [&](const std::string& bytes, const std::string& expected) {
        const std::string message = kjit::testing::error_message(
            [&] { (void)jit::import_bundle(fresh, bytes, "cache.kjit"); }, error_kind::config);
        CHECK_MESSAGE(message.find(expected) != std::string::npos, message);
        CHECK(fresh.list().empty());
    };
    const auto cbor = [](const nlohmann::json& j) {
        const auto bytes = nlohmann::json::to_cbor(j);
        return std::string(bytes.begin(), bytes.end());
    };
    auto other = nlohmann::json::from_cbor(bundle);
    other["kjit_version"] = "0.4.0";
    import_refused(cbor(other), "cache.kjit: kjit_version: ");
    import_refused(cbor(other), "export the cache again with this kjit");
    auto damaged = nlohmann::json::from_cbor(bundle);
    damaged["entries"][1]["ptx"].get_binary()[0] ^= 1;  // the second entry: the first is not added either
    import_refused(cbor(damaged), "cache.kjit: entries[1]: an entry that matches its meta.json, got ptx hash mismatch");
    auto escaping = nlohmann::json::from_cbor(bundle);  // a key is a folder's name: never a path out of the cache
    escaping["entries"][0]["key"] = "../../outside";
    escaping["entries"][0]["meta"]["key"] = "../../outside";
    import_refused(cbor(escaping), "cache.kjit: entries[0].key: a cache key (32 hex digits), got \"../../outside\"");
    import_refused(bundle.substr(0, bundle.size() / 2), "cache.kjit: kjit_cache_bundle: a kjit cache bundle");
    import_refused("{\"json\": 1}", "cache.kjit: kjit_cache_bundle: a kjit cache bundle");
    CHECK(kjit::testing::kjit_cli({"cache", "import", "--cache-dir", to.path().string()}).status == exit_status::usage);
    CHECK(kjit::testing::kjit_cli({"cache", "list", "extra", "--cache-dir", to.path().string()}).status == exit_status::usage);
}
