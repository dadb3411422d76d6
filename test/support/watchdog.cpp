// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// watchdog: the thread behind watchdog.hpp (armed by run_catch_session):
// the stall clock, the SIGTERM hook and the per-thread stack writer.
//
// Stall clock. The thread wakes once a second (poll() on a self-pipe, so a
// SIGTERM wakes it at once) and compares the progress counter with what it
// saw before; unchanged for the stall limit, it writes the dump and calls
// std::abort(): Catch2 names the test that died, Meson shows FAIL.
//
// Stacks. For each thread of /proc/self/task the watchdog sends SIGURG and
// waits (at most half a second) for the thread's handler to record its
// return addresses with backtrace(); the watchdog then names them with
// dladdr() and, for the test binary's own frames, one addr2line run
// (file:line where the build has line tables). The handler only calls
// backtrace(), which the arming warms up so that libgcc is loaded before
// any signal, and stores to atomics and a plain array that the watchdog
// reads after the release store of `done`.
//
// Thread safety: arm/disarm from the main thread, once each.
// Blocking/allocation: the watchdog thread allocates nothing while it
//                watches (a test may be counting allocations); a dump does.
// See also:      test/support/watchdog.hpp.

#include "watchdog.hpp"

#include <causal/config.hpp>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <cxxabi.h>
#include <dirent.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#define CAUSAL_TEST_WATCHDOG_STACKS 1
#else
#define CAUSAL_TEST_WATCHDOG_STACKS 0
#endif

namespace causal::test {
namespace {

// The stall limit's factor: the CI's --timeout-multiplier for the build.
constexpr int sanitizer_factor = CAUSAL_HAS_TSAN() ? 5 : CAUSAL_HAS_ASAN() ? 3 : 1;

/// The stall limit in milliseconds (0: off): CAUSAL_TEST_STALL_SECONDS
/// (a decimal number, taken as given), else 60 s times the sanitizer factor.
long long stall_limit_ms() {
  if (const char* env = std::getenv("CAUSAL_TEST_STALL_SECONDS"); env != nullptr && *env != '\0') {
    const double seconds = std::strtod(env, nullptr);
    return seconds <= 0 ? 0 : static_cast<long long>(seconds * 1000.0);
  }
  return 60'000LL * sanitizer_factor;
}

struct dog {
  std::thread thread;
  std::atomic<bool> stop{false};
  int pipe_read = -1;
  int pipe_write = -1;
  long long limit_ms = 0;
  struct sigaction old_term {};
  bool term_hooked = false;
};
dog the_dog;

//===-- stacks --===//

#if CAUSAL_TEST_WATCHDOG_STACKS

constexpr int max_frames = 48;

/// One request at a time: the watchdog names a thread, signals it, and
/// the thread's handler fills in the frames and the interrupted program
/// counter (where the thread was: the frames before it are the handler's
/// own, the kernel's trampoline and, under a sanitizer, its interposer).
struct stack_request {
  std::atomic<pid_t> tid{0};
  std::atomic<bool> done{false};
  int depth = 0;
  void* pc = nullptr;
  void* frames[max_frames] = {};
};
stack_request request;

pid_t current_tid() noexcept { return static_cast<pid_t>(::syscall(SYS_gettid)); }

void on_stack_signal(int, siginfo_t*, void* context) {
  const int saved_errno = errno;
  if (request.tid.load(std::memory_order_acquire) == current_tid() &&
      !request.done.load(std::memory_order_relaxed)) {
    request.depth = ::backtrace(request.frames, max_frames);
#if defined(__x86_64__)
    const auto* uc = static_cast<const ucontext_t*>(context);
    request.pc = reinterpret_cast<void*>(uc->uc_mcontext.gregs[REG_RIP]);
#else
    (void)context;
    request.pc = nullptr;
#endif
    // release: the frames before the watchdog's acquire load of done.
    request.done.store(true, std::memory_order_release);
  }
  errno = saved_errno;
}

std::string thread_name(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/self/task/%d/comm", static_cast<int>(tid));
  std::string name;
  if (std::FILE* f = std::fopen(path, "r"); f != nullptr) {
    char buf[64] = {};
    if (std::fgets(buf, sizeof(buf), f) != nullptr) name = buf;
    std::fclose(f);
  }
  while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) name.pop_back();
  return name;
}

std::string self_exe() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return {};
  buf[n] = '\0';
  return buf;
}

/// Names of `count` offsets into the test binary, from addr2line (empty
/// strings where it is not installed or says nothing).
std::vector<std::string> addr2line(const std::string& exe, const std::vector<std::uintptr_t>& offsets) {
  std::vector<std::string> names(offsets.size());
  if (offsets.empty() || exe.empty()) return names;
  std::string command = "addr2line -C -f -p -e '" + exe + "'";
  for (std::uintptr_t o : offsets) {
    char hex[32];
    std::snprintf(hex, sizeof(hex), " 0x%" PRIxPTR, o);
    command += hex;
  }
  command += " 2>/dev/null";
  std::FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return names;
  char line[2048];
  for (std::size_t i = 0; i < names.size() && std::fgets(line, sizeof(line), pipe) != nullptr; ++i) {
    std::string s = line;
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    if (s.rfind("??", 0) != 0) names[i] = s;
  }
  ::pclose(pipe);
  return names;
}

struct captured_stack {
  pid_t tid = 0;
  std::string name;
  int depth = -1;  // -1: the thread did not answer
  int first = 0;   // the first frame of the thread's own code
  void* frames[max_frames] = {};
};

void write_stacks(std::ostream& out) {
  const pid_t self = current_tid();
  std::vector<pid_t> tids;
  if (DIR* dir = ::opendir("/proc/self/task"); dir != nullptr) {
    while (const dirent* e = ::readdir(dir)) {
      if (e->d_name[0] == '.') continue;
      tids.push_back(static_cast<pid_t>(std::atoi(e->d_name)));
    }
    ::closedir(dir);
  }
  std::sort(tids.begin(), tids.end());
  std::vector<captured_stack> stacks;
  for (pid_t tid : tids) {
    captured_stack c;
    c.tid = tid;
    c.name = thread_name(tid);
    if (tid == self) {
      c.depth = ::backtrace(c.frames, max_frames);
      c.first = std::min(c.depth, 1);  // write_stacks itself
    } else {
      request.done.store(false, std::memory_order_relaxed);
      request.tid.store(tid, std::memory_order_release);
      if (::syscall(SYS_tgkill, ::getpid(), tid, SIGURG) == 0) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
        while (!request.done.load(std::memory_order_acquire) &&
               std::chrono::steady_clock::now() < until) {
          std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
      }
      if (request.done.load(std::memory_order_acquire)) {
        c.depth = request.depth;
        std::copy(request.frames, request.frames + max_frames, c.frames);
        // Start at the interrupted program counter; without it (or if the
        // unwinder did not reach it) show everything.
        for (int f = 0; f < c.depth && request.pc != nullptr; ++f) {
          if (c.frames[f] == request.pc) {
            c.first = f;
            break;
          }
        }
      }
      request.tid.store(0, std::memory_order_release);
    }
    stacks.push_back(c);
  }
  // Name the frames: dladdr for exported symbols, addr2line for the rest
  // of the test binary (return addresses minus one: the call, not the
  // instruction after it).
  const std::string exe = self_exe();
  // The test binary's load address: where this very function lives (the
  // watchdog is linked into every test binary, statically).
  Dl_info self_info{};
  const void* exe_base = ::dladdr(reinterpret_cast<void*>(&write_stacks), &self_info) != 0
                             ? self_info.dli_fbase
                             : nullptr;
  std::vector<std::uintptr_t> offsets;
  std::vector<std::pair<std::size_t, int>> where;
  std::vector<std::vector<std::string>> names(stacks.size());
  for (std::size_t s = 0; s < stacks.size(); ++s) {
    const captured_stack& c = stacks[s];
    names[s].resize(static_cast<std::size_t>(std::max(c.depth, 0)));
    for (int f = 0; f < c.depth; ++f) {
      // A return address names the instruction after the call: look up
      // the call. The first frame is where the thread is, not a return.
      const auto address = reinterpret_cast<std::uintptr_t>(c.frames[f]) - (f == c.first ? 0 : 1);
      Dl_info info{};
      std::string text;
      if (::dladdr(reinterpret_cast<void*>(address), &info) != 0 && info.dli_fname != nullptr) {
        const std::string module = info.dli_fname;
        const auto base = reinterpret_cast<std::uintptr_t>(info.dli_fbase);
        if (info.dli_sname != nullptr) {
          int status = 0;
          char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
          text = status == 0 && demangled != nullptr ? demangled : info.dli_sname;
          std::free(demangled);
          text += " (" + module.substr(module.find_last_of('/') + 1) + ")";
        } else if (info.dli_fbase == exe_base) {
          offsets.push_back(address - base);
          where.emplace_back(s, f);
        } else {
          char hex[64];
          std::snprintf(hex, sizeof(hex), "+0x%" PRIxPTR, address - base);
          text = module + hex;
        }
      }
      names[s][static_cast<std::size_t>(f)] = text;
    }
  }
  const std::vector<std::string> resolved = addr2line(exe, offsets);
  for (std::size_t k = 0; k < where.size(); ++k) {
    std::string& text = names[where[k].first][static_cast<std::size_t>(where[k].second)];
    char hex[64];
    std::snprintf(hex, sizeof(hex), "+0x%" PRIxPTR, offsets[k]);
    text = resolved[k].empty() ? exe.substr(exe.find_last_of('/') + 1) + hex : resolved[k];
  }
  out << "-- threads (" << stacks.size() << "):\n";
  for (std::size_t s = 0; s < stacks.size(); ++s) {
    const captured_stack& c = stacks[s];
    out << "thread " << c.tid << " \"" << c.name << "\"" << (c.tid == self ? " (this dump)" : "")
        << ":\n";
    if (c.depth < 0) {
      out << "  (no answer to SIGURG)\n";
      continue;
    }
    const int skip = c.first;
    for (int f = skip; f < c.depth; ++f) {
      out << "  #" << (f - skip) << " " << c.frames[f] << " "
          << names[s][static_cast<std::size_t>(f)] << "\n";
    }
  }
  out << std::flush;
}

void install_stack_writer() {
  // Load libgcc's unwinder now, not inside the first signal handler.
  void* warm[4];
  (void)::backtrace(warm, 4);
  struct sigaction sa {};
  sa.sa_sigaction = &on_stack_signal;
  sigemptyset(&sa.sa_mask);
  // SA_RESTART: an interrupted read/write/wait in the test resumes.
  sa.sa_flags = SA_RESTART | SA_SIGINFO;
  if (::sigaction(SIGURG, &sa, nullptr) == 0) {
    detail::stack_writer.store(&write_stacks, std::memory_order_release);
  }
}

#endif  // CAUSAL_TEST_WATCHDOG_STACKS

//===-- SIGTERM --===//

void on_terminate_signal(int) {
  const int saved_errno = errno;
  const char byte = 'T';
  if (the_dog.pipe_write >= 0) (void)!::write(the_dog.pipe_write, &byte, 1);
  errno = saved_errno;
}

[[noreturn]] void die_by_sigterm() {
  ::sigaction(SIGTERM, &the_dog.old_term, nullptr);
  std::raise(SIGTERM);
  // Someone else's handler swallowed it (Catch2's hands it back to ours
  // while a test case runs): end anyway, with the status a shell would use.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::_Exit(128 + SIGTERM);
}

//===-- the thread --===//

void watch_loop() {
  std::uint64_t seen = detail::progress_events.load(std::memory_order_relaxed);
  auto last_change = std::chrono::steady_clock::now();
  for (;;) {
    bool terminated = false;
#if defined(__linux__)
    pollfd fd{the_dog.pipe_read, POLLIN, 0};
    const int ready = ::poll(&fd, 1, 1000);
    if (ready > 0 && (fd.revents & POLLIN) != 0) {
      char byte = 0;
      terminated = ::read(the_dog.pipe_read, &byte, 1) == 1 && byte == 'T';
    }
#else
    std::this_thread::sleep_for(std::chrono::seconds(1));
#endif
    if (the_dog.stop.load(std::memory_order_acquire)) return;
    if (terminated) {
      dump_state("terminated by SIGTERM (a test runner's timeout?)");
      die_by_sigterm();
    }
    const std::uint64_t now_seen = detail::progress_events.load(std::memory_order_relaxed);
    const auto now = std::chrono::steady_clock::now();
    if (now_seen != seen) {
      seen = now_seen;
      last_change = now;
      continue;
    }
    const auto stalled =
        std::chrono::duration_cast<std::chrono::milliseconds>(now - last_change).count();
    if (stalled >= the_dog.limit_ms) {
      char reason[160];
      std::snprintf(reason, sizeof(reason),
                    "no progress for %.1f s (stall limit; CAUSAL_TEST_STALL_SECONDS sets it)",
                    static_cast<double>(stalled) / 1000.0);
      dump_state(reason);
      std::fprintf(stderr, "causal test watchdog: aborting the stalled test\n");
      std::fflush(stderr);
      std::abort();
    }
  }
}

}  // namespace

void arm_watchdog() noexcept {
  the_dog.limit_ms = stall_limit_ms();
  if (the_dog.limit_ms == 0) return;
#if CAUSAL_TEST_WATCHDOG_STACKS
  install_stack_writer();
#endif
#if defined(__linux__)
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return;
  the_dog.pipe_read = fds[0];
  the_dog.pipe_write = fds[1];
  // Hook SIGTERM only where nobody else has.
  struct sigaction current {};
  if (::sigaction(SIGTERM, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    struct sigaction sa {};
    sa.sa_handler = &on_terminate_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    the_dog.term_hooked = ::sigaction(SIGTERM, &sa, &the_dog.old_term) == 0;
  }
#endif
  try {
    the_dog.thread = std::thread(&watch_loop);
  } catch (...) {
    std::fprintf(stderr, "causal test watchdog: could not start its thread; not armed\n");
  }
}

void disarm_watchdog() noexcept {
  if (!the_dog.thread.joinable()) return;
  the_dog.stop.store(true, std::memory_order_release);
#if defined(__linux__)
  const char byte = 'S';
  (void)!::write(the_dog.pipe_write, &byte, 1);
#endif
  the_dog.thread.join();
#if defined(__linux__)
  if (the_dog.term_hooked) ::sigaction(SIGTERM, &the_dog.old_term, nullptr);
  ::close(the_dog.pipe_read);
  ::close(the_dog.pipe_write);
  the_dog.pipe_read = the_dog.pipe_write = -1;
#endif
}

}  // namespace causal::test
