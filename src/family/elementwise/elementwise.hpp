// The elementwise family: pipelines of maps over n elements (the seed's hidden layer), each
// element on its own, in grid-stride loops with vector loads.
#pragma once
#include "family/family.hpp"

namespace kjit::family {
[[nodiscard]] const family& elementwise_family();
}
