// Checks more than one family makes of a pipeline, each written once.
#pragma once
#include <string>

#include "config/config.hpp"
#include "util/error.hpp"

namespace kjit::family {

/// A per-column input (one value per column, the same for every row) belongs to row pipelines.
inline void refuse_per_column_inputs(const config::pipeline& p, const std::string& source) {
    for (const auto& in : p.inputs)
        if (in.per_column)
            throw config_error(source, "inputs." + in.name + ".per",
                               "\"column\" is for row pipelines: the config needs \"shape\": [rows, cols] and a reduce stage");
}

/// An input with a shape of its own is the matrix a matmul multiplies by.
inline void refuse_shaped_inputs(const config::pipeline& p, const std::string& source) {
    for (const auto& in : p.inputs)
        if (!in.dims.empty())
            throw config_error(source, "inputs." + in.name + ".shape",
                               "a shape of its own is for the matrix a matmul multiplies by ({\"op\": \"matmul\", \"by\": \"" +
                                   in.name + "\"}); the pipeline's arrays have its \"n\" or \"shape\"");
}

}  // namespace kjit::family
