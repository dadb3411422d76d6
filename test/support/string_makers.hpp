// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// string_makers: how Catch2 prints causal's value types in failed
// assertions (an errc as its name, not a number). Included by the unit
// tests after "catch.hpp".
#pragma once

#include <causal/result.hpp>

#include "catch.hpp"

#include <string>

namespace Catch {
template <>
struct StringMaker<causal::errc> {
  static std::string convert(causal::errc e) { return std::string(causal::to_string(e)); }
};
}  // namespace Catch
