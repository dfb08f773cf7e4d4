#include "util/parallel.hpp"

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>

namespace kjit::detail {
namespace {

/// One call's ranges, each taken by whoever is free first: the caller, or a helper.
struct job {
    std::size_t ranges;
    void (*range)(void*, std::size_t);
    void* context;  ///< on the caller's stack: touched only for a range taken, before the caller returns
    std::atomic<std::size_t> next{0};
    std::mutex mutex;
    std::condition_variable finished;
    std::size_t done = 0;  ///< ranges returned (guarded by mutex)
    std::exception_ptr failure;

    job(std::size_t count, void (*body)(void*, std::size_t), void* ctx) : ranges(count), range(body), context(ctx) {}

    /// Takes and runs ranges until none is left.
    void work() {
        for (std::size_t r = next.fetch_add(1); r < ranges; r = next.fetch_add(1)) {
            std::exception_ptr thrown;
            try {
                range(context, r);
            } catch (...) {
                thrown = std::current_exception();
            }
            const std::lock_guard lock(mutex);
            if (thrown && !failure) failure = thrown;
            if (++done == ranges) finished.notify_all();
        }
    }
};

/// Helper threads, started on first use and kept for the process. Each waits for a job, works on
/// it until its ranges are taken, and waits again. A job offered to helpers that are all busy
/// is done by its caller alone; one a helper finds finished costs it a fetch_add.
class pool {
public:
    explicit pool(std::size_t helpers) {
        for (std::size_t i = 0; i < helpers; ++i) std::thread([this] { serve(); }).detach();
    }

    void offer(const std::shared_ptr<job>& j, std::size_t helpers) {
        {
            const std::lock_guard lock(m_mutex);
            for (std::size_t i = 0; i < helpers; ++i) m_queue.push_back(j);
        }
        for (std::size_t i = 0; i < helpers; ++i) m_wake.notify_one();
    }

private:
    [[noreturn]] void serve() {
        for (;;) {
            std::shared_ptr<job> j;
            {
                std::unique_lock lock(m_mutex);
                m_wake.wait(lock, [&] { return !m_queue.empty(); });
                j = std::move(m_queue.front());
                m_queue.pop_front();
            }
            j->work();
        }
    }

    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::deque<std::shared_ptr<job>> m_queue;
};

/// A child process forked from this one has the pool's memory but none of its threads (and
/// maybe a mutex a helper held): there, callers do their ranges alone.
std::atomic<bool> g_forked{false};

/// The pool, never destroyed: its helpers wait until the process ends (destroying it at exit
/// would race with a thread still calling parallel_ranges).
pool* shared_pool() {
    static pool* const instance = [] {
        pthread_atfork(nullptr, nullptr, [] { g_forked = true; });
        return new pool(std::max(1u, std::thread::hardware_concurrency()) - 1);
    }();
    return instance;
}

}  // namespace

void run_ranges(std::size_t ranges, void (*range)(void* context, std::size_t r), void* context) {
    const auto j = std::make_shared<job>(ranges, range, context);
    if (!g_forked && ranges > 1) shared_pool()->offer(j, ranges - 1);
    j->work();
    std::unique_lock lock(j->mutex);
    j->finished.wait(lock, [&] { return j->done == j->ranges; });
    if (j->failure) std::rethrow_exception(j->failure);
}

}  // namespace kjit::detail
