#include <iostream>

#include "cli/cli.hpp"
#include "report/trace.hpp"

int main(int argc, char** argv) {
    kjit::trace::mark_main_entered();  // first: the setup phase and the trace start here
    return static_cast<int>(kjit::cli::run(argc, argv, std::cout, std::cerr));
}
