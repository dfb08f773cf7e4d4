#include "report/trace.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <vector>

#include <nvtx3/nvToolsExt.h>

namespace kjit::trace {
namespace {

struct event {
    std::string name;
    clock::time_point begin, end;
    long tid;
    nlohmann::json args;
};

struct store {
    std::mutex mutex;
    std::vector<event> events;
    std::map<long, std::string> thread_names;
    nlohmann::json merged = nlohmann::json::array();  ///< other processes' events, as they were
};

std::atomic<bool> g_collecting{false};
std::optional<clock::time_point> g_main_entered;  // written once, before any other thread starts

store& the_store() {
    static store s;
    return s;
}

long thread_id() {
    thread_local const long id = static_cast<long>(::syscall(SYS_gettid));
    return id;
}

nvtxDomainHandle_t domain() {
    static const nvtxDomainHandle_t d = nvtxDomainCreateA("kjit");
    return d;
}

void push_range(const std::string& name) {
    nvtxEventAttributes_t attributes{};
    attributes.version = NVTX_VERSION;
    attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attributes.message.ascii = name.c_str();
    nvtxDomainRangePushEx(domain(), &attributes);
}

double microseconds(clock::time_point t) {
    return std::chrono::duration<double, std::micro>(t.time_since_epoch()).count();
}

void keep(event e) {
    if (!collecting()) return;
    store& s = the_store();
    const std::lock_guard lock(s.mutex);
    s.events.push_back(std::move(e));
}

}  // namespace

void start_collecting() { g_collecting = true; }

void stop_collecting() {
    g_collecting = false;
    store& s = the_store();
    const std::lock_guard lock(s.mutex);
    s.events.clear();
    s.merged = nlohmann::json::array();
}
bool collecting() { return g_collecting; }

void name_thread(const std::string& name) {
    store& s = the_store();
    const std::lock_guard lock(s.mutex);
    s.thread_names[thread_id()] = name;
}

span::span(std::string name, nlohmann::json args)
    : m_name(std::move(name)), m_args(std::move(args)), m_begin(clock::now()) {
    push_range(m_name);
}

span::~span() { end(); }

double span::end() {
    if (m_ms >= 0) return m_ms;
    const auto stop = clock::now();
    nvtxDomainRangePop(domain());
    m_ms = std::chrono::duration<double, std::milli>(stop - m_begin).count();
    keep({std::move(m_name), m_begin, stop, thread_id(), std::move(m_args)});
    return m_ms;
}

void span::note(const std::string& key, nlohmann::json value) {
    if (m_ms < 0) m_args[key] = std::move(value);
}

void add(const std::string& name, clock::time_point begin, clock::time_point end, nlohmann::json args) {
    keep({name, begin, end, thread_id(), std::move(args)});
}

void merge_file(const std::string& path) {
    std::ifstream in(path);
    const nlohmann::json other = nlohmann::json::parse(in, nullptr, false);
    if (!other.is_object() || !other.contains("traceEvents") || !other["traceEvents"].is_array()) return;
    store& s = the_store();
    const std::lock_guard lock(s.mutex);
    for (const auto& e : other["traceEvents"]) s.merged.push_back(e);
}

nlohmann::json to_json() {
    store& s = the_store();
    const std::lock_guard lock(s.mutex);
    const long pid = ::getpid();
    nlohmann::json events = nlohmann::json::array();
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", "kjit " + std::to_string(pid)}}}});
    for (const auto& [tid, name] : s.thread_names)
        events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}});
    for (const auto& e : s.events) {
        nlohmann::json out = {{"ph", "X"}, {"cat", "kjit"}, {"name", e.name}, {"pid", pid}, {"tid", e.tid},
                              {"ts", microseconds(e.begin)}, {"dur", microseconds(e.end) - microseconds(e.begin)}};
        if (!e.args.is_null()) out["args"] = e.args;
        events.push_back(std::move(out));
    }
    for (const auto& e : s.merged) events.push_back(e);
    return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

void mark_main_entered() { g_main_entered = clock::now(); }
std::optional<clock::time_point> main_entered() { return g_main_entered; }

std::optional<clock::time_point> spawned_at() {
    const char* text = std::getenv("KJIT_SPAWNED_NS");
    if (!text || !*text) return std::nullopt;
    char* end = nullptr;
    const long long ns = std::strtoll(text, &end, 10);
    if (*end != '\0' || ns <= 0) return std::nullopt;
    const clock::time_point at{std::chrono::duration_cast<clock::duration>(std::chrono::nanoseconds(ns))};
    if (at > clock::now()) return std::nullopt;  // not this machine's clock
    return at;
}

std::string spawn_stamp() {
    return std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch()).count());
}

}  // namespace kjit::trace
