#include "report/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace kjit::report {

bool progress_wanted(int fd, bool quiet) { return !quiet && ::isatty(fd) == 1; }

progress_bar::progress_bar(std::ostream& out, std::size_t total, bool enabled)
    : m_out(out), m_total(total), m_enabled(enabled) {}

void progress_bar::stage(std::string name, std::size_t total) {
    const std::lock_guard lock(m_mutex);
    m_stage = std::move(name);
    m_total = total;
    m_done = 0;
    m_start = std::chrono::steady_clock::now();
}

void progress_bar::step(const std::string& label) {
    if (!m_enabled || m_total == 0) return;
    const std::lock_guard lock(m_mutex);
    ++m_done;
    constexpr std::size_t width = 30;
    const std::size_t filled = width * m_done / m_total;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
    const double eta = elapsed / static_cast<double>(m_done) * static_cast<double>(m_total - m_done);
    char times[48];
    std::snprintf(times, sizeof times, "%3.0f s, ETA %3.0f s", elapsed, eta);
    m_out << "\r\033[K" << (m_stage.empty() ? "" : m_stage + " ") << "[" << std::string(filled, '=')
          << std::string(width - filled, ' ') << "] " << m_done << "/" << m_total << "  " << times << "  " << label.substr(0, 50)
          << std::flush;
}

void progress_bar::compiled(std::size_t done, std::size_t total, const std::string& label) {
    if (done == 0) stage("compile", total);
    else step(label);
}

void progress_bar::finish() {
    if (m_enabled) m_out << "\r\033[K" << std::flush;
}

}  // namespace kjit::report
