#include "run/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kjit::run {

report::sample_stats summarize(std::vector<double> samples) {
    report::sample_stats s;
    s.count = samples.size();
    if (samples.empty()) return s;
    std::sort(samples.begin(), samples.end());
    const std::size_t mid = samples.size() / 2;
    s.median = samples.size() % 2 ? samples[mid] : (samples[mid - 1] + samples[mid]) / 2;
    s.min = samples.front();
    s.max = samples.back();
    s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
    double squares = 0;
    for (double x : samples) squares += (x - s.mean) * (x - s.mean);
    s.stdev = samples.size() > 1 ? std::sqrt(squares / static_cast<double>(samples.size() - 1)) : 0.0;
    return s;
}

long long grid_size(long long n, int block, int vector_width, std::optional<long long> explicit_grid,
                    long long resident_blocks) {
    if (explicit_grid) return *explicit_grid;
    const long long items = (n + vector_width - 1) / vector_width;  // vector loads plus the tail
    const long long one_pass = (items + block - 1) / block;
    return std::max(1LL, resident_blocks > 0 ? std::min(one_pass, resident_blocks) : one_pass);
}

}  // namespace kjit::run
