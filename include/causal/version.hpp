// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// version: the library version as macros and constants.
//
// Hand-maintained; a test checks it against meson.project_version() so the
// two never drift.
//
// Thread safety: not applicable (constants only).
// Memory order:  not applicable.
// Blocking/allocation: none.
// Size:          not applicable.
// Configuration: none.
// See also:      <causal/config.hpp>.
#pragma once

#define CAUSAL_VERSION_MAJOR 0
#define CAUSAL_VERSION_MINOR 1
#define CAUSAL_VERSION_PATCH 0
/// MAJOR * 10000 + MINOR * 100 + PATCH, for `#if` comparisons.
#define CAUSAL_VERSION \
  (CAUSAL_VERSION_MAJOR * 10000 + CAUSAL_VERSION_MINOR * 100 + CAUSAL_VERSION_PATCH)
