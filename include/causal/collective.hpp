// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// collective: collective channels, which let N queues that run an
// all-reduce, all-gather or broadcast together share ONE axis, so that the
// collective costs each participant's frontier one entry, not N
// (docs/collectives.md).
//
// Model. A channel has a collective axis C (domain::collective, from an
// axis_allocator), N participants (indices 0..N-1) and a timeline semaphore
// whose value is the collective sequence number. Collective k is complete
// when every participant has `arrive`d for k, i.e. has finished its part of
// collective k; the last arrival signals the semaphore to k with the join of
// the participants' frontiers at their contributions plus (C, k), and with
// producer entry (C, k), so (C, k) is waited on, elided and retired like any
// queue entry. Collectives complete in order, one at a time: arrivals for k
// are accepted while k is in progress, never for k + 1 before k completes.
//
//   participant 0: ...op(P0:5)--[all-reduce k]--op(P0:7)    knowledge {P0:7, C:k}
//   participant 1: ...op(P1:9)--[all-reduce k]--op(P1:11)   knowledge {P1:11, C:k}
//   channel semaphore at k: {P0:6, P1:10, C:k}, producer (C, k)
//
// Compression. After collective k a participant learns {(C, k)} only; it
// does not import the other participants' entries, so its frontier size is
// constant in N. What that forgoes: a requirement that names another
// participant's pre-collective epoch (P1:9 above) is not covered by P0's
// knowledge, so a queue treats it conservatively (a device wait, never an
// unsound elision). `covers()` resolves such a requirement through the
// channel's semaphore: (C, k) in the knowledge plus the semaphore's reached
// frontier at k. A non-participant that waits on the channel semaphore
// through an ordinary queue submit imports the full (N + 1)-entry frontier;
// `join_collective` gives it the one entry instead.
//
// Helpers over basic_queue participants. `submit_collective` has each
// participant submit its op, then *joins* each to k without a host round
// trip: a device wait on the channel semaphore at k (so the participant's
// next op starts after the whole collective) and learn({(C, k)}); the
// caller arrives for each participant when the device reports its op done.
// `run_collective` does the whole step synchronously: submit, a caller
// hook that drives or awaits each participant's completion, arrive, join
// (k is then reached, so no device wait is needed).
//
// Thread safety: `arrive`, the observers, `covers` and `fail` may be called
//                concurrently (device completions arrive on any thread).
//                The helpers touch queues, which are externally
//                synchronised: one thread drives a helper at a time.
// Memory order:  arrive() takes the channel's spin lock (acquire/release);
//                the completing arrival's signal releases, and a waiter
//                that observes the semaphore at >= k acquires (see
//                <causal/semaphore.hpp>).
// Blocking/allocation: never allocates. arrive holds a spin lock for a
//                bounded section (one frontier merge); the completing
//                arrival signals the semaphore outside it (timepoint
//                callbacks may re-enter arrive) and, if a concurrent
//                arrival completed the previous collective, spins until
//                that signal has landed, so signals stay in order.
// Size:          about sizeof(Semaphore) + sizeof(Frontier) +
//                8 * MaxParticipants bytes: 3 968 bytes for the defaults.
//                run_collective keeps MaxParticipants contributions
//                (~13 KiB for 64) on the caller's stack.
// Configuration: Frontier (default causal::frontier), Semaphore (default
//                basic_semaphore<Frontier>), MaxParticipants (default 64);
//                the axis, participant count and semaphore scope at
//                construction.
// See also:      docs/collectives.md, <causal/semaphore.hpp>,
//                <causal/queue.hpp>, <causal/pool.hpp>.
#pragma once

#include <causal/axis.hpp>
#include <causal/config.hpp>
#include <causal/detail/spin_lock.hpp>
#include <causal/frontier.hpp>
#include <causal/result.hpp>
#include <causal/semaphore.hpp>

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <type_traits>

CAUSAL_BEGIN_NAMESPACE

/// The outcome of one accepted `arrive`.
struct collective_arrival {
  std::uint64_t sequence = 0;  ///< the collective arrived for
  bool completed = false;      ///< this arrival completed it (the semaphore reached it)
  std::size_t remaining = 0;   ///< participants still to arrive for it
};

/// What one participant contributed to a collective: the epoch of its op
/// and its knowledge right after submitting it.
template <class Frontier>
struct collective_contribution {
  std::uint64_t sequence = 0;
  std::uint64_t epoch = 0;
  Frontier frontier{};
};

//===-- basic_collective_channel --------------------------------------------===//

/// A collective channel over up to `MaxParticipants` participants; see the
/// file comment.
///
/// Template parameters:
/// - `Frontier`: the frontier type of contributions and signals.
/// - `Semaphore`: the channel's timeline semaphore type (constructible from
///   (initial value, semaphore_scope); frontier type `Frontier`).
/// - `MaxParticipants`: the most participants a channel may have (>= 1).
template <frontier_type Frontier = frontier, class Semaphore = basic_semaphore<Frontier>,
          std::size_t MaxParticipants = 64>
  requires std::same_as<typename Semaphore::frontier_type, Frontier>
class basic_collective_channel {
  static_assert(MaxParticipants >= 1, "basic_collective_channel: MaxParticipants must be at least 1");

 public:
  using frontier_type = Frontier;
  using semaphore_type = Semaphore;
  static constexpr std::size_t max_participants = MaxParticipants;

  /// Creates the channel of collective axis `a` for `participants`
  /// participants; its semaphore starts at 0 with `scope`. Bad arguments
  /// (axis 0 or not of domain::collective, 0 or more than MaxParticipants
  /// participants) leave the channel unusable: every arrive returns the
  /// error (see setup_status()).
  basic_collective_channel(causal::axis a, std::size_t participants,
                           semaphore_scope scope = semaphore_scope::device_group) noexcept
      : axis_(a), count_(participants), sem_(0, scope) {
    // Only completed collectives move the semaphore: a signal from anyone
    // else would let waiters past a collective that has not happened.
    detail::reserve_writes_if_able(sem_, this);
    using layout = typename Frontier::layout_type;
    if (a.raw() == 0) {
      setup_ = error{errc::invalid_argument, "collective channel: axis 0 is reserved"};
    } else if (domain_of<layout>(a) != domain::collective) {
      setup_ = error{errc::invalid_argument,
                     "collective channel: axis is not of domain::collective", a.raw()};
    } else if (participants == 0 || participants > MaxParticipants) {
      setup_ = error{errc::out_of_range,
                     "collective channel: participant count must be 1..MaxParticipants",
                     participants};
    }
  }

  basic_collective_channel(const basic_collective_channel&) = delete;
  basic_collective_channel& operator=(const basic_collective_channel&) = delete;

  //===-- observers ---------------------------------------------------------===//

  /// Ok, or why the constructor's arguments make the channel unusable.
  [[nodiscard]] status setup_status() const noexcept { return setup_; }
  [[nodiscard]] causal::axis axis() const noexcept { return axis_; }
  [[nodiscard]] std::size_t participant_count() const noexcept { return count_; }
  /// The channel's semaphore: its value is the last completed collective.
  /// Wait on it; only the channel signals it (its writes are reserved,
  /// reserve_writes, so a signal of it is refused with failed_precondition).
  [[nodiscard]] Semaphore& semaphore() noexcept { return sem_; }
  [[nodiscard]] const Semaphore& semaphore() const noexcept { return sem_; }
  /// The last completed collective (the semaphore's value).
  [[nodiscard]] std::uint64_t completed() const noexcept { return sem_.value(); }

  /// The collective now accepting arrivals (completed ones + 1).
  [[nodiscard]] std::uint64_t in_progress() const noexcept {
    detail::spin_guard guard(lock_);
    return collecting_;
  }
  /// How many participants have arrived for the collective in progress.
  [[nodiscard]] std::size_t arrived_count() const noexcept {
    detail::spin_guard guard(lock_);
    return arrived_count_;
  }
  /// True when participant `i` has arrived for the collective in progress.
  [[nodiscard]] bool has_arrived(std::size_t i) const noexcept {
    detail::spin_guard guard(lock_);
    return i < count_ && arrived_[i] == collecting_;
  }

  /// What a waiter on the channel semaphore at `k` imports (the join of the
  /// contributions plus (C, k), producer (C, k)); see basic_semaphore.
  [[nodiscard]] auto frontier_at(std::uint64_t k) const noexcept { return sem_.frontier_at(k); }

  /// The compressed entry of collective `k`: the frontier {(C, k)}.
  [[nodiscard]] Frontier entry_of(std::uint64_t k) const noexcept {
    Frontier one;
    (void)one.insert_or_raise(axis_, k);  // one entry always fits (Capacity >= 1)
    return one;
  }

  /// Returns true when `knowledge` covers `requirement`, directly or through
  /// the channel: it holds (C, k), collective k has been reached, and the
  /// semaphore's frontier at k covers the requirement. Sound: reaching k
  /// means every contribution to k, and so its whole past, has completed.
  /// A tainted frontier at k still answers from its entries (they are all
  /// in the past); a tainted (external) value never counts.
  [[nodiscard]] bool covers(const Frontier& knowledge, frontier_entry requirement) const noexcept {
    if (knowledge.epoch_of(requirement.axis) >= requirement.epoch) return true;
    const std::uint64_t k = knowledge.epoch_of(axis_);
    if (k == 0) return false;
    const auto imported = sem_.frontier_at(k);
    if (!imported || !imported->reached || imported->value_tainted) return false;
    return imported->frontier.epoch_of(requirement.axis) >= requirement.epoch;
  }

  /// Returns true when `knowledge` covers every entry of `requirement`
  /// (directly or through the channel). False for a tainted requirement
  /// (it may have lost entries; check its producer entry instead).
  [[nodiscard]] bool covers(const Frontier& knowledge, const Frontier& requirement) const noexcept {
    if (requirement.tainted()) return false;
    for (const frontier_entry e : requirement) {
      if (!covers(knowledge, e)) return false;
    }
    return true;
  }

  //===-- arrivals ----------------------------------------------------------===//

  /// Records that participant `i` has finished its part of collective `seq`,
  /// its frontier at its contribution being `contribution`. The last of the
  /// N arrivals signals the semaphore to `seq` with the join of the
  /// contributions plus (C, seq), producer (C, seq).
  ///
  /// Errors (nothing changes): the setup error; `out_of_range` for
  /// `i >= participant_count()`; `not_increasing` for a collective already
  /// complete; `invalid_argument` for a collective ahead of the one in
  /// progress (out of order) or a contribution that already claims (C, seq);
  /// `failed_precondition` when `i` already arrived for `seq`; the
  /// semaphore's failure; `capacity_exceeded` when a rejecting Frontier
  /// cannot hold the join. If the completing signal itself fails (the
  /// semaphore failed concurrently) its error is returned; the channel has
  /// then moved on and the failure reaches every waiter.
  result<collective_arrival> arrive(std::size_t i, std::uint64_t seq,
                                    const Frontier& contribution) noexcept {
    if (!setup_) return setup_.error_value();
    if (i >= count_) {
      return error{errc::out_of_range, "arrive: participant index out of range", i};
    }
    if (contribution.epoch_of(axis_) >= seq && seq != 0) {
      return error{errc::invalid_argument,
                   "arrive: contribution already claims this collective's entry", seq};
    }
    Frontier signalled;
    collective_arrival out{seq, false, 0};
    {
      detail::spin_guard guard(lock_);
      if (const auto f = sem_.failure(); f) return *f;
      if (seq < collecting_) {
        return error{errc::not_increasing, "arrive: collective already complete", seq};
      }
      if (seq > collecting_) {
        return error{errc::invalid_argument,
                     "arrive: collective ahead of the one in progress (out of order)", seq};
      }
      if (arrived_[i] == seq) {
        return error{errc::failed_precondition,
                     "arrive: participant already arrived for this collective", i};
      }
      const bool last = arrived_count_ + 1 == count_;
      if constexpr (Frontier::overflow_type::rejects) {
        // Merge into a copy so that a rejected join leaves the state as it was.
        Frontier joined = pending_;
        if (status s = joined.merge(contribution, axis_); !s) return s.error_value();
        if (last) {
          signalled = joined;
          if (status s = signalled.insert_or_raise(axis_, seq); !s) return s.error_value();
        }
        pending_ = joined;
      } else {
        // The collective axis is pinned: an overflow never evicts (C, k-1)
        // or (C, k), the entry the compression rests on.
        pending_.merge(contribution, axis_);
        if (last) {
          signalled = pending_;
          signalled.insert_or_raise(axis_, seq);
        }
      }
      arrived_[i] = seq;
      ++arrived_count_;
      out.remaining = count_ - arrived_count_;
      if (last) {
        out.completed = true;
        pending_.clear();
        arrived_count_ = 0;
        collecting_ = seq + 1;
      }
    }
    if (out.completed) {
      // Signals must land in sequence order. Arrivals for seq were only
      // accepted after collective seq - 1 completed, but its signal may
      // still be in flight on another thread (we signal outside the lock so
      // that callbacks may re-enter arrive); it is a short, bounded call.
      while (seq > 1 && sem_.value() < seq - 1 && !sem_.failed()) detail::cpu_relax();
      if (status s = detail::signal_as_owner(sem_, this, seq, signalled, frontier_entry{axis_, seq}); !s) {
        return s.error_value();
      }
      if (observer_ != nullptr) observer_(observer_context_, axis_, seq);
    }
    return out;
  }

  /// Announces the signal that collective `k` will make, ahead of its
  /// completion (submit before wait): `joined` is the frontier it will
  /// carry, its producer (axis(), k). For a scheduler that knows the join
  /// in advance (the scenario simulator); the channel's semaphore takes no
  /// announcement from anyone else (its writes are reserved). Errors as
  /// submit_signal.
  status announce(std::uint64_t k, const Frontier& joined) noexcept {
    return detail::submit_signal_as_owner(sem_, this, k, joined, frontier_entry{axis_, k});
  }

  /// Fails the channel's semaphore (sticky; first error wins): every waiter
  /// on it, and every later arrive, gets `e`.
  bool fail(error e) noexcept { return sem_.fail(e); }

  /// Reports each completed collective k to `tracker.advance(axis(), k)`.
  /// The tracker must outlive the channel and know its axis.
  template <class Tracker>
  void track_completion(Tracker& tracker) noexcept {
    observer_context_ = &tracker;
    observer_ = [](void* context, causal::axis a, std::uint64_t k) noexcept {
      (void)static_cast<Tracker*>(context)->advance(a, k);
    };
  }

 private:
  const causal::axis axis_;
  const std::size_t count_;
  status setup_{};
  void (*observer_)(void*, causal::axis, std::uint64_t) noexcept = nullptr;
  void* observer_context_ = nullptr;
  Semaphore sem_;

  // Guarded by lock_.
  mutable detail::spin_lock lock_;
  std::uint64_t collecting_ = 1;
  std::size_t arrived_count_ = 0;
  Frontier pending_{};
  std::array<std::uint64_t, MaxParticipants> arrived_{};
};

/// The default channel: causal::frontier, causal::semaphore, 64 participants.
using collective_channel = basic_collective_channel<>;

//===-- helpers over queues -------------------------------------------------===//

/// A queue the collective helpers can drive: a `basic_queue` or anything
/// with its axis/knowledge/learn/submit/backend().issue_wait shape.
template <class Q>
concept collective_queue =
    requires(Q& q, const Q& cq, const typename Q::frontier_type& f,
             typename Q::semaphore_type& s, std::uint64_t v,
             const typename Q::operation_type& op) {
      { cq.axis() } -> std::same_as<causal::axis>;
      { cq.epoch() } -> std::same_as<std::uint64_t>;
      { cq.knowledge() } -> std::same_as<const typename Q::frontier_type&>;
      { cq.deferred_count() } -> std::convertible_to<std::size_t>;
      q.learn(f);
      { q.backend().issue_wait(s, v) } -> std::same_as<status>;
      q.submit(std::span<const typename Q::wait_type>{}, std::span<const typename Q::signal_type>{},
               op);
    };

/// Gives `q` the entry (C, k) of `channel`'s collective `k`, and nothing
/// else: when k is reached, by learning it; otherwise by first issuing a
/// device wait on the channel semaphore at k through `q.backend()`, so that
/// q's next submission starts after the whole collective. Returns whether a
/// device wait was issued.
///
/// Errors (nothing changes): `invalid_argument` for k = 0 or a collective
/// that has not started (k > in_progress()); the semaphore's failure;
/// `failed_precondition` when the backend cannot wait for a value not yet
/// signalled (binary events) and k is not reached; the backend's
/// issue_wait error.
template <collective_queue Queue, class Channel>
  requires std::same_as<typename Queue::semaphore_type, typename Channel::semaphore_type>
result<bool> join_collective(Queue& q, Channel& channel, std::uint64_t k) noexcept {
  if (k == 0 || k > channel.in_progress()) {
    return error{errc::invalid_argument, "join_collective: collective not started", k};
  }
  auto& sem = channel.semaphore();
  if (const auto f = sem.failure(); f) return *f;
  bool waited = false;
  if (sem.value() < k) {
    using backend_t = std::remove_cvref_t<decltype(q.backend())>;
    if constexpr (requires { backend_t::waits_before_signal; }) {
      if constexpr (!backend_t::waits_before_signal) {
        return error{errc::failed_precondition,
                     "join_collective: backend cannot wait before the collective completes", k};
      }
    }
    if (status s = q.backend().issue_wait(sem, k); !s) return s.error_value();
    waited = true;
  }
  q.learn(channel.entry_of(k));
  return waited;
}

namespace detail {

template <class Queue, class Channel>
status check_collective_participants(const Channel& channel,
                                     std::span<Queue* const> participants) noexcept {
  if (status s = channel.setup_status(); !s) return s;
  if (participants.size() != channel.participant_count()) {
    return error{errc::invalid_argument,
                 "collective: participant list size differs from the channel's count",
                 participants.size()};
  }
  for (std::size_t i = 0; i < participants.size(); ++i) {
    if (participants[i] == nullptr) {
      return error{errc::invalid_argument, "collective: null participant", i};
    }
    if (participants[i]->deferred_count() != 0) {
      return error{errc::failed_precondition,
                   "collective: participant holds deferred submissions", i};
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (participants[j] == participants[i]) {
        return error{errc::invalid_argument, "collective: participant listed twice", i};
      }
    }
  }
  if (const auto f = channel.semaphore().failure(); f) return *f;
  if (channel.arrived_count() != 0) {
    return error{errc::failed_precondition,
                 "collective: the collective in progress already has arrivals",
                 channel.in_progress()};
  }
  return {};
}

/// Submits `op` on every participant, recording contributions; on a
/// failure part-way fails the channel so that nobody waits forever.
template <class Queue, class Channel, class Contribution>
status submit_contributions(Channel& channel, std::span<Queue* const> participants,
                            const typename Queue::operation_type& op, std::uint64_t k,
                            Contribution* out) noexcept {
  for (std::size_t i = 0; i < participants.size(); ++i) {
    Queue& q = *participants[i];
    auto r = q.submit(std::span<const typename Queue::wait_type>{},
                      std::span<const typename Queue::signal_type>{}, op);
    if (!r) {
      channel.fail(r.error_value());
      return r.error_value();
    }
    out[i].sequence = k;
    out[i].epoch = r->epoch;
    out[i].frontier = q.knowledge();
  }
  return {};
}

}  // namespace detail

/// Starts the next collective k on `participants` (participant i is
/// `participants[i]`) without a host round trip: each submits `op` (its
/// contribution; `contributions[i]` receives its epoch and frontier), then
/// each joins k (join_collective: a device wait on the channel semaphore at
/// k and learn {(C, k)}). The caller calls `channel.arrive(i, k,
/// contributions[i].frontier)` when participant i's op has completed.
/// Returns k.
///
/// Errors: before anything is submitted (nothing changes):
/// `invalid_argument` (wrong participant count, null or repeated
/// participant, `contributions` too small), `failed_precondition` (a
/// participant holds deferred submissions, or the collective in progress
/// already has arrivals), the channel's setup error or failure. A submit
/// or issue_wait failure part-way fails the channel with that error (the
/// ops already submitted would otherwise leave waiters stranded) and
/// returns it.
template <collective_queue Queue, class Channel>
  requires std::same_as<typename Queue::frontier_type, typename Channel::frontier_type>
result<std::uint64_t> submit_collective(
    Channel& channel, std::span<Queue* const> participants,
    const typename Queue::operation_type& op,
    std::span<collective_contribution<typename Channel::frontier_type>> contributions) noexcept {
  if (status s = detail::check_collective_participants(channel, participants); !s) {
    return s.error_value();
  }
  if (contributions.size() < participants.size()) {
    return error{errc::invalid_argument, "submit_collective: contributions span too small",
                 contributions.size()};
  }
  const std::uint64_t k = channel.in_progress();
  if (status s = detail::submit_contributions(channel, participants, op, k, contributions.data());
      !s) {
    return s.error_value();
  }
  for (Queue* q : participants) {
    if (auto joined = join_collective(*q, channel, k); !joined) {
      channel.fail(joined.error_value());
      return joined.error_value();
    }
  }
  return k;
}

/// Runs the next collective k on `participants` synchronously: each submits
/// `op`; `complete(i, queue, epoch)` (returning status) drives or awaits
/// the completion of participant i's op at `epoch`; each then arrives with
/// its frontier at the contribution; finally each learns {(C, k)} (k is
/// reached, so no device wait). Returns k.
///
/// Errors: as submit_collective before anything is submitted; a submit or
/// `complete` failure fails the channel and is returned.
template <collective_queue Queue, class Channel, class Complete>
  requires std::same_as<typename Queue::frontier_type, typename Channel::frontier_type> &&
           std::is_invocable_r_v<status, Complete&, std::size_t, Queue&, std::uint64_t>
result<std::uint64_t> run_collective(Channel& channel, std::span<Queue* const> participants,
                                     const typename Queue::operation_type& op,
                                     Complete&& complete) noexcept {
  if (status s = detail::check_collective_participants(channel, participants); !s) {
    return s.error_value();
  }
  const std::uint64_t k = channel.in_progress();
  std::array<collective_contribution<typename Channel::frontier_type>, Channel::max_participants>
      contributions;
  if (status s = detail::submit_contributions(channel, participants, op, k, contributions.data());
      !s) {
    return s.error_value();
  }
  for (std::size_t i = 0; i < participants.size(); ++i) {
    status done = std::invoke(complete, i, *participants[i], contributions[i].epoch);
    if (!done) {
      channel.fail(done.error_value());
      return done.error_value();
    }
    if (auto a = channel.arrive(i, k, contributions[i].frontier); !a) {
      channel.fail(a.error_value());
      return a.error_value();
    }
  }
  for (Queue* q : participants) {
    if (auto joined = join_collective(*q, channel, k); !joined) return joined.error_value();
  }
  return k;
}

CAUSAL_END_NAMESPACE
