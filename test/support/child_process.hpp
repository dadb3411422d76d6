// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Runs a piece of a test in a forked child process and reports how it
// ended (a clean exit, an abort) and what it wrote to stderr: for the
// library's loud refusals (docs/lifetimes.md), which end the process.
#pragma once

#include "catch.hpp"

#include <csignal>
#include <cstdio>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace causal_test {

// ThreadSanitizer does not support threads started in a forked child of a
// process it instruments: tests that fork skip themselves there.
#if defined(__SANITIZE_THREAD__)
inline constexpr bool fork_supported = false;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool fork_supported = false;
#else
inline constexpr bool fork_supported = true;
#endif
#else
inline constexpr bool fork_supported = true;
#endif

/// Ends the calling test case, with a warning, where fork is unsupported.
#define CAUSAL_TEST_NEEDS_FORK()                                                  \
  do {                                                                            \
    if (!causal_test::fork_supported) {                                           \
      WARN("skipped: fork with threads is not supported under ThreadSanitizer"); \
      return;                                                                     \
    }                                                                             \
  } while (false)

struct child_outcome {
  bool aborted = false;
  int exit_code = -1;
  std::string stderr_text;
};

/// Runs `body` in a forked child with its stderr captured and its stdout
/// discarded; the child exits 0 when `body` returns (running no
/// destructor of the parent's objects).
template <class Body>
child_outcome run_child(Body&& body) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  std::fflush(nullptr);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], 2);
    // The test framework's own handler would report the abort on stdout
    // as a failed test of the child; the parent judges it instead.
    std::signal(SIGABRT, SIG_DFL);
    if (std::freopen("/dev/null", "w", stdout) == nullptr) _exit(3);
    body();
    std::fflush(nullptr);
    _exit(0);
  }
  close(fds[1]);
  child_outcome out;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(fds[0], buffer, sizeof buffer);
    if (n <= 0) break;
    out.stderr_text.append(buffer, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  out.aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
  if (WIFEXITED(status)) out.exit_code = WEXITSTATUS(status);
  return out;
}

inline bool contains(const std::string& text, const char* what) {
  return text.find(what) != std::string::npos;
}

}  // namespace causal_test
