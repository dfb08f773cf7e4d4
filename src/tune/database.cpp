#include "tune/database.hpp"

#include <chrono>
#include <ctime>

#include "jit/compiler.hpp"
#include "jit/disk_cache.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/hash.hpp"
#include "util/strings.hpp"

namespace kjit::tune {
namespace {

using config::json_value;

/// The entry's own format: a file of another format is not read.
constexpr int k_database_format = 1;

json_value optional_number(const std::optional<double>& value) { return value ? json_value(*value) : json_value(nullptr); }

std::optional<double> number_or_null(const json_value& value) {
    return value.is_number() ? std::optional<double>(value.get<double>()) : std::nullopt;
}

}  // namespace

json_value key_of(const config::document& doc, const run::device_info& device, const codegen::template_set& templates) {
    json_value config = doc.json;
    for (const char* away : {"launch", "tune", "sweep", "measure", "name", "description", "tolerance", "seed"})
        config.erase(away);
    // Of an input, only its shape (its own "shape", as a matmul's W has, and "per": a value per
    // row or column) reaches the kernels; its values (the fill, a file) do not decide which launch
    // is fastest.
    if (config.contains("inputs") && config["inputs"].is_object())
        for (auto& [name, input] : config["inputs"].items()) {
            if (!input.is_object()) continue;
            json_value kept = json_value::object();
            for (const char* shaping : {"shape", "per"})
                if (input.contains(shaping)) kept[shaping] = input[shaping];
            input = kept;
        }
    field_hasher kernels;
    kernels.add(KJIT_VERSION).add(std::to_string(jit::disk_cache::k_format_version));
    for (const auto& [file, text] : templates.files) kernels.add(file).add(text);
    return {{"config", config},
            {"device", device.name},
            {"arch", device.arch},
            {"driver", device.driver_version},
            {"nvrtc", jit::built_nvrtc_version()},
            {"kernels", kernels.hex_digest()}};
}

database::database(const std::filesystem::path& cache_root, json_value key)
    : m_file(cache_root / jit::k_tuning_folder / (xxh3_128_hex(key.dump()) + ".json")), m_key(std::move(key)) {
    std::error_code ec;
    if (!std::filesystem::exists(m_file, ec)) return;
    try {
        // kjit's reader, whose depth limit refuses a damaged file before it could exhaust the stack.
        const json_value stored = config::parse_json(fs::read_text_file(m_file), m_file.string());
        if (stored.value("format", 0) != k_database_format || stored.at("key") != m_key)
            throw std::runtime_error("another format or key");
        for (const auto& p : stored.at("points"))
            m_points.push_back({p.at("values"), number_or_null(p.at("ms")), number_or_null(p.at("roofline")),
                                p.at("status").get<std::string>(), p.value("message", ""), p.value("measured", "")});
    } catch (const std::exception& e) {
        m_points.clear();
        m_warning = "the tuning database " + m_file.string() + " could not be read (" + bounded(e.what(), 200) +
                    "); its points are measured again and the file replaced";
    }
}

std::optional<json_value> key_on_same_arch(const std::filesystem::path& cache_root, const json_value& key) {
    json_value wanted = key;
    wanted.erase("device");
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(cache_root / jit::k_tuning_folder, ec)) {
        if (!entry.is_regular_file(ec) || entry.path().extension() != ".json") continue;
        try {
            const json_value stored = config::parse_json(fs::read_text_file(entry.path()), entry.path().string());
            json_value other = stored.at("key");
            if (other.value("device", "") == key.value("device", "")) continue;
            other.erase("device");
            if (other == wanted && stored.value("format", 0) == k_database_format) return stored.at("key");
        } catch (const std::exception&) {  // a damaged entry is another tune's problem: skipped
        }
    }
    return std::nullopt;
}

const stored_point* database::find(const json_value& values) const {
    for (const auto& p : m_points)
        if (p.values == values) return &p;
    return nullptr;
}

void database::add(stored_point point) {
    for (auto& p : m_points)
        if (p.values == point.values) {
            p = std::move(point);
            return;
        }
    m_points.push_back(std::move(point));
}

void database::save() const {
    json_value points = json_value::array();
    for (const auto& p : m_points)
        points.push_back({{"values", p.values},
                          {"ms", optional_number(p.ms)},
                          {"roofline", optional_number(p.roofline)},
                          {"status", p.status},
                          {"message", p.message},
                          {"measured", p.measured}});
    std::filesystem::create_directories(m_file.parent_path());
    fs::write_file_atomic(m_file, json_value{{"format", k_database_format}, {"key", m_key}, {"points", points}}.dump(1) + "\n");
}

const stored_point* database::best() const {
    const stored_point* found = nullptr;
    for (const auto& p : m_points)
        if (p.ms && p.status == "PASS" && (!found || *p.ms < *found->ms)) found = &p;
    return found;
}

std::string utc_now() {
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm parts{};
    gmtime_r(&now, &parts);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
    return text;
}

}  // namespace kjit::tune
