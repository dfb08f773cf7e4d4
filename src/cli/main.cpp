#include <iostream>

#include "cli/cli.hpp"
#include "report/trace.hpp"
#include "util/interrupt.hpp"

int main(int argc, char** argv) {
    kjit::trace::mark_main_entered();  // first: the setup phase and the trace start here
    kjit::watch_for_interrupts();      // before any thread starts, so every thread blocks the signals
    return static_cast<int>(kjit::cli::run(argc, argv, std::cout, std::cerr));
}
