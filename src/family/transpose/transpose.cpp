#include "family/transpose/transpose.hpp"

#include <algorithm>
#include <numeric>

#include "config/reader.hpp"
#include "family/checks.hpp"
#include "family/stage_chain.hpp"
#include "util/parallel.hpp"

namespace kjit::family {
namespace {

namespace mu = codegen::mu;
using config::pipeline;

/// The policy where "auto": the fastest point of each element size in the transpose sweeps on the
/// H200 at 4096², 8192² and 16384² (bench/results/2026-12-01-h200-families and
/// 2026-12-02-h200-seam): 16-byte vectors of 16-bit types and of floats, single doubles; 16-bit
/// types in a swizzled tile where the stages allow one, the others padded by one element.
struct auto_policy {
    int tile, vector_width, block;
    bool swizzled;
};
auto_policy auto_policy_for(std::size_t element_bytes) {
    if (element_bytes == 2) return {64, 8, 128, true};  // bfloat16: 87–89 % of a same-size copy
    if (element_bytes == 4) return {64, 4, 256, false};  // float32: 94–95 %
    return {32, 1, 256, false};                          // float64: 93–95 %
}

/// The threads that move a tile where "auto": the element size's, or twice as many where the
/// tiles are too few to fill the SMs' threads at that block (a wave with threads to spare): more
/// warps an SM keep more loads in flight. Transposes of bfloat16 on an H100 (bench/results/
/// 2026-12-05-small/first): 4096 × 768 (768 tiles of 64²) 9.3 → 8.0 µs in 256 threads; 4096²
/// (4096 tiles) 27.6 in 128, 28.3 in 256. On the H200 (…/fifth) 256 threads were the fastest of
/// five launches at 4096 × 768 (7.1–7.3 µs; tiles of 32 and 512 threads 7.9).
int auto_block(const auto_policy& fallback, long long tiles, const config::target& gpu) {
    const long long resident = static_cast<long long>(gpu.sm_count) * (config::k_max_threads_per_sm / fallback.block);
    return tiles < resident ? 2 * fallback.block : fallback.block;
}

/// How the tile is laid out in shared memory: rows of compute-type elements padded so that a
/// column spreads over the banks, or rows of stored vectors placed by an XOR swizzle. A swizzled
/// tile holds the stored type, so it needs no stage on one side of the transpose: with stages
/// on both, their intermediate value would be rounded to the storage type in between.
enum class tile_layout { padded, swizzled };

/// The transpose's launch, resolved, carried with the pipeline (pipeline::policy).
struct tile_policy final : config::launch_policy {
    int tile = 32;      ///< a tile is tile × tile elements
    tile_layout layout = tile_layout::padded;
    int padding = 1;    ///< elements of padding per tile row in shared memory (padded only)
    int width = 1;      ///< elements a thread moves at once (launch.vector_width)
    int tile_rows = 8;  ///< the block's rows of threads, each tile / width threads wide

    [[nodiscard]] std::string_view layout_name() const { return layout == tile_layout::swizzled ? "swizzled" : "padded"; }
    [[nodiscard]] config::json_value columns() const override {
        return {{"tile", tile}, {"block", tile_rows * (tile / width)}, {"layout", layout_name()}, {"padding", padding}, {"vector_width", width}};
    }
    [[nodiscard]] std::string label() const override {
        return " tile=" + std::to_string(tile) + " layout=" + std::string(layout_name()) + " padding=" + std::to_string(padding);
    }
};

/// What a transpose pipeline cannot be, each refused in one line naming the key: a transpose of no
/// matrix, more than one, a transpose stage with options, separate kernels, per-column or shaped
/// inputs, and positions (an element has one before the transpose and another after).
void refuse_around_transpose(const pipeline& p, std::size_t t, const std::string& source) {
    const std::string stage = "stages[" + std::to_string(t) + "]";
    if (!p.shape) throw config_error(source, stage, "a transpose needs a matrix: give \"shape\": [rows, cols] instead of \"n\"");
    if (std::count_if(p.stages.begin(), p.stages.end(), [](const config::stage& s) { return s.family_op; }) > 1)
        throw config_error(source, "stages", "a pipeline transposes once at most");
    for (const auto& [key, value] : p.stages[t].options.items())
        throw config_error(source, stage + "." + key, "unknown key; expected one of \"op\", \"input\"");
    if (p.fuse == config::fusion::separate)
        throw config_error(source, "fusion", "a transpose runs its maps in its own kernel: \"separate\" is not offered for it");
    refuse_per_column_inputs(p, source);
    refuse_shaped_inputs(p, source);
    for (std::size_t i = 0; i < p.stages.size(); ++i) {
        expr::used_names used;
        expr::collect_names(p.stages[i].kernel, used);
        if (!used.positions.empty())
            throw config_error(source, "stages[" + std::to_string(i) + "]",
                               "uses '" + used.positions.front() + "': positions are not offered around a transpose, "
                               "where an element has one before it and another after");
    }
}

/// The tile's layout and padding: the element size's where "auto", padded where maps on both
/// sides would round their value in a swizzled tile of the stored type.
void choose_layout(const config::detail::object_reader& l, const auto_policy& fallback, bool maps_on_both_sides,
                   tile_policy& chosen) {
    bool swizzled = fallback.swizzled && !maps_on_both_sides;
    if (!l.leaves_auto("layout")) {
        swizzled = l.choice<tile_layout>("layout", {{"padded", tile_layout::padded}, {"swizzled", tile_layout::swizzled}},
                                          std::nullopt) == tile_layout::swizzled;
        if (swizzled && maps_on_both_sides)
            l.fail("layout", "a swizzled tile holds the stored type, which would round the value between the "
                             "stages before and after the transpose: use \"padded\"");
    }
    if (swizzled && !l.leaves_auto("padding")) l.fail("padding", "pads a \"padded\" layout only; this one is swizzled");
    chosen.layout = swizzled ? tile_layout::swizzled : tile_layout::padded;
    chosen.padding = swizzled ? 0 : l.leaves_auto("padding") ? 1 : static_cast<int>(l.integer("padding", 0, 4, std::nullopt));
}

/// The elements a thread moves at once (launch.vector_width): the element size's where "auto",
/// halved until it divides both sides, for a vector must not straddle two rows of the input or of
/// the output.
int choose_width(pipeline& p, const config::detail::object_reader& l, const auto_policy& fallback, int tile) {
    const auto divides = [&](int width) { return p.shape->rows % width == 0 && p.shape->cols % width == 0; };
    int& width = p.launch.vector_width;
    if (width == 0) {
        width = std::min(tile, fallback.vector_width);
        while (!divides(width)) width /= 2;
    } else if (!divides(width) || width > tile) {
        l.fail("vector_width", std::to_string(width) + " elements must divide rows and cols (" + std::to_string(p.shape->rows) +
                                   " × " + std::to_string(p.shape->cols) + ") and the tile (" + std::to_string(tile) +
                                   "); use \"auto\"");
    }
    return width;
}

/// The block's rows of threads, each tile / width wide: launch.block (auto_block where "auto")
/// over that width, a whole divisor of the tile's rows.
int choose_tile_rows(pipeline& p, const config::detail::object_reader& l, const auto_policy& fallback, const tile_policy& chosen) {
    const int tile = chosen.tile, lanes = tile / chosen.width;  // threads across a tile row
    const long long tiles = (p.shape->rows + tile - 1) / tile * ((p.shape->cols + tile - 1) / tile);
    if (p.launch.block_auto) p.launch.block = std::min(auto_block(fallback, tiles, p.target), lanes * tile);
    const int tile_rows = p.launch.block / lanes;
    if (p.launch.block % lanes != 0 || tile_rows > tile || tile % tile_rows != 0)
        l.fail("block", "a tile of " + std::to_string(tile) + " is moved by rows of " + std::to_string(lanes) + " threads (" +
                            std::to_string(chosen.width) + " elements each), as many rows as divide " + std::to_string(tile) +
                            ": expected " + std::to_string(lanes) + " × 1, 2, 4, … up to " + std::to_string(lanes * tile) +
                            ", got " + std::to_string(p.launch.block));
    return tile_rows;
}

const tile_policy& policy_of(const pipeline& p) {
    return config::policy_as<tile_policy>(p, "transpose");
}

std::size_t transpose_stage(const pipeline& p) {
    return static_cast<std::size_t>(
        std::find_if(p.stages.begin(), p.stages.end(), [](const config::stage& s) { return s.family_op; }) - p.stages.begin());
}

/// The arrays and scalars the stages in [first, last) use.
expr::used_names names_of(const pipeline& p, std::size_t first, std::size_t last) {
    expr::used_names used;
    for (std::size_t i = first; i < last; ++i) expr::collect_names(p.stages[i].kernel, used);
    return used;
}

void add_each(std::vector<std::string>& names, const std::vector<std::string>& more) {
    for (const auto& name : more) add_once(names, name);
}

class transpose final : public family {
public:
    std::string_view name() const override { return "transpose"; }
    std::string_view pipelines() const override { return "a transpose stage"; }
    std::string_view template_file() const override { return "transpose.cu.mustache"; }
    std::vector<std::string> stage_ops() const override { return {"transpose"}; }

    bool accepts(const pipeline& p) const override {
        return std::any_of(p.stages.begin(), p.stages.end(), [](const config::stage& s) { return s.op == "transpose" && s.family_op; }) &&
               std::none_of(p.stages.begin(), p.stages.end(), [](const config::stage& s) {
                   return s.reduce != config::reduction::none || (s.family_op && s.op != "transpose");
               });
    }

    std::vector<std::string> launch_keys() const override {
        return {"tile", "block", "layout", "padding", "vector_width"};
    }

    void resolve(pipeline& p, const std::string& source) const override {
        const std::size_t t = transpose_stage(p);
        refuse_around_transpose(p, t, source);
        const config::detail::object_reader l(p.launch.given, "launch", source, launch_keys());
        const auto_policy fallback = auto_policy_for(config::element_size(p.type));
        auto resolved = std::make_shared<tile_policy>();
        resolved->tile = l.leaves_auto("tile") ? fallback.tile : static_cast<int>(l.integer("tile", 16, 64, std::nullopt));
        if (resolved->tile != 16 && resolved->tile != 32 && resolved->tile != 64)
            l.fail("tile", "expected 16, 32, 64 or \"auto\", got " + std::to_string(resolved->tile));
        const bool maps_on_both_sides = t > 0 && t + 1 < p.stages.size();
        choose_layout(l, fallback, maps_on_both_sides, *resolved);
        resolved->width = choose_width(p, l, fallback, resolved->tile);
        resolved->tile_rows = choose_tile_rows(p, l, fallback, *resolved);
        const long long row_tiles = (p.shape->rows + resolved->tile - 1) / resolved->tile;
        if (row_tiles > 65535)
            throw config_error(source, "shape", "a transpose's grid has a block row per " + std::to_string(resolved->tile) +
                                                    " rows, at most 65535: expected at most " +
                                                    std::to_string(65535LL * resolved->tile) + " rows, got " +
                                                    std::to_string(p.shape->rows));
        p.policy = std::move(resolved);
    }

    /// Tile, its layout, and the threads that move it (a block the tile cannot take is refused).
    config::json_value tune_space(const pipeline&) const override {
        return {{"axes",
                 {{"launch.tile", {16, 32, 64}},
                  {"launch.layout", {"padded", "swizzled"}},
                  {"launch.block", {64, 128, 256, 512, 1024}}}}};
    }

    config::json_value policy(const pipeline& p) const override { return policy_of(p).columns(); }

    program plan(const pipeline& p, const codegen::template_set& templates) const override;
    reference::expected_values reference(const pipeline& p, const reference::input_arrays& inputs) const override;
    config::json_value reference_key(const pipeline&) const override { return nullptr; }

    /// The rows × cols matrix (x, or the input it starts from) as cols × rows.
    host_matrix host_op(const pipeline& p, std::size_t, host_matrix x, const host_launch& launch) const override {
        if (x.values.empty()) x = {launch.sizes.at("rows"), launch.sizes.at("cols"), host_values(p.type, *launch.buffers.at(launch.k.reads_x))};
        host_matrix t{x.cols, x.rows, std::vector<double>(x.values.size())};
        for (long long r = 0; r < x.rows; ++r)
            for (long long c = 0; c < x.cols; ++c) t.values[c * x.rows + r] = x.values[r * x.cols + c];
        return t;
    }
};

/// The element function's parameters and its call for the stages in [first, last): x, then the
/// arrays (element kjit_e of each one's vector), then the scalars; and the vectors to load.
void element_function(const pipeline& p, std::size_t first, std::size_t last, const std::string& x,
                      std::vector<std::string> vectors, mu::data& data, const std::string& prefix) {
    const expr::used_names used = names_of(p, first, last);
    std::vector<std::string> params{"real x"}, args{x};
    for (const auto& a : used.arrays) {
        params.push_back("real " + a);
        args.push_back("load(kjit_v_" + a + ".e[kjit_e])");
    }
    add_each(vectors, used.arrays);
    mu::data loads{mu::data::type::list};
    for (const auto& a : vectors) loads.push_back(mu::data("array", a));
    data.set(prefix + "_arrays", loads);
    for (const auto& s : used.scalars) {
        params.push_back("real " + s);
        args.push_back(s);
    }
    data.set(prefix + "_params", codegen::parameter_list(params));
    data.set(prefix + "_args", codegen::parameter_list(args, 24));  // called on lines indented by 16
    std::vector<std::size_t> stages(last - first);
    std::iota(stages.begin(), stages.end(), first);
    data.set(prefix, codegen::stage_steps(p, stages));
}

program transpose::plan(const pipeline& p, const codegen::template_set& templates) const {
    const tile_policy& t = policy_of(p);
    const std::size_t at = transpose_stage(p);
    program prog;
    prog.family = std::string(name());
    prog.double_scalars = config::computes_in_double(p.type);
    prog.output_rows = p.shape->cols;
    prog.output_cols = p.shape->rows;
    prog.inputs_align_with_output = false;
    const std::size_t element = config::element_size(p.type);
    for (const auto& in : p.inputs)
        prog.buffers.push_back({in.name, static_cast<std::size_t>(p.n) * element, buffer_role::input});
    prog.buffers.push_back({k_output_buffer, static_cast<std::size_t>(p.n) * element, buffer_role::output});

    kernel k;
    k.name = p.name + "_transpose";
    k.what = config::describe_stages(p) + ", fused into one kernel";
    for (std::size_t i = 0; i < p.stages.size(); ++i) k.stages.push_back(i);
    k.block = {t.tile / t.width, t.tile_rows, 1};
    k.grid = {(p.shape->cols + t.tile - 1) / t.tile, (p.shape->rows + t.tile - 1) / t.tile, 1};
    const std::string& first = p.stages.front().input;
    k.reads_x = first;
    std::vector<std::string> arrays;
    if (!first.empty()) arrays.push_back(first);
    const expr::used_names before = names_of(p, 0, at), after = names_of(p, at + 1, p.stages.size());
    add_each(arrays, before.arrays);
    add_each(arrays, after.arrays);
    std::vector<std::string> scalars = before.scalars;
    add_each(scalars, after.scalars);
    for (const auto& a : arrays) k.args.push_back(array_argument(a, false));
    k.args.push_back(array_argument(k_output_buffer, true));
    for (const auto& s : scalars) k.args.push_back(scalar_argument(s));
    k.args.push_back(size_argument("rows", p.shape->rows));
    k.args.push_back(size_argument("cols", p.shape->cols));
    k.bytes_read = static_cast<double>(arrays.size() * static_cast<std::size_t>(p.n) * element);
    k.bytes_written = static_cast<double>(static_cast<std::size_t>(p.n) * element);

    prog.vector_width = t.width;
    prog.array_alignment = static_cast<std::size_t>(t.width) * element;
    mu::data data = codegen::prologue_data(p, std::string(config::to_string(p.type)) + ", tiles of " +
                                                  std::to_string(t.tile) + " × " + std::to_string(t.tile) +
                                                  ", vector width " + std::to_string(t.width),
                                           t.width, prog.headers);
    data.set("tile", std::to_string(t.tile));
    data.set("tile_rows", std::to_string(t.tile_rows));
    data.set("padding", std::to_string(t.padding));
    const bool swizzled = t.layout == tile_layout::swizzled;
    data.set("swizzled", codegen::flag(swizzled));
    data.set("first", first);
    // A swizzled tile holds stored values: with no stage on a side, that side copies them as they are.
    data.set("before_copies", codegen::flag(swizzled && at == 0 && !first.empty()));
    data.set("after_copies", codegen::flag(swizzled && at + 1 == p.stages.size()));
    data.set("kernel", k.name);
    data.set("heading", codegen::heading(k.name, k.what));
    data.set("kernel_params", codegen::parameter_list(declarations(k)));
    element_function(p, 0, at, first.empty() ? "(real)0" : "load(kjit_v_" + first + ".e[kjit_e])",
                     first.empty() ? std::vector<std::string>{} : std::vector<std::string>{first}, data, "before");
    element_function(p, at + 1, p.stages.size(),
                     swizzled ? "load(kjit_tile[kjit_lane + kjit_e][kjit_slot].e[kjit_j % kjit_width])"
                              : "kjit_tile[kjit_lane + kjit_e][kjit_j]",
                     {}, data, "after");
    prog.source = codegen::render(templates, template_file(), data, {k.name});
    prog.kernels.push_back(std::move(k));
    return prog;
}

reference::expected_values transpose::reference(const pipeline& p, const reference::input_arrays& inputs) const {
    const auto rows = static_cast<std::size_t>(p.shape->rows), cols = static_cast<std::size_t>(p.shape->cols);
    const std::size_t at = transpose_stage(p);
    const reference::typed_array* first = p.stages.front().input.empty() ? nullptr : &inputs.at(p.stages.front().input);
    const expr::used_names before = names_of(p, 0, at), after = names_of(p, at + 1, p.stages.size());
    const std::map<std::string, double> scalars = config::scalar_values(p);
    const bool float_compute = !config::computes_in_double(p.type);
    const expr::approximations approximated = config::approximations_of(p);
    reference::expected_values out;
    out.values.resize(rows * cols);
    out.scales.resize(rows * cols);
    // Output rows (input columns) in groups, each gathered from the input a row at a time.
    constexpr std::size_t k_group = 16;
    parallel_ranges((cols + k_group - 1) / k_group, [&](std::size_t begin, std::size_t end) {
        std::vector<double> x(k_group * rows), scale(k_group * rows), next(rows), next_scale(rows);
        std::map<std::string, std::vector<double>> gathered;
        std::map<std::string, const double*> arrays;
        const auto run = [&](std::size_t from, std::size_t to, double* values, double* scales) {
            for (std::size_t s = from; s < to; ++s) {
                const expr::chunk in{rows, values, scales, &arrays, &scalars, float_compute, nullptr, nullptr,
                                     approximated};
                reference::evaluate_stage(p.stages[s], in, next.data(), next_scale.data());
                std::copy(next.begin(), next.end(), values);
                std::copy(next_scale.begin(), next_scale.end(), scales);
            }
        };
        for (std::size_t group = begin; group < end; ++group) {
            const std::size_t c0 = group * k_group, width = std::min(k_group, cols - c0);
            for (const auto& name : before.arrays) gathered[name].resize(k_group * rows);
            for (std::size_t r = 0; r < rows; ++r)
                for (std::size_t c = 0; c < width; ++c) {
                    const std::size_t i = r * cols + c0 + c;
                    x[c * rows + r] = first ? first->get(i) : 0.0;
                    scale[c * rows + r] = 0;
                    for (const auto& name : before.arrays) gathered[name][c * rows + r] = inputs.at(name).get(i);
                }
            for (std::size_t c = 0; c < width; ++c) {
                for (const auto& name : before.arrays) arrays[name] = gathered[name].data() + c * rows;
                double* values = x.data() + c * rows;
                double* scales = scale.data() + c * rows;
                run(0, at, values, scales);
                const std::size_t o = (c0 + c) * rows;  // the output row, contiguous
                for (const auto& name : after.arrays) {
                    auto& column = gathered["after " + name];
                    column.resize(rows);
                    for (std::size_t r = 0; r < rows; ++r) column[r] = inputs.at(name).get(o + r);
                    arrays[name] = column.data();
                }
                run(at + 1, p.stages.size(), values, scales);
                std::copy_n(values, rows, out.values.begin() + static_cast<std::ptrdiff_t>(o));
                std::copy_n(scales, rows, out.scales.begin() + static_cast<std::ptrdiff_t>(o));
            }
        }
    }, 1);
    return out;
}

}  // namespace

const family& transpose_family() {
    static const transpose instance;
    return instance;
}

}  // namespace kjit::family
