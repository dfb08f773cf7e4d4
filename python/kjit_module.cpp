// kjit's Python module (_kjit): the library's session behind a few calls that take and give text
// (a config as a path or JSON, records as JSON), so that python/kjit/__init__.py owns everything
// Pythonic (dicts, DataFrames, exceptions) and no logic is written twice. A kjit::error crosses as
// _kjit.KjitError(kind, message); the package turns it into ConfigError or Error.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "config/config.hpp"
#include "cuda/cuda_gpu.hpp"
#include "family/family.hpp"
#include "report/files.hpp"
#include "run/session.hpp"
#include "util/error.hpp"

namespace nb = nanobind;
using namespace kjit;

namespace {

PyObject* g_kjit_error = nullptr;

/// A config given as a path, or as JSON text (a dict from Python arrives as JSON), with each
/// "key.path=value" of `sets` applied as --set does.
config::document document_of(const std::string& config, const std::vector<std::string>& sets) {
    const bool text = config.find_first_not_of(" \t\r\n") != std::string::npos &&
                      config[config.find_first_not_of(" \t\r\n")] == '{';
    config::document doc = text ? config::parse_document(config, "<python config>") : config::load_document(config);
    for (const auto& assignment : sets) config::apply_override(doc, assignment);
    return doc;
}

std::string rows_json(const std::vector<report::record>& records) { return report::to_json(report::rows_of(records)); }

/// One kjit session: templates, the bounded cache, and the GPUs, opened only when a run needs one.
class python_session {
public:
    python_session(int device, const std::optional<std::string>& cache_dir)
        : m_device(device), m_session({"", cache_dir.value_or(""), std::nullopt, jit::cache_mode::use}, cuda::driver_gpus()) {}

    std::string emit(const std::string& config, const std::vector<std::string>& sets) {
        return family::plan(family::load(document_of(config, sets)), m_session.templates()).source;
    }
    std::string compile(const std::string& config, const std::vector<std::string>& sets) {
        const config::document doc = document_of(config, sets);
        return rows_json({m_session.compile(family::load(doc), doc.source)});
    }
    std::string run(const std::string& config, const std::vector<std::string>& sets) {
        const config::document doc = document_of(config, sets);
        nb::gil_scoped_release unlocked;  // the GPU work needs no Python
        // The device stays open in the session: the next run pays no CUDA start-up, this one no teardown.
        return rows_json(m_session.run(family::load(doc), doc.source, {.device = m_device, .keep_device = true}));
    }
    std::string sweep(const std::string& config, const std::vector<std::string>& sets, bool compile_only) {
        const config::document doc = document_of(config, sets);
        const auto points = family::expand_sweep(doc);
        nb::gil_scoped_release unlocked;
        run::sweep_request request;
        request.devices = std::to_string(m_device);
        request.compile_only = compile_only;
        return rows_json(m_session.sweep(points, doc.source, request).records);
    }

private:
    int m_device;
    run::session m_session;
};

const char* kind_name(error_kind kind) {
    switch (kind) {
        case error_kind::usage: return "usage";
        case error_kind::config: return "config";
        case error_kind::compile: return "compile";
        case error_kind::driver: return "driver";
        case error_kind::io: return "io";
        case error_kind::check: return "check";
        case error_kind::memory: return "memory";
        case error_kind::interrupted: return "interrupted";
    }
    return "error";
}

}  // namespace

NB_MODULE(_kjit, m) {
    g_kjit_error = PyErr_NewException("kjit._kjit.KjitError", nullptr, nullptr);
    m.attr("KjitError") = nb::handle(g_kjit_error);
    nb::register_exception_translator([](const std::exception_ptr& p, void*) {
        try {
            std::rethrow_exception(p);
        } catch (const error& e) {
            PyErr_SetObject(g_kjit_error, nb::make_tuple(kind_name(e.kind()), e.what()).ptr());
        }
    });
    m.attr("version") = KJIT_VERSION;
    nb::list phases;  // the record's phase columns, less "_ms", in order
    for (std::size_t i = 0; i < report::k_phase_count; ++i) phases.append(report::phase_name(static_cast<report::phase>(i)));
    m.attr("phases") = phases;
    nb::class_<python_session>(m, "Session")
        .def(nb::init<int, const std::optional<std::string>&>(), nb::arg("device"), nb::arg("cache_dir").none())
        .def("emit", &python_session::emit)
        .def("compile", &python_session::compile)
        .def("run", &python_session::run)
        .def("sweep", &python_session::sweep);
}
