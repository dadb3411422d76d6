// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// consumer: what a user of an installed causal compiles. Every packaging
// consumer (pkg-config, CMake find_package, Meson via pkg-config, Meson
// subproject) builds this one file and runs it; it exits non-zero on a wrong
// answer, so a broken include path, missing dependency or stale install fails.

#include <causal/causal.hpp>
#include <causal/version.hpp>

#include <cstdint>
#include <cstdio>

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "consumer: FAILED: %s\n", what);
    ++failures;
  }
}

}  // namespace

int main() {
  static_assert(CAUSAL_VERSION >= 100, "the installed version.hpp must say at least 0.1.0");

  causal::frontier a;
  a.insert_or_raise(causal::axis{1}, 5);
  a.insert_or_raise(causal::axis{2}, 3);

  causal::frontier b;
  b.insert_or_raise(causal::axis{1}, 4);
  b.insert_or_raise(causal::axis{3}, 7);

  expect(!causal::dominates(a, b), "a does not cover b's axis 3");
  expect(!causal::dominates(b, a), "b does not cover a's axis 2");

  a.merge(b);
  expect(causal::dominates(a, b), "after a.merge(b), a dominates b");
  expect(a.epoch_of(causal::axis{1}) == 5, "merge keeps the larger epoch on axis 1");
  expect(a.epoch_of(causal::axis{2}) == 3, "merge keeps a's own axis 2");
  expect(a.epoch_of(causal::axis{3}) == 7, "merge brings in b's axis 3");
  expect(a.epoch_of(causal::axis{4}) == 0, "an absent axis reads as epoch 0");

  if (failures != 0) {
    return 1;
  }
  std::printf("consumer: causal %d.%d.%d works\n", CAUSAL_VERSION_MAJOR, CAUSAL_VERSION_MINOR,
              CAUSAL_VERSION_PATCH);
  return 0;
}
