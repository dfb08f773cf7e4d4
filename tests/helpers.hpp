// Shared test helpers: a scratch directory, the shipped configs, and error-message checks.
#pragma once
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "config/config.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

namespace kjit::testing {

/// A fresh directory under the system temp dir, removed with the object.
class temp_dir {
public:
    temp_dir() : m_path(std::filesystem::temp_directory_path() / ("kjit-test-" + fs::unique_suffix())) {
        std::filesystem::create_directories(m_path);
    }
    ~temp_dir() {
        std::error_code ec;
        std::filesystem::remove_all(m_path, ec);
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    [[nodiscard]] const std::filesystem::path& path() const { return m_path; }

private:
    std::filesystem::path m_path;
};

inline std::string config_path(const std::string& name) { return std::string(KJIT_SOURCE_DIR) + "/configs/" + name; }

/// The embedded default config as a document, to be edited by a test.
inline config::document default_document() { return config::load_document(""); }

/// The pipeline after `edit` changes the default document.
template <class Edit>
config::pipeline pipeline_with(Edit edit) {
    auto doc = default_document();
    edit(doc.json);
    return config::from_json(doc);
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

}  // namespace kjit::testing
