// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// catch_session: runs the Catch2 session for test binaries that need their
// own main() (a skip check or a device harness before the tests, a verdict
// after them).
//
// Catch2's implementation is compiled once, in catch_session.cpp (the
// `catch_session` static library, built without optimisation: it is the
// slowest translation unit of every build and its speed does not matter).
// A main() that includes "catch.hpp" with CATCH_CONFIG_RUNNER would compile
// that implementation again; this function lets it stay a plain TU. Around
// the session it arms the test watchdog (watchdog.hpp) and starts the hog
// threads CAUSAL_TEST_HOGS asks for (hogs.hpp).
//
// Thread safety: call once, from main().
// See also:      test/support/main.cpp.
#pragma once

namespace causal::test {

// Returns Catch::Session().run(argc, argv): 0 when every test passed.
// Arms the watchdog first and starts the hogs; stops both afterwards.
int run_catch_session(int argc, char* argv[]);

}  // namespace causal::test
