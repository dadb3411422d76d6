// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// catch: includes Catch2 v3 when it is available and v2 otherwise.
//
// Debian bookworm ships Catch2 2.13.10 (one header, <catch2/catch.hpp>);
// WrapDB's fallback is v3. Tests include this shim and use only what both
// versions have: TEST_CASE, SECTION, TEMPLATE_TEST_CASE,
// TEMPLATE_LIST_TEST_CASE, GENERATE, REQUIRE/CHECK, STATIC_REQUIRE. v2 has no
// SKIP; a binary that cannot run exits 77 through "skip.hpp" instead.
//
// Thread safety: Catch2 assertions must be made from the test's own thread.
// See also:      test/support/main.cpp.
#pragma once

#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
#else
#include <catch2/catch.hpp>
#endif
