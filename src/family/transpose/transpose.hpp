// The transpose family: {"op": "transpose"} on a `shape` matrix, with the maps before it applied
// as each element is read and the maps after it as each is written, in one kernel that moves a
// tile at a time through shared memory.
#pragma once
#include "family/family.hpp"

namespace kjit::family {
[[nodiscard]] const family& transpose_family();
}
