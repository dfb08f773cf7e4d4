#include <iostream>

#include "cli/cli.hpp"

int main(int argc, char** argv) { return static_cast<int>(kjit::cli::run(argc, argv, std::cout, std::cerr)); }
