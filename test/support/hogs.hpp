// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// hogs: busy threads that oversubscribe the machine for a whole test run,
// so that the tests' own threads are preempted at arbitrary points and
// wait for a CPU the way they do on a loaded CI runner.
//
// CAUSAL_TEST_HOGS=N (read by run_catch_session) starts N threads that spin
// until the session ends; on a 2-vCPU machine three of them beside a test's
// workers mean more runnable threads than cores for the whole run. They
// share nothing with the tests (one relaxed flag each round), allocate
// nothing after they start, and are joined before the process exits.
// test/meson.build runs the stress binary this way as
// `executor_stress_oversubscribed` (suite 'stress').
//
// Thread safety: start and stop from the main thread, once each.
// See also:      test/support/catch_session.cpp, test/support/watchdog.hpp.
#pragma once

namespace causal::test {

/// Starts CAUSAL_TEST_HOGS busy threads (none when unset or 0); says so on
/// stderr. Returns how many started.
int start_hogs() noexcept;

/// Stops and joins them.
void stop_hogs() noexcept;

}  // namespace causal::test
