#include "family/rows/steps.hpp"

#include <algorithm>

#include "family/rows/element_calls.hpp"
#include "family/rows/geometry.hpp"

namespace kjit::family::rows {
namespace {

namespace mu = codegen::mu;
using config::pipeline;
using result_kind = chain_kernel::result;

/// A final reduce without a name still needs a variable to hold its value.
std::string row_value_name(const config::stage& s) { return s.as.empty() ? "kjit_result" : s.as; }

/// Step `i` as a reduce: its op and row value, and the online sum computed with it, if any.
void set_reduce(const step_context& c, std::size_t i, mu::data& step) {
    const config::stage& st = c.p.stages[i];
    const auto online = std::find_if(c.k.stages.begin(), c.k.stages.end(),
                                     [&](std::size_t later) { return c.p.stages[later].online_with == i; });
    const bool with_sum = online != c.k.stages.end();
    step.set("reduce", codegen::flag(true));
    step.set("online", codegen::flag(with_sum));
    // A mean is a sum divided by cols.
    const config::reduction how = st.reduce == config::reduction::mean ? config::reduction::sum : st.reduce;
    step.set("op", with_sum ? "online" : std::string(config::to_string(how)));
    step.set("mean", codegen::flag(st.reduce == config::reduction::mean));
    step.set("row_value", row_value_name(st));
    if (with_sum) {
        step.set("sum_index", std::to_string(*online));
        step.set("sum_value", row_value_name(c.p.stages[*online]));
    }
}

}  // namespace

bool step_context::by_element(const std::string& a) const { return misaligned && is_per_column_input(p, a); }

mu::data step_context::vector_loads(const std::vector<std::string>& arrays) const {
    mu::data list{mu::data::type::list};
    for (const auto& a : arrays) {
        if (by_element(a)) continue;
        mu::data load;
        load.set("array", a);
        load.set("at", is_per_column_input(p, a) ? a : a + " + kjit_base");
        list.push_back(load);
    }
    return list;
}

mu::data stage_step(const step_context& c, std::size_t i, flowing_value& flow) {
    const config::stage& st = c.p.stages[i];
    expr::used_names used;
    expr::collect_names(st.kernel, used);
    // The element function takes x, each array's element, the row values, the scalars, then the
    // positions it uses.
    std::vector<std::string> params{"real x"}, args;
    std::vector<std::string> site_arrays = flow.arrays;
    for (const auto& a : used.arrays) {
        params.push_back("real " + a);
        args.push_back(c.by_element(a) ? "load(" + a + "[kjit_column(kjit_v, kjit_k, kjit_lead, cols)])"
                                       : "load(kjit_v_" + a + ".e[kjit_k])");
        add_once(site_arrays, a);
    }
    add_names(used, c.style, c.misaligned, params, args);
    // Each stage's function is in one kernel's code only: its index names it. A call is on a
    // line indented by k_element_indent, or nested in a later stage's call.
    codegen::code call{"kjit_s" + std::to_string(i), {flow.value}, true};
    for (const auto& a : args) call.args.push_back({a});
    mu::data step;
    step.set("index", std::to_string(i));
    step.set("what", config::describe(st));
    step.set("code", expr::to_cuda(st.kernel, c.style));
    step.set("params", codegen::parameter_list(params));
    step.set("value", codegen::print(call, k_element_indent));
    step.set("arrays", c.vector_loads(site_arrays));
    if (st.reduce != config::reduction::none)
        set_reduce(c, i, step);
    else if (c.maps_at_use)
        flow = {call, site_arrays};
    else
        step.set("map", codegen::flag(true));
    return step;
}

void set_stores(const pipeline& p, const chain_kernel& k, mu::data& item) {
    mu::data row_stores{mu::data::type::list};
    const auto store_row = [&](const std::string& writes, const std::string& stored) {
        mu::data row_store;
        row_store.set("writes", writes);
        row_store.set("stored", stored);
        row_stores.push_back(row_store);
    };
    const bool row_value_out = k.output == result_kind::row_value;
    if (k.output == result_kind::elements) {
        item.set("store_elements", codegen::flag(true));
        item.set("writes", k.writes);
    } else {
        const std::string held = row_value_name(p.stages[row_value_out ? k.stages.front() : k.stages.back()]);
        store_row(row_value_out ? "kjit_row_" + k.writes : k.writes, row_value_out ? held : "store(" + held + ")");
    }
    for (const auto& r : k.also_writes) store_row("kjit_row_" + r, r);
    item.set("row_stores", row_stores);
}

}  // namespace kjit::family::rows
