// The caller's arrays bound into launches made once: a call checks them and sets their addresses
// in the launches' argument slots; nothing is allocated or copied.
#include "run/callable.hpp"

#include <map>
#include <numeric>

#include "family/family.hpp"
#include "run/check.hpp"
#include "run/timed.hpp"
#include "util/error.hpp"

namespace kjit::run {
namespace {

std::string shown(const std::vector<long long>& shape) {
    std::string text = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + "]";
}

long long count_of(const std::vector<long long>& shape) {
    return std::accumulate(shape.begin(), shape.end(), 1LL, std::multiplies<>());
}

/// The shape the caller's array of buffer `b` must have.
std::vector<long long> shape_of(const config::pipeline& p, const family::program& prog, const family::buffer& b) {
    const auto count = static_cast<long long>(b.bytes / config::element_size(p.type));
    if (b.role == family::buffer_role::output && prog.output_rows > 0) return {prog.output_rows, prog.output_cols};
    if (const config::input_spec* in = config::find_input(p, b.name); in && !in->dims.empty()) return in->dims;  // a matmul's W
    if (p.shape && count == p.shape->rows * p.shape->cols) return {p.shape->rows, p.shape->cols};
    return {count};
}

}  // namespace

callable::callable(std::shared_ptr<gpu> device, const config::pipeline& p, const build_context& ctx,
                   report::record& rec)
    : m_device(std::move(device)), m_pipeline(p), m_temporaries(*m_device) {
    const device_info& info = m_device->device();
    built_variant built = build_variant(p, p.compile.arch.value_or(info.arch), ctx, rec);
    m_program = std::move(built.program);
    m_module = detail::timed(rec, report::phase::module_load, [&] { return m_device->load_module(built.binary.cubin); });
    std::map<std::string, std::size_t> parameter_of;  // the program lists its inputs first: inputs → out
    for (const auto& b : m_program.buffers) {
        if (b.role == family::buffer_role::input || b.role == family::buffer_role::output) {
            parameter_of[b.name] = m_parameters.size();
            m_parameters.push_back({b.name, shape_of(p, m_program, b), b.role == family::buffer_role::output});
        } else {
            m_temporaries.ids[b.name] = m_device->allocate(b.bytes);
        }
    }

    for (const auto& k : m_program.kernels) {
        const kernel_id id = m_device->get_kernel(m_module, k.name);
        m_kernels.push_back(id);
        const int threads = static_cast<int>(k.block.count());
        const long long resident =
            static_cast<long long>(m_device->max_active_blocks_per_sm(id, threads, k.shared_bytes)) * info.sm_count;
        // The caller's arrays are addresses, set by each call; the temporaries are kjit's own.
        using type = argument_value::type;
        m_launches.push_back(launch_of(p, m_program, k, grid_on_device(k, resident), [&](const family::argument& a) {
            return parameter_of.contains(a.name) ? argument_value{.what = type::address}
                                                 : argument_value{.what = type::buffer, .buffer = m_temporaries.ids.at(a.name)};
        }));
        for (std::size_t i = 0; i < k.args.size(); ++i)
            if (m_launches.back().args[i].what == type::address)
                m_slots.push_back({m_launches.size() - 1, i, parameter_of.at(k.args[i].name)});
    }
}

callable::~callable() { m_device->unload_module(m_module); }

void callable::bind(std::span<const caller_array> arrays) {
    const device_info& info = m_device->device();
    const std::string_view dtype = config::info(m_pipeline.type).name;
    const std::size_t alignment = m_program.array_alignment;
    for (std::size_t i = 0; i < m_parameters.size(); ++i) {
        const array_parameter& want = m_parameters[i];
        const caller_array& a = arrays[i];
        const auto fail = [&](const std::string& got) {
            const std::string shape = want.shape.size() == 1 ? std::to_string(want.shape[0]) + " elements" : shown(want.shape);
            throw error(error_kind::usage, want.name + ": expected a contiguous " + std::string(dtype) + " array of " +
                                               shape + " on CUDA device " + std::to_string(info.index) + ", got " + got);
        };
        if (a.device != info.index)
            fail(a.device < 0 ? "an array that is not in CUDA device memory" : "one on CUDA device " + std::to_string(a.device));
        if (a.dtype != dtype) fail(std::string(a.dtype));
        const bool shape_fits = want.shape.size() == 1 ? count_of(a.shape) == want.shape[0] : a.shape == want.shape;
        if (!shape_fits) fail("shape " + shown(a.shape));
        if (!a.contiguous) fail("a strided view (make it contiguous first)");
        if (alignment > 0 && a.address % alignment != 0)
            throw error(error_kind::usage, want.name + ": expected an address aligned to " + std::to_string(alignment) +
                                               " bytes (the kernels load that much at once), got one " +
                                               std::to_string(a.address % alignment) +
                                               " bytes past it: a view into another array? Pass a copy");
    }
    for (const slot& s : m_slots) m_launches[s.launch].args[s.argument].address = arrays[s.parameter].address;
}

void callable::operator()(std::span<const caller_array> arrays, std::uintptr_t stream) {
    bind(arrays);
    for (std::size_t i = 0; i < m_kernels.size(); ++i) m_device->launch_on(stream, m_kernels[i], m_launches[i]);
}

report::check_row callable::verify(std::span<const caller_array> arrays, std::uintptr_t stream) {
    (*this)(arrays, stream);
    reference::input_arrays inputs;
    std::optional<reference::typed_array> out;
    for (std::size_t i = 0; i < m_parameters.size(); ++i) {
        reference::typed_array host(m_pipeline.type, static_cast<std::size_t>(count_of(m_parameters[i].shape)));
        m_device->copy_from_address(host.data(), arrays[i].address, host.bytes(), stream);
        if (m_parameters[i].written) out.emplace(std::move(host));
        else inputs.emplace(m_parameters[i].name, std::move(host));
    }
    const reference::expected_values expected = family::family_of(m_pipeline).reference(m_pipeline, inputs);
    return check_output(m_pipeline, m_program, inputs, *out, expected);
}

}  // namespace kjit::run
