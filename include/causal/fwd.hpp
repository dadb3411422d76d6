// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// fwd: forward declarations and the default aliases of the core, cheap to
// include from headers that only name causal types.
//
// Declares the class templates with their defaults so a user header can
// write `causal::frontier const&` without pulling in the operations.
// Including the full header later is always compatible with these.
//
// Thread safety: not applicable (declarations only).
// Memory order:  not applicable.
// Blocking/allocation: none.
// Size:          not applicable.
// Configuration: the same defaults as the full headers.
// See also:      <causal/causal.hpp>.
#pragma once

#include <causal/axis.hpp>

#include <cstddef>

CAUSAL_BEGIN_NAMESPACE

struct frontier_entry;
struct evict_and_taint;
struct reject_overflow;
template <class T>
class result;
class error;

CAUSAL_END_NAMESPACE
