#include "family/rows/rows.hpp"

#include <algorithm>

#include "family/checks.hpp"
#include "family/rows/element_calls.hpp"
#include "family/rows/geometry.hpp"
#include "family/rows/policy.hpp"
#include "family/rows/steps.hpp"
#include "family/stage_chain.hpp"

namespace kjit::family {
namespace {

namespace mu = codegen::mu;
using config::pipeline;
using cache = rows::row_cache;
using rows::flowing_value;
using rows::k_element_indent;
using rows::step_context;
using result_kind = chain_kernel::result;

/// How many times a kernel reads its arrays: with row_cache "none" once per pass over the row
/// (each reduce, an online max and sum together, and the store of a result per element).
int passes_of(const pipeline& p, const chain_kernel& k) {
    if (rows::policy_of(p).cache != cache::none) return 1;
    const auto reduces =
            std::count_if(k.stages.begin(), k.stages.end(), [&](std::size_t i) { return rows::is_reduce_pass(p.stages[i]); });
    return static_cast<int>(reduces) + (k.output == result_kind::elements ? 1 : 0);
}

argument row_value_argument(const std::string& name, bool written) {
    argument a;
    a.name = name;
    a.cuda_name = "kjit_row_" + name;
    a.written = written;
    a.cuda = std::string(written ? "real* __restrict__ " : "const real* __restrict__ ") + a.cuda_name;
    return a;
}

/// The kernel's parameters in order: arrays, row values read, what it writes, row values it also
/// writes, scalars, rows and cols.
std::vector<argument> arguments_of(const pipeline& p, const chain_kernel& k) {
    std::vector<argument> args;
    for (const auto& a : k.reads) args.push_back(array_argument(a, false));
    for (const auto& r : k.row_reads) args.push_back(row_value_argument(r, false));
    args.push_back(k.output == result_kind::row_value ? row_value_argument(k.writes, true) : array_argument(k.writes, true));
    for (const auto& r : k.also_writes) args.push_back(row_value_argument(r, true));
    for (const auto& s : k.scalars) args.push_back(scalar_argument(s));
    args.push_back(size_argument("rows", p.shape->rows));
    args.push_back(size_argument("cols", p.shape->cols));
    return args;
}

/// The row function's parameters and its calls' arguments: the row, the thread's first vector, the
/// row where it waits (in shared memory, or loaded ahead), then the kernel's own parameters; each
/// kernel calls it with its own variables of those names.
struct row_signature {
    std::vector<std::string> params{"const long long kjit_row_index", "const long long kjit_first"}, args{"kjit_row_index", "kjit_first"};
};
row_signature row_signature_of(const kernel& planned, bool in_shared, bool prefetched) {
    row_signature s;
    if (in_shared) {
        s.params.emplace_back("const vec* kjit_row");
        s.args.emplace_back("kjit_row");
    }
    if (prefetched) {
        s.params.emplace_back("const vec (&kjit_loaded)[kjit_vectors_per_thread]");
        s.args.emplace_back("kjit_loaded");
    }
    for (const auto& param : declarations(planned)) s.params.push_back(param);
    for (const auto& a : planned.args) s.args.push_back(a.cuda_name);
    return s;
}

/// The template's data for one kernel: its row function's loads, stages and stores. `unread` is
/// where its first stage ignores the row it loads (rows::unread_where).
mu::data kernel_data(const pipeline& p, const chain_kernel& k, const kernel& planned, const expr::tree& unread) {
    const bool in_shared = planned.shared_bytes > 0;
    // A block that loops over rows loads the next row into registers while it works on this one.
    const bool loads_each_pass = !rows::row_in_registers(p);
    const bool prefetched = rows::rows_loop(p) && !loads_each_pass && !k.first_value.empty();
    const row_signature row = row_signature_of(planned, in_shared, prefetched);
    mu::data item;
    item.set("kernel", k.name);
    item.set("heading", codegen::heading(k.name, k.what));
    item.set("kernel_params", codegen::parameter_list(declarations(planned)));
    item.set("row_params", codegen::parameter_list(row.params));
    // The row function is called on a line indented by 4, or by 8 in a loop over rows.
    item.set("row_args", codegen::parameter_list(row.args, 12));
    item.set("loop_row_args", codegen::parameter_list(row.args, 16));
    if (!k.first_value.empty()) item.set("first", k.first_value);
    // x[] holds the flowing values, each map applied in place; or, with launch.row_cache
    // "inputs", the row as loaded (half the space for 16-bit storage); with "none" there is no
    // x[], and each pass loads the row again. In those, each use of x applies the maps before
    // it again. With "shared", the passes load the row from shared memory instead, as "none"
    // does from global memory.
    const bool keep_inputs = rows::policy_of(p).cache == cache::inputs && !k.first_value.empty();
    const step_context c{p, k, codegen::style_of(p), rows::rows_misaligned(p), loads_each_pass || keep_inputs};
    // Where the row is loaded into registers here, once: the one load that can be skipped.
    item.set("unread", rows::unread_test(unread, k.stages.front(), c.style, c.misaligned));
    // The row's vectors are in kjit_loaded[] before its elements are: loaded ahead (prefetched),
    // or each one only where the first stage needs it.
    item.set("loaded", codegen::flag(prefetched || unread));
    mu::data row_inputs{mu::data::type::list};
    for (const auto& r : k.row_reads) row_inputs.push_back(mu::data("row_value", r));
    item.set("row_inputs", row_inputs);
    item.set("in_shared", codegen::flag(in_shared));
    item.set("prefetched", codegen::flag(prefetched));
    // The row's vector loaded in each pass over it, where the row is not kept in registers.
    item.set("first_in_pass", codegen::flag(loads_each_pass && !k.first_value.empty()));
    item.set("keeps_inputs", codegen::flag(keep_inputs));
    item.set("loads_each_pass", codegen::flag(loads_each_pass));
    // Other arrays are read a vector at a time where a loop over x uses them: those of the
    // stage, and in "inputs" mode those of the maps its value goes through again.
    flowing_value flow{{!loads_each_pass ? (keep_inputs ? "load(x[kjit_j].e[kjit_k])" : "x[kjit_j * kjit_width + kjit_k]")
                        : k.first_value.empty() ? "(real)0"
                                                : "load(kjit_in.e[kjit_k])"},
                       {}};
    mu::data steps{mu::data::type::list};
    // The first pass over a row landing in groups of copies waits for each where it reaches it:
    // the first reduce's, or the store's where there is none.
    bool waits = rows::policy_of(p).copy_groups > 1;
    for (std::size_t i : k.stages) {
        if (p.stages[i].online_with) continue;  // an online sum is computed with its max
        mu::data step = rows::stage_step(c, i, flow);
        const bool pass = rows::is_reduce_pass(p.stages[i]);
        step.set("waits_for_copies", codegen::flag(waits && pass));
        waits = waits && !pass;
        steps.push_back(step);
    }
    item.set("waits_for_copies", codegen::flag(waits));
    item.set("stored_value", codegen::print(flow.value, k_element_indent));
    item.set("store_arrays", c.vector_loads(flow.arrays));
    item.set("steps", steps);
    rows::set_stores(p, k, item);
    return item;
}

/// The reductions' spelling and the helpers they need: each reduction's struct and shuffle (a
/// max computed with its online sum uses kjit_online instead of both).
void set_reduction_data(const pipeline& p, mu::data& data) {
    codegen::set_reduction_spelling(p, data);
    std::vector<bool> has_online_sum(p.stages.size(), false);  // a max computed with its sum
    for (const auto& st : p.stages)
        if (st.online_with) has_online_sum[*st.online_with] = true;
    const bool online = std::find(has_online_sum.begin(), has_online_sum.end(), true) != has_online_sum.end();
    bool sum = false, max = false, min = false;
    for (std::size_t i = 0; i < p.stages.size(); ++i) {
        const config::stage& st = p.stages[i];
        if (st.online_with || has_online_sum[i]) continue;  // the pair uses kjit_online
        sum = sum || st.reduce == config::reduction::sum || st.reduce == config::reduction::mean;
        max = max || st.reduce == config::reduction::max;
        min = min || st.reduce == config::reduction::min;
    }
    data.set("uses_sum", codegen::flag(sum));
    data.set("uses_max", codegen::flag(max));
    data.set("uses_min", codegen::flag(min));
    data.set("online_sums", codegen::flag(online));
    data.set("classic_reductions", codegen::flag(sum || max || min));
}

/// How the row moves: into shared memory (cp.async, in groups of copies), as words for the
/// evict-first and skipping loads, and which read and write helpers the kernels use. `unread`
/// holds each kernel's rows::unread_where.
void set_movement_data(const pipeline& p, const stage_chain& chain, const std::vector<expr::tree>& unread, mu::data& data) {
    const rows::policy& chosen = rows::policy_of(p);
    data.set("shared_rows", codegen::flag(chosen.cache == cache::shared));
    // A row copied into shared memory in groups (a block or cluster per row): the first pass waits
    // for each group where it reaches it. In one group, the kernel waits for the row before it.
    data.set("copy_groups", std::to_string(chosen.copy_groups));
    data.set("group_vectors", std::to_string(rows::copy_group_vectors(p)));
    data.set("lands_in_groups", codegen::flag(chosen.copy_groups > 1));
    // cp.async copies 4, 8 or 16 bytes; only a 16-byte copy may bypass L1 (.cg).
    const int vector_bytes = p.launch.vector_width * static_cast<int>(config::element_size(p.type));
    data.set("copy_async", codegen::flag(rows::copies_async(p)));
    data.set("streaming", codegen::flag(chosen.streaming));
    const bool reads_unless = std::any_of(unread.begin(), unread.end(), [](const expr::tree& t) { return t != nullptr; });
    data.set("reads_unless", codegen::flag(reads_unless));
    data.set("in_words", codegen::flag(chosen.streaming || reads_unless));
    data.set("copy_level", chosen.streaming && vector_bytes == 16 ? "cg" : "ca");
    // __ldcs and __stcs take a built-in type, and a skipped load is chosen by whole words: a
    // vector is moved as words of up to 16 bytes.
    const int word_bytes = std::min(vector_bytes, 16);
    data.set("word", word_bytes == 16 ? "uint4" : word_bytes == 8 ? "uint2" : word_bytes == 4 ? "unsigned" : "unsigned short");
    data.set("words", std::to_string(vector_bytes / word_bytes));
    // A kernel whose first stage can skip vectors reads them with kjit_read_unless instead.
    bool reads_row = false;
    for (std::size_t i = 0; i < chain.kernels.size(); ++i)
        reads_row = reads_row || (!chain.kernels[i].first_value.empty() && !unread[i]);
    const bool copies_through_registers = chosen.cache == cache::shared && !rows::copies_async(p);
    data.set("reads_once", codegen::flag(reads_row && (rows::row_in_registers(p) || copies_through_registers)));
    data.set("writes_once", codegen::flag(std::any_of(chain.kernels.begin(), chain.kernels.end(), [](const chain_kernel& k) {
                 return k.output == result_kind::elements;
             })));
}

/// Which rows a block works on, and which of a row's vectors a thread: a block (or cluster) a
/// row, or on a warp per row, rows_per_block rows side by side, a row's value its warp's (no
/// barrier: a warp ends its row when it is done). The kernels' first row, the thread's first
/// vector, the step of a loop over rows, and the comments that say so.
void set_mapping_data(const pipeline& p, mu::data& data) {
    const bool warps = rows::policy_of(p).warp_per_row;
    data.set("warp_rows", codegen::flag(warps));
    data.set("rows_per_block", std::to_string(rows::rows_per_block(p)));
    data.set("row_of_block", warps ? "(long long)blockIdx.x * kjit_rows_per_block + threadIdx.x / 32" : "blockIdx.x");
    data.set("first_thread", warps ? "threadIdx.x % 32" : "threadIdx.x");
    data.set("row_step", warps ? "(long long)gridDim.x * kjit_rows_per_block" : "gridDim.x");
    data.set("rows_of_block", warps ? "One warp per row, kjit_rows_per_block rows a block." : "One block per row.");
    data.set("rows_of_looping_block", warps ? "Fewer blocks than rows, a warp per row: warp w of block b works on rows "
                                              "b·kjit_rows_per_block + w, then every\n// gridDim.x·kjit_rows_per_block-th."
                                            : "Fewer blocks than rows: block b works on rows b, b + gridDim.x, …");
}

/// What the whole source is given besides its kernels: the row's shape in registers, the
/// reductions' spelling, the cache and copy choices. `unread` holds each kernel's
/// rows::unread_where.
void add_row_data(const pipeline& p, const stage_chain& chain, const std::vector<expr::tree>& unread, mu::data& data) {
    const int width = p.launch.vector_width;
    const rows::policy& chosen = rows::policy_of(p);
    data.set("block", std::to_string(p.launch.block));
    if (chosen.min_blocks_per_sm) data.set("min_blocks_per_sm", std::to_string(chosen.min_blocks_per_sm));
    data.set("launch_bounds", chosen.min_blocks_per_sm ? "kjit_block, kjit_min_blocks_per_sm" : "kjit_block");
    data.set("items", std::to_string(rows::row_items_per_thread(p)));
    data.set("vectors_per_thread", std::to_string(rows::vectors_per_thread(p)));
    data.set("cluster", std::to_string(chosen.cluster));
    data.set("clustered", codegen::flag(chosen.cluster > 1));
    data.set("row_stride", std::to_string(rows::row_threads(p)));
    set_mapping_data(p, data);
    data.set("misaligned", codegen::flag(rows::rows_misaligned(p)));
    // Rows that start inside a vector read a per-column input an element at a time.
    data.set("columns_by_element", codegen::flag(rows::rows_misaligned(p) && rows::per_column_inputs(p) > 0));
    // Where a row's vectors start, and how many there are, in the helpers that copy or load row
    // `row` of `cols`.
    data.set("row_start", rows::rows_misaligned(p) ? "row * cols - kjit_lead_of(row, cols)" : "row * cols");
    data.set("row_vector_count", rows::rows_misaligned(p) ? "kjit_vectors_of(row, cols)" : "cols / kjit_width");
    data.set("loops", codegen::flag(rows::rows_loop(p)));
    // A block holds several rows in shared memory, each this many vectors apart: two where it
    // loops over rows, one a warp on a warp per row.
    data.set("rows_apart", codegen::flag(chosen.cache == cache::shared && (rows::rows_loop(p) || chosen.warp_per_row)));
    // The vectors of a row a block holds: all of them, or its share of a row spread over a cluster.
    // (On a warp per row, each of its rows'.)
    const long long vector_bytes = width * static_cast<long long>(config::element_size(p.type));
    data.set("vectors_per_row", std::to_string(rows::row_bytes_per_block(p) / rows::rows_per_block(p) / vector_bytes));
    data.set("prefetch_rows", codegen::flag(rows::rows_loop(p) && rows::row_in_registers(p)));
    set_reduction_data(p, data);
    set_movement_data(p, chain, unread, data);
}

class row_family final : public family {
public:
    std::string_view name() const override { return "rows"; }
    std::string_view pipelines() const override { return "stages with a reduce"; }
    std::string_view template_file() const override { return "rows.cu.mustache"; }

    bool accepts(const pipeline& p) const override {
        const auto any = [&](auto test) { return std::any_of(p.stages.begin(), p.stages.end(), test); };
        return any([](const config::stage& s) { return s.reduce != config::reduction::none; }) &&
               !any([](const config::stage& s) { return s.family_op; });
    }

    std::vector<std::string> launch_keys() const override { return rows::launch_keys(); }

    void resolve(pipeline& p, const std::string& source) const override {
        refuse_shaped_inputs(p, source);
        rows::resolve_policy(p, source);
    }

    /// A warp per row (1 or 4 a block) or a block per row, where the row waits between passes,
    /// how many blocks share it, whether its loads evict first, and whether a row in shared memory
    /// lands in groups: the choices the sweeps found to matter.
    config::json_value tune_space(const pipeline&) const override {
        return {{"axes",
                 {{"launch.row_cache", {"values", "inputs", "none", "shared"}},
                  {"launch.cluster", {1, 2, 4, 8}},
                  {"launch.streaming", {false, true}},
                  {"launch.copy_groups", {1, 8}}}},
                {"paired",
                 {{{"launch.row_mapping", {"warp", "warp", "block", "block", "block", "block", "block"}},
                   {"launch.block", {32, 128, 64, 128, 256, 512, 1024}}}}}};
    }

    /// The launch every family has (block, vector width, grid), and the row policy's own.
    config::json_value policy(const pipeline& p) const override {
        config::json_value columns = rows::policy_of(p).columns();
        columns["block"] = p.launch.block;
        columns["vector_width"] = p.launch.vector_width;
        columns["grid"] = config::grid_value(p.launch);
        return columns;
    }

    program plan(const pipeline& p, const codegen::template_set& templates) const override {
        chain_start start = start_chain(p, name());
        start.prog.array_alignment = static_cast<std::size_t>(p.launch.vector_width) * config::element_size(p.type);
        // Each kernel's test for the vectors it need not read, decided once.
        std::vector<expr::tree> unread;
        for (const auto& k : start.chain.kernels) unread.push_back(rows::unread_where(p, k));
        add_row_data(p, start.chain, unread, start.data);
        for (std::size_t i = 0; i < start.chain.kernels.size(); ++i) {
            const chain_kernel& k = start.chain.kernels[i];
            kernel planned = kernel_of(k, p.launch.block);
            // One block (or cluster) per row, or per rows_per_block rows on a warp each; a given
            // grid loops over the rows, and needs no more blocks than that.
            const long long cluster = rows::policy_of(p).cluster, per_block = rows::rows_per_block(p);
            const long long blocks = (p.shape->rows + per_block - 1) / per_block * cluster;
            if (p.launch.grid) {  // blocks; where a cluster takes a row, whole clusters
                planned.grid.x = std::max(1LL, std::min(*p.launch.grid, blocks) / cluster) * cluster;
            } else {
                planned.grid.x = blocks;
                if (p.launch.grid_resident) planned.resident = resident_rule::at_most;
            }
            if (!k.first_value.empty()) planned.shared_bytes = rows::shared_bytes(p);
            planned.args = arguments_of(p, k);
            count_work(p, k, passes_of(p, k), planned);
            // A skipped vector is never read: its bytes come off the x array's one pass.
            planned.bytes_read -= (1 - rows::read_share(p, unread[i])) * static_cast<double>(p.n) *
                                  static_cast<double>(config::element_size(p.type));
            mu::data item = kernel_data(p, k, planned, unread[i]);
            start.add(std::move(planned), std::move(item));
        }
        return start.finish(templates, template_file());
    }

    reference::expected_values reference(const pipeline& p, const reference::input_arrays& inputs) const override {
        return reference::compute(p, inputs, rows::sum_depths(p));
    }

    config::json_value reference_key(const pipeline& p) const override { return {{"sum_depth", rows::sum_depths(p).depth}}; }
};

}  // namespace

const family& rows_family() {
    static const row_family instance;
    return instance;
}

}  // namespace kjit::family
