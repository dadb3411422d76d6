// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// causal: the umbrella header of the core (never of the adapters).
//
// Includes every public core header: axes, frontiers and their wire form,
// timeline semaphores, queues with wait elision, the completion tracker,
// block pools with death frontiers, collective channels, processes, the
// cooperative executor and its scan policies, block/stream/coroutine/queue
// processes, fences, invocations, stream-ordered pools, tracing (sink,
// recorder, Chrome JSON and DOT writers), result types,
// configuration and version. Adapter headers live under
// <causal/adapters/...> and are included explicitly.
//
// Thread safety: see each included header.
// Memory order:  see each included header.
// Blocking/allocation: see each included header.
// Size:          not applicable.
// Configuration: <causal/config.hpp>.
// See also:      README.md.
#pragma once

#include <causal/axis.hpp>
#include <causal/block_processor.hpp>
#include <causal/collective.hpp>
#include <causal/completion.hpp>
#include <causal/config.hpp>
#include <causal/coroutine.hpp>
#include <causal/executor.hpp>
#include <causal/fence.hpp>
#include <causal/frontier.hpp>
#include <causal/frontier_wire.hpp>
#include <causal/invoke.hpp>
#include <causal/pool.hpp>
#include <causal/process.hpp>
#include <causal/queue.hpp>
#include <causal/queue_process.hpp>
#include <causal/result.hpp>
#include <causal/scan/budget_weighted.hpp>
#include <causal/scan/priority_ordered.hpp>
#include <causal/scan/round_robin.hpp>
#include <causal/scope.hpp>
#include <causal/semaphore.hpp>
#include <causal/stream_pool.hpp>
#include <causal/stream_process.hpp>
#include <causal/trace.hpp>
#include <causal/trace_sink.hpp>
#include <causal/version.hpp>
