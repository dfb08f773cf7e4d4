// The float64 evaluation of an expression tree, for the reference: values, and for each element
// an error scale, a first-order bound on how much the rounding of a float computation of the same
// tree may move the result, in units of the compute type's rounding (see README "verification").
#pragma once
#include <cstddef>
#include <map>
#include <string>

#include "expr/expr.hpp"

namespace kjit::expr {

/// Where the names of a tree get their values, for one run of `count` consecutive elements.
struct chunk {
    std::size_t count = 0;
    const double* flowing = nullptr;        ///< x
    const double* flowing_scale = nullptr;  ///< x's error scale
    const std::map<std::string, const double*>* arrays = nullptr;  ///< input name → its elements
    const std::map<std::string, double>* scalars = nullptr;
    bool float_compute = true;  ///< literals and scalars not exact in float add a rounding
};

/// Writes `count` values and error scales; either may be nullptr (without scales, no partial
/// derivative is computed). Pure; thread-safe.
void evaluate(const tree& t, const chunk& in, double* values, double* scales);

}  // namespace kjit::expr
