// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Tests for <causal/version.hpp>: the hand-maintained macros must match the
// version in meson.build, which the build passes in as
// CAUSAL_MESON_PROJECT_VERSION (test/meson.build).

#include <causal/version.hpp>

#include "catch.hpp"

#include <string>

#ifndef CAUSAL_MESON_PROJECT_VERSION
#error "test/meson.build passes -DCAUSAL_MESON_PROJECT_VERSION=\"<meson.project_version()>\""
#endif

TEST_CASE("version: CAUSAL_VERSION_* match meson.project_version()", "[version]") {
  const std::string from_macros = std::to_string(CAUSAL_VERSION_MAJOR) + "." +
                                  std::to_string(CAUSAL_VERSION_MINOR) + "." +
                                  std::to_string(CAUSAL_VERSION_PATCH);
  CHECK(from_macros == std::string(CAUSAL_MESON_PROJECT_VERSION));
}

TEST_CASE("version: CAUSAL_VERSION packs major, minor and patch for #if", "[version]") {
  STATIC_REQUIRE(CAUSAL_VERSION_MINOR < 100);
  STATIC_REQUIRE(CAUSAL_VERSION_PATCH < 100);
  STATIC_REQUIRE(CAUSAL_VERSION ==
                 CAUSAL_VERSION_MAJOR * 10000 + CAUSAL_VERSION_MINOR * 100 + CAUSAL_VERSION_PATCH);
#if CAUSAL_VERSION < 100
#error "CAUSAL_VERSION must be usable in #if and be at least 0.1.0"
#endif
}
