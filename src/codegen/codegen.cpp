#include "codegen/codegen.hpp"

#include <algorithm>

#include <kainjow/mustache.hpp>

#include "expr/functions.hpp"
#include "util/embedded.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

namespace kjit::codegen {
namespace {

namespace mu = kainjow::mustache;

void add_once(std::vector<std::string>& names, const std::string& name) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
}

/// A kernel over some stages: the array its x starts from ("" = none) and what it launches with.
struct kernel_model {
    kernel_plan plan;
    std::string first_value;
};

/// Adds stages[index] to kernel k: the arrays and scalars it uses become k's parameters, and
/// with `rows_in_memory` the row values it uses too (a separate kernel reads them from memory).
void add_stage(kernel_model& k, const config::pipeline& p, std::size_t index, bool rows_in_memory) {
    expr::used_names used;
    expr::collect_names(p.stages[index].kernel, used);
    for (const auto& name : used.arrays) add_once(k.plan.reads, name);
    for (const auto& name : used.scalars) add_once(k.plan.scalars, name);
    if (rows_in_memory)
        for (const auto& name : used.rows) add_once(k.plan.row_reads, name);
    k.plan.stages.push_back(index);
}

/// What a row kernel's cache costs: with launch.row_cache "none", each pass over the row reads
/// it again (a reduce, an online sum in its max's pass, and the store of a result per element);
/// with "shared", the block holds the row in shared memory (two rows when it loops over rows:
/// the next one arrives while this one is worked on).
void set_row_cache_costs(const config::pipeline& p, kernel_model& k) {
    using cache = config::launch_spec::row_cache;
    if (!k.plan.per_row) return;
    if (p.launch.cache == cache::shared && !k.first_value.empty())
        k.plan.shared_bytes = static_cast<std::size_t>(config::row_bytes_per_block(p) * (config::rows_loop(p) ? 2 : 1));
    if (p.launch.cache != cache::none) return;
    const auto reduces = std::count_if(k.plan.stages.begin(), k.plan.stages.end(), [&](std::size_t i) {
        return p.stages[i].reduce != config::reduction::none && !p.stages[i].online_with;
    });
    k.plan.passes = static_cast<int>(reduces) + (k.plan.output == kernel_plan::result::elements ? 1 : 0);
}

/// The kernels of a variant. Fused: one kernel for every stage. Separate: one kernel per stage,
/// the shape of the seed's three @vectorize functions: each map writes an intermediate array that
/// the next kernel reads, each reduce a row value (x flows past it in the array that holds it);
/// an online sum is computed, and written, by its max's kernel.
/// Row kernels (a pipeline with a reduce) run a block per row.
std::vector<kernel_model> plan_kernels(const config::pipeline& p, generated_source& result) {
    using output = kernel_plan::result;
    const bool per_row = config::has_reductions(p);
    const auto final_output = [](const config::stage& last) {
        return last.reduce == config::reduction::none ? output::elements : output::row_output;
    };
    std::vector<kernel_model> kernels;
    if (p.fuse == config::fusion::fused) {
        kernel_model k;
        k.plan.name = p.name + "_fused";
        k.plan.writes = k_output_buffer;
        k.plan.per_row = per_row;
        k.plan.output = final_output(p.stages.back());
        k.first_value = p.stages.front().input;
        if (!k.first_value.empty()) add_once(k.plan.reads, k.first_value);
        for (std::size_t i = 0; i < p.stages.size(); ++i) add_stage(k, p, i, false);
        k.plan.what = config::describe_stages(p) + ", fused into one kernel";
        set_row_cache_costs(p, k);
        kernels.push_back(std::move(k));
        return kernels;
    }
    std::string holds_x = p.stages.front().input;
    std::vector<std::size_t> kernel_of_stage;
    for (std::size_t i = 0; i < p.stages.size(); ++i) {
        const auto& s = p.stages[i];
        kernel_of_stage.push_back(kernels.size());
        if (s.online_with) {  // computed by its max's kernel, which writes it too
            kernel_model& with_max = kernels[kernel_of_stage[*s.online_with]];
            with_max.plan.stages.push_back(i);
            with_max.plan.also_writes.push_back(s.as);
            with_max.plan.what += ", and stages[" + std::to_string(i) + "] in the same pass";
            result.row_values.push_back(s.as);
            continue;
        }
        const bool map = s.reduce == config::reduction::none;
        kernel_model k;
        k.plan.name = p.name + "_s" + std::to_string(i) + "_" + s.op;
        k.plan.per_row = per_row;
        k.first_value = holds_x;
        if (!holds_x.empty()) add_once(k.plan.reads, holds_x);
        add_stage(k, p, i, true);
        if (i + 1 == p.stages.size()) {
            k.plan.writes = k_output_buffer;
            k.plan.output = final_output(s);
        } else if (map) {
            k.plan.writes = "tmp" + std::to_string(i);
            result.temporaries.push_back(k.plan.writes);
        } else {
            k.plan.writes = s.as;
            k.plan.output = output::row_value;
            result.row_values.push_back(s.as);
        }
        if (map) holds_x = k.plan.writes;
        k.plan.what = "stages[" + std::to_string(i) + "]: " + config::describe(s) + ", a kernel of its own";
        set_row_cache_costs(p, k);
        kernels.push_back(std::move(k));
    }
    return kernels;
}

/// "a, b, c" from each name passed through `spell`.
template <class Spell>
std::string joined(const std::vector<std::string>& names, Spell spell, const std::string& separator = ", ") {
    std::string text;
    for (const auto& name : names) text += (text.empty() ? "" : separator) + spell(name);
    return text;
}

struct storage_spelling {
    const char* storage;
    const char* load;
    const char* store;
    const char* header;  ///< nullptr: none needed
};

storage_spelling spelling_of(config::dtype type) {
    switch (type) {
        case config::dtype::float32: return {"float", "v", "x", nullptr};
        case config::dtype::float64: return {"double", "v", "x", nullptr};
        case config::dtype::float16: return {"__half", "__half2float(v)", "__float2half_rn(x)", "cuda_fp16.h"};
        case config::dtype::bfloat16:
            return {"__nv_bfloat16", "__bfloat162float(v)", "__float2bfloat16_rn(x)", "cuda_bf16.h"};
    }
    return {"float", "v", "x", nullptr};
}

mu::data flag(bool value) { return value ? mu::data::type::bool_true : mu::data::type::bool_false; }

std::string render(const std::string& text, const mu::data& data, const std::string& name,
                   const template_set& templates) {
    mu::mustache tmpl(text);
    if (!tmpl.is_valid())
        throw config_error(templates.origin + "/" + name, "", "template error: " + tmpl.error_message());
    tmpl.set_custom_escape([](const std::string& s) { return s; });  // C++, not HTML
    std::string out = tmpl.render(data);
    if (!tmpl.is_valid())
        throw config_error(templates.origin + "/" + name, "", "template error: " + tmpl.error_message());
    return out;
}

}  // namespace

template_set template_set::embedded() {
    return {std::string(embedded_file("kernel_templates/elementwise.cu.mustache")),
            std::string(embedded_file("kernel_templates/rows.cu.mustache")),
            std::string(embedded_file("kernel_templates/copy.cu.mustache")), "embedded"};
}

template_set template_set::from_directory(const std::filesystem::path& dir) {
    auto read = [&](const char* name) {
        try {
            return fs::read_file(dir / name);
        } catch (const error& e) {
            throw error(error_kind::usage, std::string("--templates: ") + e.what());
        }
    };
    return {read("elementwise.cu.mustache"), read("rows.cu.mustache"), read("copy.cu.mustache"), dir.string()};
}

namespace {

/// What every template is given: names, types and how values are loaded and stored.
mu::data common_data(const config::pipeline& p, generated_source& result, const expr::cuda_style& style) {
    const storage_spelling spelled = spelling_of(p.type);
    if (spelled.header) result.headers.push_back(spelled.header);
    mu::data data;
    data.set("name", p.name);
    // Not variant_label: launch settings must not change an elementwise source, or every block
    // size in a sweep would be compiled (and cached) again.
    data.set("label", std::string(config::to_string(p.fuse)) + ", " + std::string(config::to_string(p.type)) +
                          ", vector width " + std::to_string(result.vector_width));
    mu::data headers{mu::data::type::list};
    for (const auto& header : result.headers) headers.push_back(mu::data("header", header));
    data.set("headers", headers);
    data.set("compute", style.double_precision ? "double" : "float");
    data.set("storage", spelled.storage);
    data.set("load", spelled.load);
    data.set("store", spelled.store);
    data.set("width", std::to_string(result.vector_width));
    data.set("vector_bytes", std::to_string(result.vector_width * config::element_size(p.type)));
    data.set("vectorized", flag(result.vector_width > 1));
    return data;
}

const auto as_is = [](const std::string& text) { return text; };

mu::data elementwise_kernels(const config::pipeline& p, generated_source& result, const expr::cuda_style& style) {
    mu::data kernels{mu::data::type::list};
    for (const auto& k : plan_kernels(p, result)) {
        const auto& reads = k.plan.reads;
        const auto& scalars = k.plan.scalars;
        // The element function takes each array's element, then the scalars.
        std::vector<std::string> element_inputs = reads;
        element_inputs.insert(element_inputs.end(), scalars.begin(), scalars.end());
        const auto element_args = [&](const auto& spell_array) {
            std::vector<std::string> args;
            for (const auto& a : reads) args.push_back(spell_array(a));
            args.insert(args.end(), scalars.begin(), scalars.end());
            return joined(args, as_is);
        };
        std::vector<std::string> kernel_params;
        for (const auto& a : reads) kernel_params.push_back("const store_t* __restrict__ " + a);
        kernel_params.push_back(std::string("store_t* __restrict__ ") + k_output_buffer);
        for (const auto& s : scalars) kernel_params.push_back("real " + s);
        kernel_params.push_back("long long n");
        mu::data item;
        item.set("kernel", k.plan.name);
        item.set("what", k.plan.what);
        item.set("first", k.first_value.empty() ? std::string("0") : k.first_value);
        item.set("element_params", joined(element_inputs, [](const std::string& a) { return "real " + a; }));
        item.set("kernel_params", joined(kernel_params, as_is));
        item.set("vector_args", element_args([](const std::string& a) { return "load(kjit_v_" + a + ".e[k])"; }));
        item.set("scalar_args", element_args([](const std::string& a) { return "load(" + a + "[i])"; }));
        std::vector<std::string> pointers = reads;
        pointers.push_back(k_output_buffer);
        item.set("alignment", joined(pointers, [](const std::string& a) { return "(unsigned long long)" + a; }, " | "));
        mu::data arrays{mu::data::type::list};
        for (const auto& a : reads) arrays.push_back(mu::data("array", a));
        item.set("arrays", arrays);
        mu::data steps{mu::data::type::list};
        for (std::size_t i : k.plan.stages) {
            mu::data step;
            step.set("index", std::to_string(i));
            step.set("what", config::describe(p.stages[i]));
            step.set("code", expr::to_cuda(p.stages[i].kernel, style));
            steps.push_back(step);
        }
        item.set("steps", steps);
        kernels.push_back(item);
        result.kernels.push_back(k.plan);
    }
    return kernels;
}

/// A final reduce without a name still needs a variable to hold its value.
std::string row_value_name(const config::stage& s) { return s.as.empty() ? "kjit_result" : s.as; }

mu::data row_kernels(const config::pipeline& p, generated_source& result, const expr::cuda_style& style) {
    const int width = result.vector_width;
    mu::data kernels{mu::data::type::list};
    for (const auto& k : plan_kernels(p, result)) {
        using result_kind = kernel_plan::result;
        const bool row_value_out = k.plan.output == result_kind::row_value;
        // The kernel's parameters, which it passes on to its row function.
        std::vector<std::string> kernel_params, kernel_args;
        const auto param = [&](const std::string& type, const std::string& name) {
            kernel_params.push_back(type + " " + name);
            kernel_args.push_back(name);
        };
        for (const auto& a : k.plan.reads) param("const store_t* __restrict__", a);
        for (const auto& r : k.plan.row_reads) param("const real* __restrict__", "kjit_row_" + r);
        if (row_value_out)
            param("real* __restrict__", "kjit_row_" + k.plan.writes);
        else
            param("store_t* __restrict__", k.plan.writes);
        for (const auto& r : k.plan.also_writes) param("real* __restrict__", "kjit_row_" + r);
        for (const auto& s : k.plan.scalars) param("real", s);
        param("long long", "rows");
        param("long long", "cols");
        mu::data item;
        item.set("kernel", k.plan.name);
        item.set("what", k.plan.what);
        item.set("kernel_params", joined(kernel_params, as_is));
        item.set("kernel_args", joined(kernel_args, as_is));
        if (!k.first_value.empty()) item.set("first", k.first_value);
        mu::data row_inputs{mu::data::type::list};
        for (const auto& r : k.plan.row_reads) row_inputs.push_back(mu::data("row_value", r));
        item.set("row_inputs", row_inputs);
        // x[] holds the flowing values, each map applied in place; or, with launch.row_cache
        // "inputs", the row as loaded (half the space for 16-bit storage); with "none" there is no
        // x[], and each pass loads the row again. In those, each use of x applies the maps before
        // it again.
        using cache = config::launch_spec::row_cache;
        // With "shared", the passes load the row from shared memory instead, as "none" does from
        // global memory.
        const bool loads_each_pass = p.launch.cache == cache::none || p.launch.cache == cache::shared;
        const bool keep_inputs = p.launch.cache == cache::inputs && !k.first_value.empty();
        item.set("in_shared", flag(k.plan.shared_bytes > 0));
        // A block that loops over rows loads the next row into registers while it works on this one.
        item.set("prefetched", flag(config::rows_loop(p) && !loads_each_pass && !k.first_value.empty()));
        const bool maps_at_use = loads_each_pass || keep_inputs;
        std::string value = !loads_each_pass ? (keep_inputs ? "load(x[j].e[k])" : "x[j * " + std::to_string(width) + " + k]")
                            : k.first_value.empty() ? "(real)0"
                                                    : "load(in.e[k])";
        item.set("keeps_inputs", flag(keep_inputs));
        item.set("loads_each_pass", flag(loads_each_pass));
        // Other arrays are read a vector at a time where a loop over x uses them: those of the
        // stage, and in "inputs" mode those of the maps its value goes through again.
        std::vector<std::string> value_arrays;
        const auto vector_loads = [&](const std::vector<std::string>& arrays) {
            mu::data list{mu::data::type::list};
            for (const auto& a : arrays) {
                const config::input_spec* input = config::find_input(p, a);
                const bool per_column = input && input->per_column;
                mu::data load;
                load.set("array", a);
                load.set("at", per_column ? a : a + " + base");  // a per-column input: the same for every row
                list.push_back(load);
            }
            return list;
        };
        mu::data steps{mu::data::type::list};
        for (std::size_t i : k.plan.stages) {
            const config::stage& st = p.stages[i];
            if (st.online_with) continue;  // computed with its max
            expr::used_names used;
            expr::collect_names(st.kernel, used);
            // The element function takes x, each array's element, the row values, then the scalars.
            std::vector<std::string> params{"real x"}, args{value};
            std::vector<std::string> site_arrays = value_arrays;
            for (const auto& a : used.arrays) {
                params.push_back("real " + a);
                args.push_back("load(kjit_v_" + a + ".e[k])");
                add_once(site_arrays, a);
            }
            for (const auto& names : {used.rows, used.scalars})
                for (const auto& name : names) {
                    params.push_back("real " + name);
                    args.push_back(name);
                }
            const std::string call = "kjit_" + k.plan.name + "_s" + std::to_string(i) + "(" + joined(args, as_is) + ")";
            mu::data step;
            step.set("index", std::to_string(i));
            step.set("what", config::describe(st));
            step.set("code", expr::to_cuda(st.kernel, style));
            step.set("params", joined(params, as_is));
            step.set("value", call);
            step.set("arrays", vector_loads(site_arrays));
            if (st.reduce == config::reduction::none) {
                if (maps_at_use) {  // applied where x is used next
                    value = call;
                    value_arrays = site_arrays;
                } else {
                    step.set("map", flag(true));
                }
            } else {
                // The online sum computed with this max, if any.
                const auto online = std::find_if(k.plan.stages.begin(), k.plan.stages.end(),
                                                 [&](std::size_t later) { return p.stages[later].online_with == i; });
                const bool with_sum = online != k.plan.stages.end();
                step.set("reduce", flag(true));
                step.set("online", flag(with_sum));
                // A mean is a sum divided by cols.
                step.set("op", with_sum ? "online"
                               : std::string(config::to_string(st.reduce == config::reduction::mean ? config::reduction::sum
                                                                                                  : st.reduce)));
                step.set("mean", flag(st.reduce == config::reduction::mean));
                step.set("row_value", row_value_name(st));
                if (with_sum) {
                    step.set("sum_index", std::to_string(*online));
                    step.set("sum_value", row_value_name(p.stages[*online]));
                }
            }
            steps.push_back(step);
        }
        item.set("stored_value", value);
        item.set("store_arrays", vector_loads(value_arrays));
        item.set("steps", steps);
        mu::data row_stores{mu::data::type::list};
        const auto store_row = [&](const std::string& writes, const std::string& stored) {
            mu::data row_store;
            row_store.set("writes", writes);
            row_store.set("stored", stored);
            row_stores.push_back(row_store);
        };
        if (k.plan.output == result_kind::elements) {
            item.set("store_elements", flag(true));
            item.set("writes", k.plan.writes);
        } else {
            // A row value for later kernels is the first stage's (a max, maybe with its online
            // sum after it); the output is the last stage's.
            const std::string held = row_value_name(p.stages[row_value_out ? k.plan.stages.front() : k.plan.stages.back()]);
            store_row(row_value_out ? "kjit_row_" + k.plan.writes : k.plan.writes,
                      row_value_out ? held : "store(" + held + ")");
        }
        for (const auto& r : k.plan.also_writes) store_row("kjit_row_" + r, r);
        item.set("row_stores", row_stores);
        kernels.push_back(item);
        result.kernels.push_back(k.plan);
    }
    return kernels;
}

/// The rendered source without the blank lines that mustache leaves where a section renders
/// nothing: none inside a function body (none of the templates' own blank lines is inside
/// braces), and one at most between two definitions.
std::string with_tidy_blank_lines(const std::string& source) {
    std::string tidy;
    long depth = 0;
    std::size_t start = 0;
    bool after_blank = false;
    while (start < source.size()) {
        const std::size_t end = std::min(source.find('\n', start), source.size());
        const std::string_view line(source.data() + start, end - start);
        const bool blank = line.find_first_not_of(" \t") == std::string_view::npos;
        if (!(blank && (depth > 0 || after_blank))) tidy.append(line).push_back('\n');
        after_blank = blank;
        depth += std::count(line.begin(), line.end(), '{') - std::count(line.begin(), line.end(), '}');
        start = end + 1;
    }
    return tidy;
}

}  // namespace

generated_source generate(const config::pipeline& p, const template_set& templates) {
    generated_source result;
    result.vector_width = config::effective_vector_width(p);
    const expr::cuda_style style{config::computes_in_double(p.type), p.compile.fast_math};
    mu::data data = common_data(p, result, style);
    const bool rows = config::has_reductions(p);
    const std::string& text = rows ? templates.rows : templates.elementwise;
    const std::string file = rows ? "rows.cu.mustache" : "elementwise.cu.mustache";
    if (rows) {
        // A row kernel's shape is in its source: how many elements each thread holds.
        const long long items = config::row_items_per_thread(p);
        data.set("block", std::to_string(p.launch.block));
        data.set("launch_bounds", std::to_string(p.launch.block) + (p.launch.min_blocks_per_sm
                                                                        ? ", " + std::to_string(p.launch.min_blocks_per_sm)
                                                                        : std::string()));
        data.set("items", std::to_string(items));
        data.set("vectors_per_thread", std::to_string(items / result.vector_width));
        data.set("cluster", std::to_string(p.launch.cluster));
        data.set("clustered", flag(p.launch.cluster > 1));
        data.set("row_stride", std::to_string(p.launch.block * p.launch.cluster));
        data.set("loops", flag(config::rows_loop(p)));
        data.set("prefetch_rows", flag(config::rows_loop(p) && (p.launch.cache == config::launch_spec::row_cache::values ||
                                                                 p.launch.cache == config::launch_spec::row_cache::inputs)));
        const bool f64 = style.double_precision;
        data.set("infinity", f64 ? "__longlong_as_double(0x7ff0000000000000LL)" : "__int_as_float(0x7f800000)");
        data.set("fmax", f64 ? "fmax" : "fmaxf");
        data.set("fmin", f64 ? "fmin" : "fminf");
        // exp as the stages spell it, for the online sum's rescaling.
        const expr::function_info& exp = *expr::find_function("exp");
        data.set("exp", std::string(f64 ? exp.cuda_double : style.fast_math ? exp.cuda_fast : exp.cuda_float));
        data.set("shared_rows", flag(p.launch.cache == config::launch_spec::row_cache::shared));
        // cp.async copies 4, 8 or 16 bytes; only a 16-byte copy may bypass L1 (.cg).
        const int vector_bytes = result.vector_width * static_cast<int>(config::element_size(p.type));
        data.set("copy_async", flag(vector_bytes >= 4));
        data.set("streaming", flag(p.launch.streaming));
        data.set("copy_level", p.launch.streaming && vector_bytes == 16 ? "cg" : "ca");
        // __ldcs and __stcs take a built-in type: a vector is moved as words of up to 16 bytes.
        const int word_bytes = std::min(vector_bytes, 16);
        data.set("word", word_bytes == 16 ? "uint4" : word_bytes == 8 ? "uint2" : word_bytes == 4 ? "unsigned" : "unsigned short");
        data.set("words", std::to_string(vector_bytes / word_bytes));
        data.set("online_sums", flag(std::any_of(p.stages.begin(), p.stages.end(),
                                                 [](const config::stage& s) { return s.online_with.has_value(); })));
        data.set("kernels", row_kernels(p, result, style));
    } else {
        data.set("kernels", elementwise_kernels(p, result, style));
    }
    result.source = with_tidy_blank_lines(render(text, data, file, templates));
    // Mustache renders a mistyped placeholder as nothing: a template that lost a kernel's
    // definition is broken, and must not compile (and be cached) as an empty program.
    for (const auto& k : result.kernels)
        if (result.source.find("void " + k.name + "(") == std::string::npos)
            throw config_error(templates.origin + "/" + file, "",
                               "template error: the rendered source defines no kernel '" + k.name +
                                   "(' (a mistyped placeholder such as {{kernel} renders as nothing)");
    return result;
}

std::string copy_probe_source(const template_set& templates) {
    return render(templates.copy, mu::data{}, "copy.cu.mustache", templates);
}

}  // namespace kjit::codegen
