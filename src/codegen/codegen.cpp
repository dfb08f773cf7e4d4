#include "codegen/codegen.hpp"

#include <algorithm>
#include <charconv>

#include <kainjow/mustache.hpp>

#include "util/embedded.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

namespace kjit::codegen {
namespace {

namespace mu = kainjow::mustache;
using config::op_kind;

std::string real_literal(double value) {
    char text[32];
    const auto result = std::to_chars(text, text + sizeof text, value);  // shortest round-trip form
    return "(real)" + std::string(text, result.ptr);
}

std::string stage_call(const config::stage& s) {
    switch (s.op) {
        case op_kind::normalize: return "op_normalize(x, " + real_literal(s.scale) + ")";
        case op_kind::weigh: return "op_weigh(x, " + s.by + ")";
        case op_kind::activate:
            return s.formula == config::tanh_formula::builtin ? "op_tanh_builtin(x)" : "op_tanh_exp(x)";
    }
    return {};
}

/// A kernel over stages [first, last): what it reads and how its element function chains them.
struct kernel_model {
    kernel_plan plan;
    std::string first_value;
    std::vector<std::size_t> stages;
};

void add_read(kernel_plan& plan, const std::string& buffer) {
    if (std::find(plan.reads.begin(), plan.reads.end(), buffer) == plan.reads.end())
        plan.reads.push_back(buffer);
}

std::vector<kernel_model> plan_kernels(const config::pipeline& p, std::vector<std::string>& temporaries) {
    std::vector<kernel_model> kernels;
    if (p.fuse == config::fusion::fused) {
        kernel_model k;
        k.plan.name = p.name + "_fused";
        k.plan.writes = k_output_buffer;
        k.first_value = p.stages.front().input;
        add_read(k.plan, k.first_value);
        for (std::size_t i = 0; i < p.stages.size(); ++i) {
            if (p.stages[i].op == op_kind::weigh) add_read(k.plan, p.stages[i].by);
            k.stages.push_back(i);
            k.plan.what += (i ? " → " : "") + std::string(config::to_string(p.stages[i].op));
        }
        k.plan.what += ", fused into one kernel";
        kernels.push_back(std::move(k));
        return kernels;
    }
    // Separate: one kernel per stage, each writing an intermediate array that the next one reads,
    // the shape of the seed's three @vectorize functions.
    std::string previous = p.stages.front().input;
    for (std::size_t i = 0; i < p.stages.size(); ++i) {
        const auto& s = p.stages[i];
        kernel_model k;
        k.plan.name = p.name + "_s" + std::to_string(i) + "_" + std::string(config::to_string(s.op));
        const bool last = i + 1 == p.stages.size();
        k.plan.writes = last ? k_output_buffer : "tmp" + std::to_string(i);
        if (!last) temporaries.push_back(k.plan.writes);
        k.first_value = previous;
        add_read(k.plan, previous);
        if (s.op == op_kind::weigh) add_read(k.plan, s.by);
        k.stages.push_back(i);
        k.plan.what = "stages[" + std::to_string(i) + "]: " + std::string(config::to_string(s.op)) +
                      ", one kernel of " + std::to_string(p.stages.size());
        previous = k.plan.writes;
        kernels.push_back(std::move(k));
    }
    return kernels;
}

mu::data list_of(const std::vector<std::string>& names, const char* key) {
    mu::data list{mu::data::type::list};
    for (std::size_t i = 0; i < names.size(); ++i) {
        mu::data item;
        item.set(key, names[i]);
        item.set("last", i + 1 == names.size() ? mu::data::type::bool_true : mu::data::type::bool_false);
        list.push_back(item);
    }
    return list;
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
    return {read("elementwise.cu.mustache"), read("copy.cu.mustache"), dir.string()};
}

generated_source generate(const config::pipeline& p, const template_set& templates) {
    generated_source result;
    result.vector_width = config::effective_vector_width(p);
    const bool f32 = p.type == config::dtype::float32;
    auto uses = [&](op_kind op, config::tanh_formula formula) {
        return std::any_of(p.stages.begin(), p.stages.end(), [&](const config::stage& s) {
            return s.op == op && (op != op_kind::activate || s.formula == formula);
        });
    };

    mu::data data;
    data.set("name", p.name);
    // Not variant_label: launch settings must not change the source, or every block size in a
    // sweep would be compiled (and cached) again.
    data.set("label", std::string(config::to_string(p.fuse)) + ", " + std::string(config::to_string(p.type)) +
                          ", vector width " + std::to_string(result.vector_width));
    data.set("real", f32 ? "float" : "double");
    data.set("tanh", f32 ? "tanhf" : "tanh");
    data.set("exp", f32 ? "expf" : "exp");
    data.set("width", std::to_string(result.vector_width));
    data.set("vector_bytes", std::to_string(result.vector_width * config::element_size(p.type)));
    data.set("vectorized", flag(result.vector_width > 1));
    data.set("use_normalize", flag(uses(op_kind::normalize, {})));
    data.set("use_weigh", flag(uses(op_kind::weigh, {})));
    data.set("use_tanh_builtin", flag(uses(op_kind::activate, config::tanh_formula::builtin)));
    data.set("use_tanh_exp", flag(uses(op_kind::activate, config::tanh_formula::exp)));

    mu::data kernels{mu::data::type::list};
    for (const auto& k : plan_kernels(p, result.temporaries)) {
        mu::data item;
        item.set("kernel", k.plan.name);
        item.set("what", k.plan.what);
        item.set("first", k.first_value);
        item.set("params", list_of(k.plan.reads, "param"));
        mu::data steps{mu::data::type::list};
        for (std::size_t i : k.stages) {
            mu::data step;
            step.set("index", std::to_string(i));
            step.set("op", std::string(config::to_string(p.stages[i].op)));
            step.set("call", stage_call(p.stages[i]));
            steps.push_back(step);
        }
        item.set("steps", steps);
        kernels.push_back(item);
        result.kernels.push_back(k.plan);
    }
    data.set("kernels", kernels);
    result.source = render(templates.elementwise, data, "elementwise.cu.mustache", templates);
    return result;
}

std::string copy_probe_source(const template_set& templates) {
    return render(templates.copy, mu::data{}, "copy.cu.mustache", templates);
}

}  // namespace kjit::codegen
