// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// carrier: the small interface through which a causal::mpi node moves its
// messages -- an MPI communicator in production (mpi_carrier.hpp), an
// in-process hub in tests (loopback_carrier.hpp).
//
// Model. A job has size() ranks numbered 0 .. size() - 1; this process is
// rank(). A carrier moves opaque byte messages of at most max_message_bytes
// between ranks: send() copies the bytes and returns at once; poll()
// hands every message that has arrived to a handler, one call each. Between
// one sender and one receiver, messages arrive in the order they were sent
// (MPI's non-overtaking rule); nothing is promised across pairs. The node
// (node.hpp) treats every received byte as untrusted and parses it strictly
// (wire.hpp), so a carrier need not validate content. peer_status() says
// whether a peer can still be reached, as far as the carrier knows: a
// carrier that cannot tell returns ok and leaves the node's heartbeat
// timeout to notice a vanished rank.
//
// Thread safety: the node calls a carrier only from its progress context
//                (one thread at a time: node::poll, node::shutdown), so a
//                carrier need not be thread-safe for it; one that is shared
//                otherwise says so itself.
// Memory order:  not applicable (one thread at a time).
// Blocking/allocation: send, poll and peer_status never block; a carrier
//                may allocate to keep the bytes it copies.
// Size:          the carrier's own.
// Configuration: C::max_message_bytes (a static constant): the node checks
//                at compile time that its largest update fits.
// See also:      <causal/adapters/mpi/node.hpp>,
//                <causal/adapters/mpi/loopback_carrier.hpp>,
//                adapters/mpi/README.md.
#pragma once

#include <causal/config.hpp>
#include <causal/result.hpp>

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

CAUSAL_BEGIN_NAMESPACE

namespace mpi {

/// Called by poll() once per received message, with the sender's rank;
/// `bytes` is valid only during the call.
using message_handler = void (*)(void* context, std::uint32_t from,
                                 std::span<const std::byte> bytes) noexcept;

/// What a node needs from a transport; see the file comment.
///
/// - `rank()`, `size()`: this process's rank and the ranks in the job.
/// - `C::max_message_bytes`: larger sends are `errc::invalid_argument`.
/// - `send(peer, bytes)`: copies the bytes and never blocks; messages of one
///   (sender, receiver) pair arrive in send order. An error means the peer
///   is gone or the transport failed.
/// - `poll(on_message, context)`: delivers some or all of what has
///   arrived (mpi_carrier: one message a call), never blocks; returns how
///   many messages it delivered, so 0 means nothing was waiting.
/// - `peer_status(peer)`: ok, or why the peer is unreachable.
template <class C>
concept carrier = requires(C& c, const C& cc, std::uint32_t peer, std::span<const std::byte> bytes,
                           message_handler on_message, void* context) {
  { cc.rank() } -> std::same_as<std::uint32_t>;
  { cc.size() } -> std::same_as<std::uint32_t>;
  { C::max_message_bytes } -> std::convertible_to<std::size_t>;
  { c.send(peer, bytes) } -> std::same_as<status>;
  { c.poll(on_message, context) } -> std::same_as<std::size_t>;
  { cc.peer_status(peer) } -> std::same_as<status>;
};

/// Counts the nodes that use a carrier, so that a carrier destroyed under
/// a live node is refused loudly (stderr, then abort, in every build mode:
/// docs/lifetimes.md) instead of being used after it is gone. The
/// library's carriers hold one; a carrier of the program's own may offer
/// `note_user(int)` too (the node calls it when the member exists).
class carrier_users {
 public:
  void note_user(int delta) noexcept { users_.fetch_add(delta, std::memory_order_acq_rel); }
  /// Called by the owning carrier's destructor.
  void refuse_if_used(const char* carrier_name) const noexcept {
    const int n = users_.load(std::memory_order_acquire);
    if (n == 0) [[likely]] return;
    std::fprintf(stderr,
                 "causal: %s destroyed while %d mpi node(s) still use it; destroy the nodes "
                 "before their carrier (docs/lifetimes.md)\n",
                 carrier_name, n);
    std::fflush(stderr);
    std::abort();
  }

 private:
  std::atomic<int> users_{0};
};

namespace detail {
template <class C>
void note_carrier_user(C& c, int delta) noexcept {
  if constexpr (requires { c.note_user(delta); }) c.note_user(delta);
}
}  // namespace detail

}  // namespace mpi

CAUSAL_END_NAMESPACE
