// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// main: the Catch2 entry point shared by every unit-test binary (compiled
// once into the `catch_main` static library).
//
// Catch::Session().run() exists in v2 and v3, so this works with either.
// Under v2, CATCH_CONFIG_RUNNER makes this TU hold Catch's implementation
// without Catch's own main(); v3 ignores the macro.

#define CATCH_CONFIG_RUNNER
#include "catch.hpp"

int main(int argc, char* argv[]) {
  return Catch::Session().run(argc, argv);
}
