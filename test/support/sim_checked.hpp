// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Helpers the simulator's tests share (test/unit/sim_*_test.cpp): load a
// scenario text or fail the test with the loader's diagnostic, and run a
// scenario under one model and scheduling, failing the test on a run
// error and on every soundness violation the run's self-check found.
#pragma once

#include <causal/sim/scenario.hpp>
#include <causal/sim/simulator.hpp>

#include "catch.hpp"

#include <string>

namespace sim_test {

inline causal::sim::scenario load(const std::string& text, const causal::sim::load_options& options = {}) {
  auto s = causal::sim::load_scenario(text, options);
  INFO((s.ok() ? std::string("ok") : s.error().to_string()));
  REQUIRE(s.ok());
  return *s;
}

inline causal::sim::run_result run_checked(const causal::sim::scenario& s, causal::sim::model m,
                                           causal::sim::scheduling how = causal::sim::scheduling::in_order) {
  causal::sim::run_options options;
  options.how = how;
  causal::sim::run_result r = causal::sim::run(s, m, options);
  INFO(std::string(causal::sim::to_string(m)) << ", " << causal::sim::to_string(how) << ": "
                                              << (r.error ? *r.error : std::string("no error")));
  REQUIRE_FALSE(r.error);
  for (const std::string& v : r.violations) FAIL_CHECK(v);
  return r;
}

}  // namespace sim_test
