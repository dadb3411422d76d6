// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// catch_session: the one translation unit that holds Catch2's
// implementation (see catch_session.hpp), and what every test binary gets
// around its session: the watchdog (watchdog.hpp) with a listener that
// feeds it progress, and the hog threads of CAUSAL_TEST_HOGS (hogs.hpp).
//
// Catch::Session().run() exists in v2 and v3, so this works with either.
// Under v2, CATCH_CONFIG_RUNNER makes this TU hold Catch's implementation
// without Catch's own main(); v3 ignores the macro.

#define CATCH_CONFIG_RUNNER
// Under ThreadSanitizer, Catch2's handler for fatal signals (SIGABRT,
// SIGSEGV, SIGTERM...) allocates inside the handler, which TSan reports as
// a signal-unsafe call and exits on (halt_on_error): a crash, or the
// watchdog's SIGTERM dump, would show only that report. TSan reports fatal
// signals itself, so Catch's handler is left out there.
#if defined(__SANITIZE_THREAD__)
#define CATCH_CONFIG_NO_POSIX_SIGNALS
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CATCH_CONFIG_NO_POSIX_SIGNALS
#endif
#endif
#include "catch.hpp"
#include "catch_session.hpp"
#include "hogs.hpp"
#include "watchdog.hpp"

#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/reporters/catch_reporter_event_listener.hpp>
#include <catch2/reporters/catch_reporter_registrars.hpp>
#endif

namespace {

#if __has_include(<catch2/catch_all.hpp>)
using listener_base = Catch::EventListenerBase;
#else
using listener_base = Catch::TestEventListenerBase;
#endif

/// Tells the watchdog which test runs and that it moves on. It copies the
/// names into fixed buffers: no allocation between a test's sections.
class causal_watchdog_listener : public listener_base {
 public:
  using listener_base::listener_base;

  void testCaseStarting(Catch::TestCaseInfo const& info) override {
    listener_base::testCaseStarting(info);
    causal::test::note_test_case(info.name.c_str());
  }
  void sectionStarting(Catch::SectionInfo const& info) override {
    listener_base::sectionStarting(info);
    causal::test::note_section(info.name.c_str());
  }
  void sectionEnded(Catch::SectionStats const& stats) override {
    listener_base::sectionEnded(stats);
    causal::test::note_progress();
  }
  void testCaseEnded(Catch::TestCaseStats const& stats) override {
    listener_base::testCaseEnded(stats);
    causal::test::note_progress();
  }
};

}  // namespace

// The macro pastes the name into a variable name: no qualification.
CATCH_REGISTER_LISTENER(causal_watchdog_listener)

namespace causal::test {

int run_catch_session(int argc, char* argv[]) {
  arm_watchdog();
  start_hogs();
  const int result = Catch::Session().run(argc, argv);
  stop_hogs();
  disarm_watchdog();
  return result;
}

}  // namespace causal::test
