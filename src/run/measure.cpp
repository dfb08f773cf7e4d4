#include "run/measure.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "run/stats.hpp"
#include "run/timed.hpp"

namespace kjit::run {

using detail::number;
using detail::timed;
using report::phase;

int chains_per_batch(double cold_median_ms, int repeat) {
    if (!(cold_median_ms > 0)) return repeat;
    return static_cast<int>(std::clamp(std::ceil(k_batch_ms / cold_median_ms), 1.0, static_cast<double>(repeat)));
}

namespace {
/// Samples of one chain, L2 flushed before each: at least m.repeat, then more until the median's
/// relative standard error is within m.noise or m.max_ms of sampling is spent. The error is
/// re-estimated every tenth of the samples so far (a sort each time), not after every sample.
std::vector<double> cold_samples(gpu& device, const std::function<void()>& chain, const config::measure_spec& m) {
    constexpr std::size_t k_most = 100000;
    const auto start = std::chrono::steady_clock::now();
    std::vector<double> samples;
    std::size_t next_check = static_cast<std::size_t>(m.repeat);
    for (;;) {
        device.flush_l2();
        samples.push_back(device.time_ms(chain));
        if (samples.size() < next_check) continue;
        if (samples.size() >= k_most || median_relative_error(samples) <= m.noise) break;
        if (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() >= m.max_ms) break;
        next_check = samples.size() + std::max<std::size_t>(1, samples.size() / 10);
    }
    return samples;
}

/// Kernel timing of one chain of launches, after `warmup` untimed chains. Cold: L2 flushed before
/// each sample (see cold_samples), events around one chain. Batch: events around
/// chains_per_batch back-to-back chains, total / chains, k_batches times. Graph: the same chains
/// captured once in a CUDA graph and replayed k_batches times; a replay has no CPU launch gaps, so
/// batch − graph is the launch overhead.
}  // namespace

void measure_kernel(gpu& device, const std::function<void()>& chain, const config::measure_spec& m,
                    report::record& rec) {
    int chains = m.repeat;
    const auto repeat_chain = [&] {
        for (int i = 0; i < chains; ++i) chain();
    };
    trace::span all("timed_launches");
    try {
        for (int i = 0; i < m.warmup; ++i) chain();
        device.synchronize();
        rec.state_before = device.read_state();
        trace::span cold_loop("cold loop");
        std::vector<double> cold = cold_samples(device, chain, m), batch;
        cold_loop.note("samples", cold.size());
        cold_loop.end();
        rec.kernel_cold_noise = median_relative_error(cold);
        if (*rec.kernel_cold_noise > m.noise)
            rec.warnings.push_back("cold median noise " + number(100 * *rec.kernel_cold_noise) + " % after " +
                                   std::to_string(cold.size()) + " samples in measure.max_ms = " + number(m.max_ms) +
                                   " ms; the target was " + number(100 * m.noise) + " %");
        rec.kernel_cold = summarize(std::move(cold));
        chains = chains_per_batch(rec.kernel_cold->median, m.repeat);
        trace::span batch_loop("batch loop", {{"chains_per_batch", chains}});
        for (int b = 0; b < k_batches; ++b) batch.push_back(device.time_ms(repeat_chain) / chains);
        batch_loop.end();
        rec.kernel_batch = summarize(std::move(batch));
    } catch (const error& e) {
        throw error(e.kind(), std::string("timed launches: ") + e.what());
    }
    auto graph = timed(rec, phase::graph_build, [&] { return device.capture_graph(repeat_chain); });
    try {
        trace::span replay_loop("graph replays");
        std::vector<double> replays;
        for (int b = 0; b < k_batches; ++b) replays.push_back(device.time_graph_ms(*graph) / chains);
        rec.kernel_graph = summarize(std::move(replays));
        trace::span release("release graph");  // built for these loops: its release is theirs too
        graph.reset();
    } catch (const error& e) {
        throw error(e.kind(), std::string("graph launches: ") + e.what());
    }
    rec.state_after = device.read_state();
    rec.set(phase::timed_launches, all.end() - *rec.get(phase::graph_build));
    for (auto& warning : state_warnings(rec.state_before, rec.state_after)) rec.warnings.push_back(std::move(warning));
}

}  // namespace kjit::run
