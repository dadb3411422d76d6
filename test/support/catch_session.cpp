// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// catch_session: the one translation unit that holds Catch2's
// implementation (see catch_session.hpp).
//
// Catch::Session().run() exists in v2 and v3, so this works with either.
// Under v2, CATCH_CONFIG_RUNNER makes this TU hold Catch's implementation
// without Catch's own main(); v3 ignores the macro.

#define CATCH_CONFIG_RUNNER
#include "catch.hpp"
#include "catch_session.hpp"

namespace causal::test {

int run_catch_session(int argc, char* argv[]) {
  return Catch::Session().run(argc, argv);
}

}  // namespace causal::test
