// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// rank_axes: hands out the axes of one MPI rank -- the axis layout's
// machine field is the rank -- so that queues of different ranks never
// share an axis and a frontier names the rank of every entry.
//
// Model. Every rank of a job allocates its participants' axes (queues,
// host contexts, later collective channels) from its own
// basic_rank_axis_allocator: session = the job's session, machine = the
// rank, ordinals 1, 2, ... per domain, never reused (<causal/axis.hpp>). Two ranks
// can therefore allocate without talking, and a receiver can check that
// an axis a rank announces (HELLO) is that rank's own.
//
// Ranks and layouts. The default layout <8, 8, 8, 40> has 8 machine bits:
// 256 ranks. A larger job needs a layout with more machine bits, chosen as
// the frontier's Layout template argument (it is part of every frontier and
// semaphore type, so two ranks with different layouts cannot mix by
// accident); wide_rank_axis_layout gives 16 bits (65 536 ranks) and 32
// ordinal bits. A rank that does not fit the layout makes every
// allocate() fail with out_of_range (the message names MachineBits), and
// the node refuses to start.
//
// Thread safety: allocate may be called concurrently (the underlying
//                allocator serialises on a mutex).
// Memory order:  ordinals of one domain are handed out in increasing order.
// Blocking/allocation: allocate takes a mutex and may allocate the first
//                time it sees a domain; it runs when a participant is
//                created, never on a hot path.
// Size:          a basic_axis_allocator (a mutex and a small vector).
// Configuration: Layout (an axis_encoding; default_axis_layout).
// See also:      <causal/axis.hpp>, <causal/adapters/mpi/node.hpp>,
//                adapters/mpi/README.md.
#pragma once

#include <causal/axis.hpp>
#include <causal/config.hpp>
#include <causal/result.hpp>

#include <cstdint>

CAUSAL_BEGIN_NAMESPACE

namespace mpi {

/// A layout for jobs of more than 256 ranks: 8 session bits, 16 machine
/// bits (65 536 ranks), 8 domain bits and 32 ordinal bits.
using wide_rank_axis_layout = axis_layout<8, 16, 8, 32>;

/// True when `rank` fits the machine field of `Layout`.
template <axis_encoding Layout>
[[nodiscard]] constexpr bool rank_fits(std::uint64_t rank) noexcept {
  return Layout::make(axis_fields{0, rank, domain::queue, 0}).ok();
}

/// Allocates the axes of one rank: machine = rank; see the file comment.
template <axis_encoding Layout = default_axis_layout>
class basic_rank_axis_allocator {
 public:
  using layout_type = Layout;

  /// An allocator for `rank` in `session`.
  explicit basic_rank_axis_allocator(std::uint32_t rank, std::uint64_t session = 0) noexcept
      : rank_(rank), axes_(session) {}

  basic_rank_axis_allocator(const basic_rank_axis_allocator&) = delete;
  basic_rank_axis_allocator& operator=(const basic_rank_axis_allocator&) = delete;

  /// Returns a fresh axis of kind `d` on this rank, or out_of_range (the
  /// rank does not fit the layout's MachineBits, or the session does not
  /// fit) or resource_exhausted (no ordinal left).
  [[nodiscard]] result<axis> allocate(domain d) {
    if (!rank_fits<Layout>(rank_)) {
      return error{errc::out_of_range,
                   "rank does not fit the axis layout's MachineBits (use a layout with more machine bits, "
                   "e.g. causal::mpi::wide_rank_axis_layout)",
                   rank_};
    }
    return axes_.allocate(rank_, d);
  }

  [[nodiscard]] std::uint32_t rank() const noexcept { return rank_; }
  [[nodiscard]] std::uint64_t session() const noexcept { return axes_.session(); }

  /// True when `a` is an axis of this rank and session under Layout.
  [[nodiscard]] bool owns(axis a) const noexcept {
    return Layout::machine(a) == rank_ && Layout::session(a) == axes_.session();
  }

 private:
  std::uint32_t rank_;
  basic_axis_allocator<Layout> axes_;
};

/// The allocator for the default layout (up to 256 ranks).
using rank_axis_allocator = basic_rank_axis_allocator<>;

}  // namespace mpi

CAUSAL_END_NAMESPACE
