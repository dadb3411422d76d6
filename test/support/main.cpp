// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// main: the entry point shared by every unit-test binary that needs nothing
// before or after its tests (the `catch_main` static library). Catch2's
// implementation lives in catch_session.cpp.

#include "catch_session.hpp"

int main(int argc, char* argv[]) {
  return causal::test::run_catch_session(argc, argv);
}
