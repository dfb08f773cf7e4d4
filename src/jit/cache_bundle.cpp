#include "jit/cache_bundle.hpp"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "jit/compiler.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

namespace kjit::jit {
namespace {

using json = nlohmann::json;

/// Marks a file as a kjit cache bundle, and its layout's version.
constexpr const char* k_bundle_tag = "kjit_cache_bundle";
constexpr int k_bundle_version = 1;

/// What makes another's entries useless here: each is part of every cache key (jit::cache_key).
json maker() {
    return {{"kjit_version", KJIT_VERSION}, {"cache_format", disk_cache::k_format_version},
            {"nvrtc_version", built_nvrtc_version()}};
}

std::string arch_of(const json& meta) { return meta.value("arch", std::string("unknown")); }

json entry_json(const std::string& key, const cache_entry& entry) {
    return {{"key", key},
            {"meta", entry.meta},
            {"ptx", json::binary_t(std::vector<std::uint8_t>(entry.ptx.begin(), entry.ptx.end()))},
            {"cubin", json::binary_t(std::vector<std::uint8_t>(entry.cubin.begin(), entry.cubin.end()))}};
}

cache_entry entry_of(const json& item) {
    const auto bytes = [](const json& blob) {
        const auto& b = blob.get_binary();
        return std::string(b.begin(), b.end());
    };
    return {bytes(item.at("ptx")), bytes(item.at("cubin")), item.at("meta")};
}

/// The bundle's header checked against this kjit: a mismatch is one line naming the field.
void check_maker(const json& bundle, const std::string& source) {
    if (!bundle.is_object() || bundle.value(k_bundle_tag, 0) != k_bundle_version)
        throw config_error(source, k_bundle_tag, "a kjit cache bundle (kjit cache export), version " +
                                                     std::to_string(k_bundle_version));
    const json mine = maker();
    for (const auto& [field, value] : mine.items())
        if (bundle.value(field, json()) != value)
            throw config_error(source, field, value.dump() + " as this kjit has (the cache key holds it: another's " +
                                                  "entries would never be found), got " + bundle.value(field, json()).dump() +
                                                  "; export the cache again with this kjit");
}

}  // namespace

std::string export_bundle(const disk_cache& cache, bundle_summary* summary) {
    bundle_summary made;
    made.nvrtc_version = built_nvrtc_version();
    json bundle = maker();
    bundle[k_bundle_tag] = k_bundle_version;
    bundle["entries"] = json::array();
    for (const auto& listed : cache.list()) {
        const std::string& key = listed.key;
        const lookup_result found = cache.read(key);
        if (found.status != lookup_status::hit) continue;  // gone, or damaged: not worth shipping
        bundle["entries"].push_back(entry_json(key, found.entry));
        ++made.entries;
        ++made.arches[arch_of(found.entry.meta)];
    }
    bundle["records"] = json::array();
    for (const auto& record : cache.records()) {
        bundle["records"].push_back({{"folder", record.path.parent_path().filename().string()},
                                     {"name", record.path.filename().string()},
                                     {"text", fs::read_text_file(record.path)}});
        ++made.records;
    }
    if (summary) *summary = made;
    const std::vector<std::uint8_t> bytes = json::to_cbor(bundle);
    return {bytes.begin(), bytes.end()};
}

bundle_summary import_bundle(disk_cache& cache, std::string_view bytes, const std::string& source) {
    json bundle;
    try {
        bundle = json::from_cbor(bytes.begin(), bytes.end());
    } catch (const json::exception&) {
        throw config_error(source, k_bundle_tag, "a kjit cache bundle (kjit cache export); this is not one, or it is cut short");
    }
    check_maker(bundle, source);
    bundle_summary added;
    added.nvrtc_version = bundle.value("nvrtc_version", "");
    struct record_item {
        std::string folder, name, text;
    };
    std::vector<std::pair<std::string, cache_entry>> entries;  // all read and checked before any is added
    std::vector<record_item> records;
    try {
        for (const auto& item : bundle.at("entries")) {
            entries.emplace_back(item.at("key").get<std::string>(), entry_of(item));
            const auto& [key, entry] = entries.back();
            const std::string where = "entries[" + std::to_string(entries.size() - 1) + "]";
            if (!disk_cache::is_key(key))  // it names the entry's folder: never a path
                throw config_error(source, where + ".key", "a cache key (32 hex digits), got " + json(key).dump());
            const std::string problem = disk_cache::mismatch(entry);
            if (problem.empty() && entry.meta.value("key", "") == key) continue;
            throw config_error(source, where, "an entry that matches its meta.json, got " + (problem.empty() ? "another key" : problem));
        }
        for (const auto& item : bundle.at("records"))
            records.push_back({item.at("folder").get<std::string>(), item.at("name").get<std::string>(),
                               item.at("text").get<std::string>()});
    } catch (const json::exception& e) {  // a field missing or of the wrong type
        throw config_error(source, k_bundle_tag, std::string("a kjit cache bundle's fields; ") + e.what());
    }
    added.entries = entries.size();
    added.records = records.size();
    for (auto& [key, entry] : entries) {
        ++added.arches[arch_of(entry.meta)];
        if (cache.read(key).status == lookup_status::hit) continue;  // kept: the same bytes, by its key
        cache.store(key, entry, /*replace=*/false);
        ++added.entries_added;
    }
    for (const auto& r : records) added.records_added += cache.add_record(r.folder, r.name, r.text) ? 1 : 0;
    return added;
}

}  // namespace kjit::jit
