// kjit's Python module (_kjit): the library's session behind a few calls that take and give text
// (a config as a path or JSON, records as JSON), so that python/kjit/__init__.py owns everything
// Pythonic (dicts, DataFrames, the exception classes) and no logic is written twice. A kjit::error
// crosses as the package's ConfigError or Error (handed in at import), with the CLI's line.
// A kernel's call is the one path here that is timed per call: it reads the arrays in C (the
// DLPack exchange table, or a tensor's methods) and enqueues with no Python frame of kjit's.
#include <csignal>
#include <sstream>
#include <deque>
#include <tuple>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "config/config.hpp"
#include "cuda/cuda_gpu.hpp"
#include "family/family.hpp"
#include "report/files.hpp"
#include "report/table.hpp"
#include "report/trace.hpp"
#include "run/callable.hpp"
#include "run/session.hpp"
#include "tune/summary.hpp"
#include "tune/tuner.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/interrupt.hpp"
#include "why/counters.hpp"
#include "why/sass.hpp"
#include "util/strings.hpp"

namespace nb = nanobind;
using namespace kjit;

namespace {

/// kjit.Error and kjit.ConfigError, defined by the package and handed in when it is imported.
PyObject* g_error_type = nullptr;
PyObject* g_config_error_type = nullptr;

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

/// A record as the command prints it (its warnings, then its table), and as JSON rows: what a
/// Result shows in a notebook, and what it holds.
std::pair<std::string, std::string> shown(const report::record& rec) {
    std::ostringstream text;
    report::print_warnings(text, rec);
    report::print_record(text, rec);
    return {rows_json({rec}), text.str()};
}

/// While alive, Ctrl-C (SIGINT) asks kjit's work to stop after what is in flight, as `kjit sweep`
/// does, instead of going to Python's handler, which cannot run while the GIL is released.
class graceful_interrupt {
public:
    graceful_interrupt() {
        set_interrupted(false);
        struct sigaction ask{};
        ask.sa_handler = [](int) { set_interrupted(true); };  // an atomic store: safe in a handler
        sigemptyset(&ask.sa_mask);
        sigaction(SIGINT, &ask, &m_python);
    }
    ~graceful_interrupt() { sigaction(SIGINT, &m_python, nullptr); }
    graceful_interrupt(const graceful_interrupt&) = delete;
    graceful_interrupt& operator=(const graceful_interrupt&) = delete;

private:
    struct sigaction m_python{};
};

/// kjit's name for a DLPack element type ("bfloat16"), or numpy's ("int64") for one it has none for.
std::string_view dtype_name(nb::dlpack::dtype t) {
    using code = nb::dlpack::dtype_code;
    static const std::pair<std::pair<code, int>, std::string_view> names[] = {
        {{code::Float, 32}, "float32"}, {{code::Float, 64}, "float64"}, {{code::Float, 16}, "float16"},
        {{code::Bfloat, 16}, "bfloat16"}, {{code::Int, 8}, "int8"}, {{code::Int, 16}, "int16"},
        {{code::Int, 32}, "int32"}, {{code::Int, 64}, "int64"}, {{code::UInt, 8}, "uint8"},
        {{code::UInt, 16}, "uint16"}, {{code::UInt, 32}, "uint32"}, {{code::UInt, 64}, "uint64"},
        {{code::Bool, 8}, "bool"}};
    for (const auto& [key, name] : names)
        if (static_cast<uint8_t>(key.first) == t.code && key.second == t.bits && t.lanes == 1) return name;
    return "an element type kjit has no name for";
}

/// The same for a __cuda_array_interface__ typestr ("<f4").
std::string_view typestr_name(const std::string& typestr) {
    static const std::pair<std::string_view, std::string_view> names[] = {
        {"f4", "float32"}, {"f8", "float64"}, {"f2", "float16"}, {"i1", "int8"}, {"i2", "int16"}, {"i4", "int32"},
        {"i8", "int64"}, {"u1", "uint8"}, {"u2", "uint16"}, {"u4", "uint32"}, {"u8", "uint64"}, {"b1", "bool"}};
    for (const auto& [code, name] : names)
        if (typestr.size() == 3 && typestr.substr(1) == code) return name;
    return "an element type kjit has no name for";
}

/// C order with no gaps: each stride is the product of the extents after it (extents of 1 aside).
bool c_contiguous(std::size_t ndim, const int64_t* shape, const int64_t* strides, int64_t item_bytes) {
    int64_t expected = item_bytes;
    for (std::size_t i = ndim; i-- > 0;) {
        if (shape[i] != 1 && strides[i] != expected) return false;
        expected *= shape[i];
    }
    return true;
}

/// __cuda_array_interface__ does not say which device an array is on: it is taken to be on the kernel's.
constexpr int k_unsaid_device = -2;

/// kjit's name for a torch.dtype ("bfloat16" for torch.bfloat16). The dtypes are torch's own
/// objects, alive as long as torch: each is named once (a deque keeps the names where they are).
std::string_view torch_dtype_name(nb::handle dtype) {
    static std::deque<std::pair<PyObject*, std::string>> named;
    for (const auto& [object, name] : named)
        if (object == dtype.ptr()) return name;
    const std::string text = nb::cast<std::string>(nb::str(dtype));  // "torch.bfloat16"
    return named.emplace_back(dtype.ptr(), text.substr(text.find('.') + 1)).second;
}

/// DLPack's C exchange table (dlpack.h since 1.2, DLPackExchangeAPI), the members kjit reads: a
/// type that publishes one (PyTorch does) lets a consumer read an array's DLTensor, and its
/// library's current stream, with one C call each: no Python call, no capsule. The table lives
/// as long as the process.
struct dlpack_exchange_api {
    uint32_t major, minor;  ///< DLPackVersion: only major 1 is read
    const void* previous_api;
    const void* managed_tensor_allocator;
    const void* managed_tensor_from_py_object;
    const void* managed_tensor_to_py_object;
    int (*dltensor_from_py_object)(void* object, nb::dlpack::dltensor* out);  ///< may be null
    int (*current_work_stream)(int32_t device_type, int32_t device_id, void** stream);
};
constexpr int32_t k_dl_cuda = 2;  ///< DLDeviceType kDLCUDA

/// The exchange table `type` publishes (`__dlpack_c_exchange_api__`, a capsule; or, as first
/// specified, `__c_dlpack_exchange_api__`, an int), or null. Looked up once per type.
const dlpack_exchange_api* exchange_api_of(PyTypeObject* type) {
    static std::vector<std::pair<PyTypeObject*, const dlpack_exchange_api*>> known;  // types kept alive
    for (const auto& [t, api] : known)
        if (t == type) return api;
    const dlpack_exchange_api* found = nullptr;
    for (const char* name : {"__dlpack_c_exchange_api__", "__c_dlpack_exchange_api__"}) {
        const nb::object attribute = nb::steal(PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), name));
        if (!attribute.is_valid()) {
            PyErr_Clear();
            continue;
        }
        void* table = PyCapsule_CheckExact(attribute.ptr()) ? PyCapsule_GetPointer(attribute.ptr(), "dlpack_exchange_api")
                      : PyLong_Check(attribute.ptr())       ? PyLong_AsVoidPtr(attribute.ptr())
                                                            : nullptr;
        PyErr_Clear();
        const auto* api = static_cast<const dlpack_exchange_api*>(table);
        if (api && api->major == 1 && api->dltensor_from_py_object && api->current_work_stream) {
            found = api;
            break;
        }
    }
    known.emplace_back(reinterpret_cast<PyTypeObject*>(nb::handle(reinterpret_cast<PyObject*>(type)).inc_ref().ptr()), found);
    return found;
}

/// A CUstream as an integer, from an int, an object with __cuda_stream__, a torch.cuda.Stream
/// (`cuda_stream`) or a cupy Stream (`ptr`).
std::uintptr_t stream_handle(nb::handle stream) {
    if (PyLong_Check(stream.ptr())) return nb::cast<std::uintptr_t>(stream);
    if (nb::hasattr(stream, "__cuda_stream__")) return nb::cast<std::uintptr_t>(stream.attr("__cuda_stream__")()[1]);
    for (const char* attribute : {"cuda_stream", "ptr"})
        if (nb::hasattr(stream, attribute) && PyLong_Check(stream.attr(attribute).ptr()))
            return nb::cast<std::uintptr_t>(stream.attr(attribute));
    throw error(error_kind::usage, "stream: expected an int (a CUstream), a torch.cuda.Stream or a cupy Stream, got " +
                                       nb::cast<std::string>(nb::repr(stream)));
}

/// What kjit uses of PyTorch, looked up once torch is imported (no tensor exists before), and
/// kept for the life of the process.
struct torch_parts {
    PyObject* tensor_type = nullptr;     ///< torch.Tensor
    /// torch._C._cuda_getCurrentRawStream(device) -> int; null in a CPU-only torch
    PyObject* current_stream = nullptr;
};
const torch_parts* torch_if_imported() {
    static torch_parts parts;
    if (!parts.tensor_type) {
        static PyObject* const name = PyUnicode_InternFromString("torch");  // kept for the process
        PyObject* torch = PyImport_GetModule(name);
        if (!torch) {
            PyErr_Clear();
            return nullptr;
        }
        const nb::object module = nb::steal(torch);
        parts.current_stream = PyObject_GetAttrString(module.attr("_C").ptr(), "_cuda_getCurrentRawStream");
        if (!parts.current_stream) PyErr_Clear();  // a CPU-only torch: no tensor it makes is on a GPU
        parts.tensor_type = module.attr("Tensor").inc_ref().ptr();
    }
    return &parts;
}

/// PyTorch's current stream on `device`: where torch's own ops would run now (the legacy default
/// stream for a CPU-only torch, whose tensors the array checks refuse anyway).
std::uintptr_t torch_current_stream(int device) {
    const nb::handle current = torch_if_imported()->current_stream;
    return current ? nb::cast<std::uintptr_t>(current(device)) : 0;
}

/// Where a call's default stream comes from: the library its arrays came from.
struct stream_owner {
    const dlpack_exchange_api* api = nullptr;  ///< one that publishes the exchange table
    bool torch = false;                        ///< a torch.Tensor read through its methods
};

/// The fields of a DLTensor, however it was obtained.
void describe_dltensor(const nb::dlpack::dltensor& t, run::caller_array& into) {
    into.address = reinterpret_cast<std::uintptr_t>(t.data) + t.byte_offset;
    into.dtype = dtype_name(t.dtype);
    into.shape.assign(t.shape, t.shape + t.ndim);
    into.contiguous = t.strides == nullptr || c_contiguous(static_cast<std::size_t>(t.ndim), t.shape, t.strides, 1);
    into.device = t.device.device_type == k_dl_cuda ? t.device.device_id : -1;
}

/// A PyTorch tensor read through its own methods, or false for any other object: for a torch
/// with no exchange table. Its __dlpack__ is Python code that cost 3.3–4.0 µs a tensor on the
/// H200 machine, more than the launch it feeds (bench/results/2026-12-02-h200-python-calls).
bool describe_torch(nb::handle object, run::caller_array& into) {
    const torch_parts* torch = torch_if_imported();
    if (!torch || !PyObject_TypeCheck(object.ptr(), reinterpret_cast<PyTypeObject*>(torch->tensor_type))) return false;
    into.address = nb::cast<std::uintptr_t>(object.attr("data_ptr")());  // storage offset included
    into.dtype = torch_dtype_name(object.attr("dtype"));
    into.shape.clear();
    const nb::object shape = object.attr("shape");  // a torch.Size: a tuple
    for (nb::handle extent : shape) into.shape.push_back(nb::cast<long long>(extent));
    into.contiguous = nb::cast<bool>(object.attr("is_contiguous")());
    into.device = nb::cast<bool>(object.attr("is_cuda")) ? nb::cast<int>(object.attr("get_device")()) : -1;
    return true;
}

/// A caller's array through DLPack's exchange table (PyTorch), a tensor's methods (an older
/// PyTorch), DLPack (CuPy, JAX) or __cuda_array_interface__ (Numba), or kjit::error(usage)
/// naming it. `owner` learns where its library's current stream is.
void describe(nb::handle object, const std::string& name, run::caller_array& into, stream_owner& owner) {
    if (const dlpack_exchange_api* api = exchange_api_of(Py_TYPE(object.ptr()))) {
        nb::dlpack::dltensor t;
        if (api->dltensor_from_py_object(object.ptr(), &t) != 0) throw nb::python_error();
        describe_dltensor(t, into);
        owner.api = api;
        return;
    }
    if (describe_torch(object, into)) {
        owner.torch = true;
        return;
    }
    nb::ndarray<> a;
    if (nb::try_cast(object, a, false)) {
        into.address = reinterpret_cast<std::uintptr_t>(a.data_handle()) + a.byte_offset();
        into.dtype = dtype_name(a.dtype());
        into.shape.assign(a.shape_ptr(), a.shape_ptr() + a.ndim());
        into.contiguous = a.stride_ptr() == nullptr || c_contiguous(a.ndim(), a.shape_ptr(), a.stride_ptr(), 1);
        into.device = a.device_type() == nb::device::cuda::value ? a.device_id() : -1;
        return;
    }
    if (nb::hasattr(object, "__cuda_array_interface__")) {
        const nb::dict cai = nb::cast<nb::dict>(object.attr("__cuda_array_interface__"));
        into.address = nb::cast<std::uintptr_t>(nb::cast<nb::tuple>(cai["data"])[0]);
        const std::string typestr = nb::cast<std::string>(cai["typestr"]);
        into.dtype = typestr_name(typestr);
        into.shape.clear();
        for (nb::handle extent : nb::cast<nb::tuple>(cai["shape"])) into.shape.push_back(nb::cast<long long>(extent));
        const nb::object strides = cai.contains("strides") ? nb::borrow(cai["strides"]) : nb::none();
        std::vector<int64_t> given;
        if (!strides.is_none())
            for (nb::handle stride : nb::cast<nb::tuple>(strides)) given.push_back(nb::cast<int64_t>(stride));
        const std::vector<int64_t> shape(into.shape.begin(), into.shape.end());
        into.contiguous = strides.is_none() ||
                          c_contiguous(shape.size(), shape.data(), given.data(), std::stoll(typestr.substr(2)));
        into.device = k_unsaid_device;
        return;
    }
    throw error(error_kind::usage, name + ": expected a device array (DLPack or __cuda_array_interface__), got " +
                                       nb::cast<std::string>(nb::str(object.type().attr("__name__"))));
}

class python_session;

/// kjit's kernels for one config, loaded on the session's GPU and called on the caller's arrays:
/// the base of kjit.Kernel, whose call this is.
class python_kernel {
public:
    python_kernel(python_session& session, const std::string& config, const std::vector<std::string>& sets);

    /// Enqueues the kernels on `stream` (the "stream" keyword, if given), or else on the arrays'
    /// own: their library's current stream (PyTorch's), or the legacy default stream.
    void call(const nb::kwargs& arguments) {
        static PyObject* const keyword = PyUnicode_InternFromString("stream");  // kept for the process
        PyObject* stream = PyDict_GetItemWithError(arguments.ptr(), keyword);  // borrowed
        if (!stream && PyErr_Occurred()) throw nb::python_error();
        const stream_owner owner = describe_all(arguments, stream ? 1 : 0);
        (*m_kernels)(m_arrays, stream_for(stream == Py_None ? nullptr : stream, owner));  // (None: the default)
    }
    /// The check as a record's row (its check columns and status), as `--json` writes them.
    std::string verify(const nb::dict& arrays, nb::handle stream) {
        report::record checked;
        const stream_owner owner = describe_all(arrays, 0);
        checked.check = m_kernels->verify(m_arrays, stream_for(stream.is_none() ? nullptr : stream.ptr(), owner));
        checked.status = checked.check->pass ? report::outcome::pass : report::outcome::fail;
        return rows_json({checked});
    }
    std::vector<nb::tuple> parameters() const {
        std::vector<nb::tuple> list;
        for (const auto& p : m_kernels->parameters())
            list.push_back(nb::make_tuple(p.name, nb::tuple(nb::cast(p.shape)), p.written));
        return list;
    }
    std::string dtype() const { return std::string(config::info(m_kernels->pipeline().type).name); }
    const std::string& record() const { return m_record; }

private:
    std::uintptr_t stream_for(PyObject* given, const stream_owner& owner) const {
        if (given) return stream_handle(given);
        const int device = m_kernels->device_index();
        if (owner.api) {
            void* current = nullptr;
            if (owner.api->current_work_stream(k_dl_cuda, device, &current) != 0) throw nb::python_error();
            return reinterpret_cast<std::uintptr_t>(current);
        }
        return owner.torch ? torch_current_stream(device) : 0;
    }

    /// m_arrays described from `arrays`, by parameter in its order; a missing or unknown name is a
    /// usage error. `others` of its keys are not arrays (the stream).
    stream_owner describe_all(const nb::dict& arrays, std::size_t others) {
        const auto& parameters = m_kernels->parameters();
        const auto names = [&] {
            std::string list;
            for (const auto& p : parameters) list += (list.empty() ? "" : ", ") + p.name;
            return list;
        };
        stream_owner owner;
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            PyObject* array = PyDict_GetItemWithError(arrays.ptr(), m_names[i].ptr());  // borrowed
            if (!array && PyErr_Occurred()) throw nb::python_error();
            if (!array) throw error(error_kind::usage, "missing " + parameters[i].name + ": the kernels take " + names());
            describe(array, parameters[i].name, m_arrays[i], owner);
            if (m_arrays[i].device == k_unsaid_device) m_arrays[i].device = m_kernels->device_index();
        }
        if (arrays.size() != parameters.size() + others)
            for (const auto& [key, value] : arrays) {
                const std::string given = nb::cast<std::string>(nb::str(key));
                if (given != "stream" && std::none_of(parameters.begin(), parameters.end(),
                                                      [&](const auto& p) { return p.name == given; }))
                    throw error(error_kind::usage, "unknown array " + given + ": the kernels take " + names());
            }
        return owner;
    }

    std::unique_ptr<run::callable> m_kernels;
    std::string m_record;
    std::vector<run::caller_array> m_arrays;  ///< reused by every call
    std::vector<nb::str> m_names;             ///< the parameters' names as Python strings, made once
};

/// One kjit session: templates, the bounded cache, and the GPUs, opened only when a run needs one.
class python_session {
public:
    python_session(int device, const std::optional<std::string>& cache_dir)
        : m_device(device), m_session({"", cache_dir.value_or(""), std::nullopt, jit::cache_mode::use}, cuda::driver_gpus()) {}

    std::string emit(const std::string& config, const std::vector<std::string>& sets) {
        return family::plan(family::load(document_of(config, sets)), m_session.templates()).source;
    }
    /// kjit sass's text for the config; with `diff_sets`, kjit sass --diff-set's.
    std::string sass(const std::string& config, const std::vector<std::string>& sets,
                     const std::vector<std::string>& diff_sets, bool mix_only, const std::string& kernel) {
        const auto disassembled = [&](const std::vector<std::string>& with) {
            const config::pipeline p = family::load(document_of(config, with));
            const auto built = m_session.build_to_read(p, true);
            const std::string label = p.name + ": " + config::variant_label(p);
            auto kernels = why::disassemble(built.binary.cubin);
            if (!kernel.empty()) kernels = why::kernels_named(std::move(kernels), kernel, label);
            return std::make_tuple(label, built.program.source, std::move(kernels));
        };
        const auto [label, source, kernels] = disassembled(sets);
        if (diff_sets.empty()) return why::sass_text(kernels, source, mix_only);
        std::vector<std::string> other = sets;
        other.insert(other.end(), diff_sets.begin(), diff_sets.end());
        const auto [other_label, other_source, other_kernels] = disassembled(other);
        return why::diff_text(label, kernels, other_label, other_kernels);
    }
    /// kjit compile's record: as JSON rows, and as the command prints it.
    std::pair<std::string, std::string> compile(const std::string& config, const std::vector<std::string>& sets) {
        const config::document doc = document_of(config, sets);
        return shown(m_session.compile(family::load(doc), doc.source));
    }
    /// kjit run's record: as JSON rows, and as the command prints it.
    std::pair<std::string, std::string> run(const std::string& config, const std::vector<std::string>& sets, const std::string& metrics) {
        trace::span reading("read config");
        const config::document doc = document_of(config, sets);
        nb::gil_scoped_release unlocked;  // the GPU work needs no Python
        const config::pipeline p = family::load(doc, m_session.target_if_any(m_device));
        reading.end();
        // The device stays open in the session: the next run pays no CUDA start-up, this one no teardown.
        const auto records = m_session.run(p, doc.source, {.device = m_device, .keep_device = true, .counter_set = metrics});
        trace::span writing("records as JSON");
        return shown(records.front());
    }
    /// The config's kernels, loaded on the session's GPU, and their record as JSON.
    std::pair<std::unique_ptr<run::callable>, std::string> load(const std::string& config,
                                                                const std::vector<std::string>& sets) {
        const config::document doc = document_of(config, sets);
        const config::pipeline p = family::load(doc, m_session.target_if_any(m_device));
        report::record rec = run::new_record("kernel", p, doc.source);
        auto kernels = m_session.load(p, m_device, rec);
        return {std::move(kernels), rows_json({rec})};
    }
    /// The points' records as JSON, and whether Ctrl-C stopped the sweep (after the points in
    /// flight; the records are those that finished). `progress(done, total)` sees each point,
    /// `compiled(done, total)` each distinct source compiled before them (0 first).
    /// `indices`: only these points (a cluster worker's batch), else all; `jobs`: compile
    /// threads (0: one per core); `metrics`: each point's hardware counters (a counter set's name).
    std::pair<std::string, bool> sweep(const std::string& config, const std::vector<std::string>& sets,
                                       bool compile_only, const std::optional<nb::callable>& progress,
                                       const std::optional<std::vector<std::size_t>>& indices, int jobs,
                                       const std::string& metrics, const std::optional<nb::callable>& compiled) {
        const config::document doc = document_of(config, sets);
        const auto points =
            family::expand_sweep(doc, compile_only ? std::nullopt : m_session.target_if_any(m_device), indices);
        run::sweep_request request;
        request.devices = std::to_string(m_device);
        request.compile_only = compile_only;
        request.jobs = jobs;
        request.counter_set = metrics;
        // A broken progress bar does not stop the sweep.
        const auto tell = [](const std::optional<nb::callable>& bar, std::size_t done, std::size_t total) {
            if (!bar) return;
            nb::gil_scoped_acquire locked;
            try {
                (*bar)(done, total);
            } catch (nb::python_error& e) {
                e.discard_as_unraisable("kjit sweep progress");
            }
        };
        request.compiled = [&](std::size_t done, std::size_t total, const std::string&) { tell(compiled, done, total); };
        std::size_t done = 0;
        const auto step = [&](const report::record&) { tell(progress, ++done, points.size()); };
        const graceful_interrupt ctrl_c;
        run::sweep_result result;
        {
            nb::gil_scoped_release unlocked;
            result = m_session.sweep(points, doc.source, request, step);
        }
        return {rows_json(result.records), interrupted()};
    }

    /// `kjit tune` of the config: the rows --json writes and the summary the command prints.
    /// `remote_device` and `measure` (both or neither): the points are measured by a cluster's
    /// workers, whose GPU that is; `measure(points JSON)` gives their rows as JSON. `counter_set`:
    /// each point's hardware counters too (none where empty).
    std::pair<std::string, std::string> tune(const std::string& config, const std::vector<std::string>& sets,
                                             const std::string& strategy, std::size_t budget,
                                             std::optional<double> seconds, std::optional<double> roofline_target,
                                             std::uint64_t seed, const std::optional<std::string>& remote_device,
                                             const std::optional<nb::callable>& measure, const std::string& counter_set) {
        const config::document doc = document_of(config, sets);
        tune::tune_options options{strategy, budget, seconds, roofline_target, seed, m_device};
        options.counter_set = counter_set;
        if (remote_device && measure)
            options.remote = tune::remote_workers{
                tune::device_from_json(config::json_value::parse(*remote_device)),
                [&measure](const std::vector<std::pair<std::size_t, config::json_value>>& points) {
                    nb::gil_scoped_acquire locked;
                    const std::string rows = nb::cast<std::string>((*measure)(config::json_value(points).dump()));
                    return report::row::parse(rows).get<std::vector<report::row>>();
                }};
        const graceful_interrupt ctrl_c;
        tune::tune_result result;
        {
            nb::gil_scoped_release unlocked;
            result = tune::tune(m_session, doc, options);
        }
        std::ostringstream summary;
        tune::print_summary(summary, result);
        return {report::to_json(tune::rows_of(result)), summary.str()};
    }
    /// A cluster worker's part of a tune: the points (JSON [[index, values], …]) measured on this
    /// session's GPU, with the hardware counters of `counter_set`; their rows as JSON.
    std::string measure_points(const std::string& config, const std::vector<std::string>& sets, const std::string& points,
                               const std::string& counter_set) {
        const config::document doc = document_of(config, sets);
        const auto asked = config::json_value::parse(points).get<std::vector<std::pair<std::size_t, config::json_value>>>();
        nb::gil_scoped_release unlocked;
        return rows_json(tune::measure_points(m_session, doc, asked, m_device, 0, counter_set));
    }
    /// The session's GPU as JSON (tune::to_json): what a cluster's worker tells the driver;
    /// kjit.Error where there is none.
    std::string device_json() { return tune::to_json(m_session.device(m_device)).dump(); }
    /// The indices of the config's sweep points that its constraints allow.
    std::vector<std::size_t> sweep_points(const std::string& config, const std::vector<std::string>& sets) {
        return config::allowed_sweep_points(document_of(config, sets));
    }

private:
    int m_device;
    run::session m_session;
};

python_kernel::python_kernel(python_session& session, const std::string& config, const std::vector<std::string>& sets) {
    std::tie(m_kernels, m_record) = session.load(config, sets);
    m_arrays.resize(m_kernels->parameters().size());
    for (const auto& p : m_kernels->parameters()) m_names.emplace_back(p.name.c_str());
}

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
    m.def("set_error_types", [](nb::handle error_type, nb::handle config_error_type) {
        g_error_type = error_type.inc_ref().ptr();  // the package's classes: kept for the process
        g_config_error_type = config_error_type.inc_ref().ptr();
    });
    nb::register_exception_translator([](const std::exception_ptr& p, void*) {
        try {
            std::rethrow_exception(p);
        } catch (const error& e) {
            const error_kind kind = e.kind();
            if (kind == error_kind::interrupted) {
                PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
                return;
            }
            PyObject* type = kind == error_kind::config || kind == error_kind::usage ? g_config_error_type : g_error_type;
            PyErr_SetObject(type ? type : PyExc_RuntimeError, nb::make_tuple(printable_message(e.what()), kind_name(kind)).ptr());
        }
    });
    m.attr("version") = KJIT_VERSION;
    nb::list phases;  // the record's phase columns, less "_ms", in order
    for (std::size_t i = 0; i < report::k_phase_count; ++i) phases.append(report::phase_name(static_cast<report::phase>(i)));
    m.attr("phases") = phases;
    m.attr("counter_sets") = nb::cast(why::counter_set_names());
    m.def("start_trace", [] {
        trace::stop_collecting();  // a trace holds its own block's spans only
        trace::start_collecting();
    });
    m.def("write_trace", [](const std::string& path) {
        const std::string json = trace::to_json().dump();
        trace::stop_collecting();
        fs::check_distinct_outputs({{"kjit.trace", path}}, fs::files_read());  // never a config or input file read
        fs::write_output(path, json);
    });
    nb::class_<python_session>(m, "Session")
        .def(nb::init<int, const std::optional<std::string>&>(), nb::arg("device"), nb::arg("cache_dir").none())
        .def("emit", &python_session::emit)
        .def("compile", &python_session::compile)
        .def("sass", &python_session::sass, nb::arg("config"), nb::arg("sets"), nb::arg("diff_sets"), nb::arg("mix_only"),
             nb::arg("kernel"))
        .def("run", &python_session::run, nb::arg("config"), nb::arg("sets"), nb::arg("metrics"))
        .def("sweep", &python_session::sweep, nb::arg("config"), nb::arg("sets"), nb::arg("compile_only"),
             nb::arg("progress").none(), nb::arg("indices").none() = nb::none(), nb::arg("jobs") = 0,
             nb::arg("metrics") = "", nb::arg("compiled").none() = nb::none())
        .def("sweep_points", &python_session::sweep_points, nb::arg("config"), nb::arg("sets"))
        .def("device_json", &python_session::device_json)
        .def("tune", &python_session::tune, nb::arg("config"), nb::arg("sets"), nb::arg("strategy"), nb::arg("budget"),
             nb::arg("seconds").none(), nb::arg("roofline_target").none(), nb::arg("seed"), nb::arg("remote_device").none(),
             nb::arg("measure").none(), nb::arg("counter_set"))
        .def("measure_points", &python_session::measure_points, nb::arg("config"), nb::arg("sets"), nb::arg("points"),
             nb::arg("counter_set"));
    nb::class_<python_kernel>(m, "Kernel")
        .def(nb::init<python_session&, const std::string&, const std::vector<std::string>&>(), nb::arg("session"),
             nb::arg("config"), nb::arg("sets"))
        .def("__call__", &python_kernel::call)
        .def("_verify", &python_kernel::verify, nb::arg("arrays"), nb::arg("stream").none())
        .def_prop_ro("_parameters", &python_kernel::parameters)
        .def_prop_ro("dtype", &python_kernel::dtype)
        .def_prop_ro("_record", &python_kernel::record);
}
