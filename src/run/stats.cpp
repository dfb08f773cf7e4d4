#include "run/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kjit::run {
namespace {
double median_of_sorted(const std::vector<double>& sorted) {
    const std::size_t mid = sorted.size() / 2;
    return sorted.size() % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
}  // namespace

report::sample_stats summarize(std::vector<double> samples) {
    report::sample_stats s;
    s.count = samples.size();
    if (samples.empty()) return s;
    std::sort(samples.begin(), samples.end());
    s.median = median_of_sorted(samples);
    s.min = samples.front();
    s.max = samples.back();
    s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
    double squares = 0;
    for (double x : samples) squares += (x - s.mean) * (x - s.mean);
    s.stdev = samples.size() > 1 ? std::sqrt(squares / static_cast<double>(samples.size() - 1)) : 0.0;
    return s;
}

double median_relative_error(std::vector<double> samples) {
    if (samples.size() < 2) return 0;
    std::sort(samples.begin(), samples.end());
    const double median = median_of_sorted(samples);
    if (median <= 0) return 0;
    for (double& x : samples) x = std::fabs(x - median);
    std::sort(samples.begin(), samples.end());
    const double sigma = 1.4826 * median_of_sorted(samples);  // MAD → standard deviation of a normal
    return 1.2533 * sigma / std::sqrt(static_cast<double>(samples.size())) / median;
}

std::vector<std::string> state_warnings(const report::device_state& before, const report::device_state& after) {
    std::vector<std::string> warnings;
    const auto moved = [&](const char* what, const std::optional<int>& a, const std::optional<int>& b) {
        if (a && b && *a > 0 && std::abs(*b - *a) > 0.02 * *a)
            warnings.push_back(std::string(what) + " moved from " + std::to_string(*a) + " to " + std::to_string(*b) +
                               " MHz during the timed loops");
    };
    moved("SM clock", before.sm_clock_mhz, after.sm_clock_mhz);
    moved("memory clock", before.memory_clock_mhz, after.memory_clock_mhz);
    for (const auto* state : {&before, &after}) {
        const std::string slowdowns = state->clock_limits ? report::slowdown_names(*state->clock_limits) : "";
        if (!slowdowns.empty())
            warnings.push_back("clocks held down (" + slowdowns + ") " + (state == &before ? "before" : "after") +
                               " the timed loops");
    }
    return warnings;
}

long long grid_size(long long n, int block, int vector_width, std::optional<long long> explicit_grid,
                    long long resident_blocks) {
    if (explicit_grid) return *explicit_grid;
    const long long items = (n + vector_width - 1) / vector_width;  // vector loads plus the tail
    const long long one_pass = (items + block - 1) / block;
    return std::max(1LL, resident_blocks > 0 ? std::min(one_pass, resident_blocks) : one_pass);
}

}  // namespace kjit::run
