// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// config: the library's translation-unit-wide switches, feature probes and
// the macros every other header leans on.
//
// Only switches that never change the layout of a type live here (STYLE b.3
// tier 3); everything that shapes a type is a template argument. Each switch
// follows the `#ifndef CAUSAL_X / #define CAUSAL_X <default>` form so a user
// can set it on the command line. Feature probes are function-like and
// defined to 0 or 1, so a misspelled probe is a hard error under `#if`.
//
// Thread safety: not applicable (macros only).
// Memory order:  not applicable.
// Blocking/allocation: none.
// Size:          not applicable.
// Configuration: CAUSAL_ASSERT_LEVEL, CAUSAL_CACHELINE_SIZE,
//                CAUSAL_USE_CONDVAR_WAIT, CAUSAL_ASSERT_HANDLER.
// See also:      <causal/version.hpp>, <causal/result.hpp>.
#pragma once

#include <cstdio>
#include <cstdlib>

//===-- versioned namespace -------------------------------------------------===//

// Everything lives in causal::v0 (inline), so two vendored copies of
// different versions in one program are different types, not ODR clashes.
#define CAUSAL_BEGIN_NAMESPACE \
  namespace causal {           \
  inline namespace v0 {
#define CAUSAL_END_NAMESPACE \
  }                          \
  }

//===-- compiler probes -----------------------------------------------------===//

#if defined(__clang__)
#define CAUSAL_COMPILER_CLANG() 1
#else
#define CAUSAL_COMPILER_CLANG() 0
#endif

#if defined(__GNUC__) && !defined(__clang__)
#define CAUSAL_COMPILER_GCC() 1
#else
#define CAUSAL_COMPILER_GCC() 0
#endif

#if defined(__CUDACC__)
#define CAUSAL_COMPILER_NVCC() 1
#else
#define CAUSAL_COMPILER_NVCC() 0
#endif

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CAUSAL_HAS_TSAN() 1
#endif
#endif
#if !defined(CAUSAL_HAS_TSAN) && defined(__SANITIZE_THREAD__)
#define CAUSAL_HAS_TSAN() 1
#endif
#ifndef CAUSAL_HAS_TSAN
#define CAUSAL_HAS_TSAN() 0
#endif

// AddressSanitizer, detected the same way (g++ and clang spell it
// differently); tests scale their work down under either sanitizer.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CAUSAL_HAS_ASAN() 1
#endif
#endif
#if !defined(CAUSAL_HAS_ASAN) && defined(__SANITIZE_ADDRESS__)
#define CAUSAL_HAS_ASAN() 1
#endif
#ifndef CAUSAL_HAS_ASAN
#define CAUSAL_HAS_ASAN() 0
#endif

#if defined(__linux__)
#define CAUSAL_HAS_FUTEX() 1
#else
#define CAUSAL_HAS_FUTEX() 0
#endif

//===-- attributes ----------------------------------------------------------===//

#if CAUSAL_COMPILER_GCC() || CAUSAL_COMPILER_CLANG()
#define CAUSAL_ALWAYS_INLINE inline __attribute__((always_inline))
#define CAUSAL_NOINLINE __attribute__((noinline))
/// Hints that the cache line at `address` is about to be written: a
/// no-op where unsupported; never faults, even on freed memory.
#define CAUSAL_PREFETCH_WRITE(address) __builtin_prefetch((address), 1, 3)
#else
#define CAUSAL_ALWAYS_INLINE inline
#define CAUSAL_NOINLINE
#define CAUSAL_PREFETCH_WRITE(address) ((void)(address))
#endif

//===-- tunables ------------------------------------------------------------===//

/// Size of a destructive-interference unit. 64 on every x86-64 and most
/// AArch64 parts we target; contended atomics are aligned to it.
#ifndef CAUSAL_CACHELINE_SIZE
#define CAUSAL_CACHELINE_SIZE 64
#endif

/// Parks waiters on a mutex + condition variable instead of a futex.
/// Forced on under ThreadSanitizer, which does not model futex waits and
/// would report the hand-off as a race.
#ifndef CAUSAL_USE_CONDVAR_WAIT
#if CAUSAL_HAS_TSAN()
#define CAUSAL_USE_CONDVAR_WAIT 1
#else
#define CAUSAL_USE_CONDVAR_WAIT 0
#endif
#endif

/// 0: no checks. 1 (default): cheap precondition checks that guard memory
/// safety. 2: also expensive invariant checks (e.g. a frontier re-verifies
/// its sort order after every mutation).
#ifndef CAUSAL_ASSERT_LEVEL
#define CAUSAL_ASSERT_LEVEL 1
#endif

//===-- assertions ----------------------------------------------------------===//

#ifndef CAUSAL_ASSERT_HANDLER
/// Called on a violated precondition with the failed expression, a message,
/// and the location. The default prints one line to stderr and aborts; a
/// test harness may define its own before including any causal header.
#define CAUSAL_ASSERT_HANDLER(expr, msg, file, line)                          \
  (std::fprintf(stderr, "causal: assertion `%s` failed: %s (%s:%d)\n", expr, \
                msg, file, line),                                             \
   std::abort())
#endif

#if CAUSAL_ASSERT_LEVEL >= 1
#define CAUSAL_ASSERT(cond, msg)                                             \
  ((cond) ? static_cast<void>(0)                                             \
          : static_cast<void>(CAUSAL_ASSERT_HANDLER(#cond, msg, __FILE__, __LINE__)))
#else
#define CAUSAL_ASSERT(cond, msg) static_cast<void>(0)
#endif

#if CAUSAL_ASSERT_LEVEL >= 2
#define CAUSAL_DEBUG_ASSERT(cond, msg) CAUSAL_ASSERT(cond, msg)
#else
#define CAUSAL_DEBUG_ASSERT(cond, msg) static_cast<void>(0)
#endif
