// What the families' host models (family::host_op) share.
#include "family/family.hpp"

namespace kjit::family {

std::vector<double> host_values(config::dtype type, const std::vector<unsigned char>& bytes) {
    std::vector<double> values(bytes.size() / config::element_size(type));
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = reference::get_element(type, bytes.data(), i);
    return values;
}

}  // namespace kjit::family
