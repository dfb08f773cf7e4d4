// A fake GPU's kernels: each launch runs on the host as the program's plan describes it, whatever
// the family. The kernel is looked up by name in the programs of the pipelines it may come from
// (a sweep's points): the first whose plan has that kernel with these argument types and buffer
// sizes. Its arguments are bound by position to the plan's typed arguments (buffers by name,
// scalars, sizes); then its stages run in order over the matrix x starts from (a row of n
// elements for an elementwise pipeline): a map per row, a reduce into a row value, and an op a
// family implements itself (a matmul, a transpose, attention) by that family's model of it
// (family::host_op). What the plan says the kernel writes is written: the
// output's elements or one value per row, and row values. A kernel that pads a matrix's rows
// (kernel::pads_rows_to) copies it, row by row, and zeros the elements between.
// kjit's copy probe, which no plan holds, copies.
// Values are computed in double from the stages' kernel trees and stored in the buffers' types.
#pragma once
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "codegen/codegen.hpp"
#include "family/family.hpp"
#include "reference/reference.hpp"
#include "run/gpu.hpp"

namespace kjit::testing {

/// One pipeline's kernels on the host.
class plan_of {
public:
    explicit plan_of(const config::pipeline& p)
        : m_pipeline(p), m_program(family::plan(p, codegen::template_set::embedded())) {
        for (const auto& buffer : m_program.buffers) {
            if (buffer.role == family::buffer_role::row_value) m_row_values.push_back(buffer.name);
            if (buffer.float_elements) m_float_buffers.push_back(buffer.name);
        }
    }

    /// Its kernel `name`, if its arguments are those of `launch` on buffers of these sizes.
    [[nodiscard]] const family::kernel* kernel_for(const std::string& name,
                                                  const std::vector<std::vector<unsigned char>*>& buffers,
                                                  const run::kernel_launch& launch) const {
        for (const auto& k : m_program.kernels) {
            if (k.name != name || k.args.size() != launch.args.size()) continue;
            bool same = true;
            std::size_t next_buffer = 0;
            for (std::size_t i = 0; i < k.args.size() && same; ++i) {
                const family::argument& a = k.args[i];
                using type = run::argument_value::type;
                const type expected = a.what == family::argument::kind::buffer   ? type::buffer
                                      : a.what == family::argument::kind::size   ? type::i64
                                      : m_program.double_scalars                 ? type::f64
                                                                                 : type::f32;
                // The caller's memory (a callable's) is as good as a buffer of kjit's own.
                const type given = launch.args[i].what == type::address ? type::buffer : launch.args[i].what;
                // A buffer the plan passes as a TMA tensor map is launched with that map.
                same = given == expected && launch.args[i].map == a.map &&
                       (expected != type::buffer || buffers.at(next_buffer++)->size() == buffer_bytes(a.name)) &&
                       (expected != type::i64 || launch.args[i].integer == a.size);
            }
            if (same) return &k;
        }
        return nullptr;
    }

    /// Runs kernel k with `buffers` (the launch's buffer arguments' memory, in order).
    void execute(const family::kernel& k, const std::vector<std::vector<unsigned char>*>& buffers,
                 const run::kernel_launch& launch) const {
        execute(k, bind(k, buffers, launch));
    }

private:
    [[nodiscard]] std::size_t buffer_bytes(const std::string& name) const {
        for (const auto& b : m_program.buffers)
            if (b.name == name) return b.bytes;
        return 0;
    }

    struct bound {
        std::map<std::string, std::vector<unsigned char>*> buffers;  ///< by the plan's buffer name
        std::map<std::string, double> scalars;
        std::map<std::string, long long> sizes;
        std::vector<const family::argument*> written;
    };

    bound bind(const family::kernel& k, const std::vector<std::vector<unsigned char>*>& buffers,
               const run::kernel_launch& launch) const {
        if (launch.args.size() != k.args.size()) throw std::logic_error(k.name + ": arguments do not match the plan");
        bound b;
        std::size_t next_buffer = 0;
        for (std::size_t i = 0; i < k.args.size(); ++i) {
            const family::argument& a = k.args[i];
            const run::argument_value& v = launch.args[i];
            using type = run::argument_value::type;
            switch (a.what) {
                case family::argument::kind::buffer:
                    if (v.what != type::buffer && v.what != type::address) throw std::logic_error(a.name + ": expected a buffer");
                    b.buffers[a.name] = buffers.at(next_buffer++);
                    if (a.written) b.written.push_back(&a);
                    break;
                case family::argument::kind::scalar:
                    if (v.what != (m_program.double_scalars ? type::f64 : type::f32))
                        throw std::logic_error(a.name + ": a scalar of the wrong type");
                    // A float parameter holds the value rounded to float.
                    b.scalars[a.name] = v.what == type::f32 ? static_cast<float>(v.number) : v.number;
                    break;
                case family::argument::kind::size:
                    if (v.what != type::i64) throw std::logic_error(a.name + ": expected a 64-bit size");
                    b.sizes[a.name] = v.integer;
                    break;
            }
        }
        return b;
    }

    /// A row value buffer holds the compute type; every other buffer the storage type.
    [[nodiscard]] config::dtype row_value_type() const {
        return config::computes_in_double(m_pipeline.type) ? config::dtype::float64 : config::dtype::float32;
    }
    [[nodiscard]] bool holds_row_value(const family::argument& a) const {
        return std::find(m_row_values.begin(), m_row_values.end(), a.name) != m_row_values.end();
    }
    /// The type of a buffer's elements: float32 where the plan says so, else the pipeline's.
    [[nodiscard]] config::dtype element_type(const std::string& buffer) const {
        const bool floats = std::find(m_float_buffers.begin(), m_float_buffers.end(), buffer) != m_float_buffers.end();
        return floats ? config::dtype::float32 : m_pipeline.type;
    }

    /// Copies k's first argument, rows × cols, to its second in rows k.pads_rows_to elements apart.
    void pad_rows(const family::kernel& k, const bound& b) const {
        const std::size_t element = config::element_size(m_pipeline.type);
        const auto row_bytes = static_cast<std::size_t>(b.sizes.at("cols")) * element;
        const auto pitch_bytes = static_cast<std::size_t>(k.pads_rows_to) * element;
        const std::vector<unsigned char>& from = *b.buffers.at(k.args.at(0).name);
        std::vector<unsigned char>& to = *b.buffers.at(k.args.at(1).name);
        std::fill(to.begin(), to.end(), 0);
        for (long long r = 0; r < b.sizes.at("rows"); ++r)
            std::copy_n(from.begin() + static_cast<std::ptrdiff_t>(r * row_bytes), row_bytes,
                        to.begin() + static_cast<std::ptrdiff_t>(r * pitch_bytes));
    }

    void execute(const family::kernel& k, const bound& b) const {
        if (k.pads_rows_to > 0) return pad_rows(k, b);
        const config::pipeline& p = m_pipeline;
        family::host_launch launch{k, {}, b.scalars, b.sizes};
        for (const auto& [name, memory] : b.buffers) launch.buffers[name] = memory;
        // A family's own op first in the kernel reads its inputs itself (a matmul's A and B).
        family::host_matrix matrix;
        const bool op_first = p.stages[k.stages.front()].family_op;
        if (op_first) {
            matrix = family::family_of(p).host_op(p, k.stages.front(), {}, launch);
        } else {
            matrix.rows = b.sizes.count("rows") ? b.sizes.at("rows") : 1;
            matrix.cols = b.sizes.count("cols") ? b.sizes.at("cols") : b.sizes.at("n");
            if (!k.reads_x.empty()) matrix.values = family::host_values(p.type, *b.buffers.at(k.reads_x));
            matrix.values.resize(static_cast<std::size_t>(matrix.rows * matrix.cols), 0.0);  // (x starts at 0 where the stages read none)
        }
        long long rows = matrix.rows, cols = matrix.cols;
        std::vector<double>& x = matrix.values;
        std::vector<double> zeros(x.size(), 0.0), next(x.size());
        // Every array a stage may name, widened to double once (a per-column one has cols elements).
        std::map<std::string, std::vector<double>> arrays;
        for (const auto& a : k.args)
            if (a.what == family::argument::kind::buffer && !a.written && !holds_row_value(a)) {
                const auto& memory = *b.buffers.at(a.name);
                const config::dtype type = element_type(a.name);
                auto& values = arrays[a.name];
                values.resize(memory.size() / config::element_size(type));
                for (std::size_t i = 0; i < values.size(); ++i) values[i] = reference::get_element(type, memory.data(), i);
            }
        std::vector<std::map<std::string, expr::row_value>> row_values(static_cast<std::size_t>(rows));
        for (const auto& a : k.args)
            if (a.what == family::argument::kind::buffer && !a.written && holds_row_value(a))
                for (long long r = 0; r < rows; ++r)
                    row_values[r][a.name].value = reference::get_element(row_value_type(), b.buffers.at(a.name)->data(), r);
        std::vector<double> last_reduce(static_cast<std::size_t>(rows));
        std::map<std::size_t, std::vector<double>> reduced;  // what each reduce stage combined, by stage
        for (std::size_t i = op_first ? 1 : 0; i < k.stages.size(); ++i) {
            const std::size_t s = k.stages[i];
            const config::stage& st = p.stages[s];
            if (st.family_op) {  // the family's model of its op (a transpose between maps)
                matrix = family::family_of(p).host_op(p, s, std::move(matrix), launch);
                rows = matrix.rows;
                cols = matrix.cols;
                zeros.assign(x.size(), 0.0);
                next.resize(x.size());
                continue;
            }
            for (long long r = 0; r < rows; ++r) {
                std::map<std::string, const double*> at;
                for (const auto& [name, values] : arrays)
                    at[name] = values.data() + (static_cast<long long>(values.size()) == cols && rows > 1 ? 0 : r * cols);
                const expr::positions where{r * cols, rows, cols, rows * cols};
                const expr::chunk in{static_cast<std::size_t>(cols), x.data() + r * cols, zeros.data(), &at,
                                     &b.scalars, false, &row_values[r], &where};
                expr::evaluate(st.kernel, in, next.data() + r * cols, nullptr);
                if (st.reduce == config::reduction::none) continue;
                const double* v = next.data() + r * cols;
                double value = std::accumulate(v, v + cols, 0.0);
                if (st.online_with) {  // computed with its max: a sum of exp(v − m) over the max's v
                    const double* of_max = reduced.at(*st.online_with).data() + r * cols;
                    const double m = row_values[r].at(p.stages[*st.online_with].as).value;
                    value = std::accumulate(of_max, of_max + cols, 0.0, [&](double sum, double e) { return sum + std::exp(e - m); });
                }
                if (st.reduce == config::reduction::max) value = *std::max_element(v, v + cols);
                if (st.reduce == config::reduction::min) value = *std::min_element(v, v + cols);
                if (st.reduce == config::reduction::mean) value /= static_cast<double>(cols);
                last_reduce[r] = value;
                if (!st.as.empty()) row_values[r][st.as].value = value;
            }
            if (st.reduce == config::reduction::none) x.swap(next);
            else reduced[s] = next;
        }
        const bool ends_in_reduce = p.stages[k.stages.back()].reduce != config::reduction::none;
        for (const family::argument* a : b.written) {
            unsigned char* memory = b.buffers.at(a->name)->data();
            if (holds_row_value(*a)) {
                for (long long r = 0; r < rows; ++r) reference::set_element(row_value_type(), memory, r, row_values[r].at(a->name).value);
            } else if (ends_in_reduce) {
                for (long long r = 0; r < rows; ++r) reference::set_element(p.type, memory, r, last_reduce[r]);
            } else {
                const config::dtype type = element_type(a->name);
                for (std::size_t i = 0; i < x.size(); ++i) reference::set_element(type, memory, i, x[i]);
            }
        }
    }

    config::pipeline m_pipeline;
    family::program m_program;
    std::vector<std::string> m_row_values;  ///< buffers that hold a value per row (compute type)
    std::vector<std::string> m_float_buffers;  ///< buffers of float32 whatever the pipeline's type
};

/// A fake_gpu's on_launch for the pipelines a test runs.
class plan_executor {
public:
    explicit plan_executor(const std::vector<config::pipeline>& pipelines) {
        for (const auto& p : pipelines) m_plans.push_back(std::make_shared<const plan_of>(p));
    }
    explicit plan_executor(const std::vector<config::sweep_point>& points) {
        for (const auto& point : points) m_plans.push_back(std::make_shared<const plan_of>(point.pipeline));
    }

    void operator()(const std::string& name, const std::vector<std::vector<unsigned char>*>& buffers,
                    const run::kernel_launch& launch) const {
        if (name == codegen::k_copy_probe_kernel) {  // kjit's bandwidth probe: n4 16-byte copies
            std::copy_n(buffers.at(0)->begin(), launch.args.at(2).integer * 16, buffers.at(1)->begin());
            return;
        }
        if (name == codegen::k_fma_probe_kernel || name == codegen::k_tensor_probe_kernel)
            return;  // kjit's FMA and tensor probes: their outputs only keep their work
        for (const auto& plan : m_plans)
            if (const family::kernel* k = plan->kernel_for(name, buffers, launch)) return plan->execute(*k, buffers, launch);
        throw std::logic_error("no plan has a kernel " + name + " with these arguments");
    }

private:
    std::vector<std::shared_ptr<const plan_of>> m_plans;  // shared: a std::function copies its target
};

}  // namespace kjit::testing
