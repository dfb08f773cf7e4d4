// The float64 evaluation of an expression tree, for the reference: values, and for each element
// an error scale, a first-order bound on how much the rounding of a float computation of the same
// tree may move the result, in units of the compute type's rounding (see README "verification").
#pragma once
#include <cstddef>
#include <map>
#include <string>

#include "expr/expr.hpp"

namespace kjit::expr {

/// A row's value made by a reduce stage, and its error scale (as an element's).
struct row_value {
    double value = 0;
    double scale = 0;
};

/// Where a chunk's elements are, for the position names: the first one's index in the array, and
/// the sizes (rows and cols 0 for an array without a shape); element i of the chunk is at first +
/// i · stride (a stride past 1: a sample of a row, every stride-th element); in an attention
/// score, the head and batch of its query.
struct positions {
    long long first = 0;
    long long rows = 0, cols = 0, n = 0;
    long long stride = 1;
    long long head = 0, batch = 0;
};

/// Where the names of a tree get their values, for one run of `count` consecutive elements (of
/// one row, where the tree uses row values).
struct chunk {
    std::size_t count = 0;
    const double* flowing = nullptr;        ///< x
    const double* flowing_scale = nullptr;  ///< x's error scale
    /// input name → its elements; a token read's text ("doc[col]") → its value at each element
    const std::map<std::string, const double*>* arrays = nullptr;
    const std::map<std::string, double>* scalars = nullptr;
    bool float_compute = true;  ///< literals and scalars not exact in float add a rounding
    const std::map<std::string, row_value>* rows = nullptr;  ///< the row's values from reduce stages
    const positions* at = nullptr;  ///< where the elements are
    approximations approximated{};  ///< the kernel's __tanhf and __expf (config::approximations_of)
};

/// Writes `count` values and error scales; either may be nullptr (without scales, no partial
/// derivative is computed). Pure; thread-safe.
void evaluate(const tree& t, const chunk& in, double* values, double* scales);

}  // namespace kjit::expr
