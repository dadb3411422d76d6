// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// skip: ends a test binary with exit code 77, which Meson reports as SKIP.
//
// For whole binaries that cannot run here (no GPU, no Vulkan device), checked
// at startup before any test case runs. Catch2 v2 has no SKIP macro, so a
// single test case cannot be skipped this way without hiding the others.
//
// Thread safety: call from the main thread before starting other threads.
// See also:      test/meson.build (how skipped tests are counted).
#pragma once

#include <cstdio>
#include <cstdlib>

namespace causal::test {

/// The exit code Meson (and Automake) treat as "skipped".
inline constexpr int skip_exit_code = 77;

/// Prints "SKIP: <reason>" to stderr and exits the process with code 77.
[[noreturn]] inline void skip_binary(const char* reason) {
  std::fprintf(stderr, "SKIP: %s (exit code %d: reported as skipped, not passed)\n", reason,
               skip_exit_code);
  std::fflush(stderr);
  std::exit(skip_exit_code);
}

}  // namespace causal::test
