// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// collective (MPI): a collective channel whose participants are the ranks
// of an MPI communicator -- one collective axis C for the whole job, so an
// all-reduce over N ranks costs each rank's frontier one entry, not N.
//
// Model. The cross-rank form of <causal/collective.hpp>. Every rank of a
// communicator creates the channel at the same point (`create` is
// collective: it duplicates the communicator, MPI_ERRORS_RETURN on the
// duplicate) with the same channel id. Round k: each rank contributes its
// frontier (its queue's knowledge at its contribution) and the ranks run,
// on the private communicator,
//
//   1. the frontier exchange: one MPI_Iallreduce of a fixed-size slot
//      {agreement header, frontier wire bytes} with a custom commutative
//      MPI_Op that joins the frontiers (C pinned) and checks that every
//      rank runs the same round of the same kind;
//   2. when the ranks agree and the round is an all-reduce, the user's data
//      MPI_Iallreduce (count, datatype and op as given);
//
// after which each rank's local channel semaphore is signalled to k with
// the join of all contributions plus (C, k), producer entry (C, k). A
// rank's queue then learns {(C, k)} only (`entry_of(k)`): one entry
// whatever the number of ranks. `covers(knowledge, requirement)` resolves a
// requirement naming another rank's pre-collective epoch through the
// semaphore's frontier at k, exactly as the in-process channel does.
//
//   rank 0: ...op(R0:5)--[round k]--op(R0:7)    knowledge {R0:7, C:k}
//   rank 1: ...op(R1:9)--[round k]--op(R1:11)   knowledge {R1:11, C:k}
//   semaphore at k on every rank: {R0:5, R1:9, C:k}, producer (C, k)
//
// The axis C. Rank 0 allocates it from its rank axis allocator
// (domain::collective, machine = rank 0) and broadcasts it once inside
// `create`, which is collective anyway. Deriving it instead from the
// channel id (machine 0, ordinal = id) would need no message, but could
// alias an axis that rank 0's allocator hands out for an in-process
// channel, which is unsound; the broadcast costs one small MPI_Bcast per
// channel, never per round. The channel id is checked instead: every rank
// must pass the same id (and the same frontier capacity), so two ranks that
// create channels in different orders get a clear error, not crossed
// channels.
//
// Why an all-reduce with a merging MPI_Op, not an all-gather. The slot has
// a fixed size (64 + max_serialized_size<Frontier> bytes, rounded up to
// 8: 320 for the default frontier) whatever N, so the exchange costs
// O(log N) steps of constant size, where an all-gather moves N slots to
// every rank. The join
// is a valid MPI reduction: the per-axis maximum, with evict_and_taint's
// strict total order when it overflows, is associative and commutative, so
// every rank computes the same result whatever order MPI combines in. The
// slot is one element of a contiguous derived datatype, so MPI never hands
// the op a partial slot. The header's fields reduce by min and max (round
// number, round signature, axis) and by OR (problem flags), so after the
// exchange every rank knows the same thing: whether all ranks agree, and if
// not, which lowest rank flagged a problem. Errors found locally (a
// contribution that already holds (C, k), a bad datatype, a channel failed
// on this rank) travel in-band this way, so no rank is left blocked in a
// collective that a peer skipped.
//
// Overflow. When the join has more axes than Frontier::capacity, the
// exchange evicts the lowest-ranked entries (never C) and taints the
// result: the semaphore's frontier at k is then tainted (a sound subset),
// `stats().tainted_rounds` counts it; knowledge is never dropped silently.
//
// Errors. Every rank sees the same verdict for a round. Disagreement on
// the kind or data size of a round, or a bad argument on some rank: the
// round is not run (no data collective), every rank returns the same
// error, and the channel stays usable for round k. Disagreement on the
// round number or the axis, undecodable slots, or a channel failed on
// some rank: the semaphore fails everywhere with that error. An MPI error
// (the private communicator returns errors): the semaphore fails with an
// error naming the call and, as position, MPI's error code
// (`last_failure()` has MPI_Error_string's text); the channel makes no
// more MPI calls on the round (the destructor still frees the
// communicator; if MPI failed a wait on a round in flight, the state is
// kept, never freed, since MPI may still write into its slots), but it
// stays a valid object: observers, covers and the destructor work, and
// every later round returns the failure. Rounds
// complete in order, one at a time: starting a round while one is in
// flight, or testing when none is, is `failed_precondition` and changes
// nothing (a local error: every rank must make the same calls).
//
// Thread safety: the round calls (complete_round, all_reduce, start_*,
//                test, wait), the round-state observers (next_round,
//                in_flight, stats, last_failure) and the destructor are
//                called by one thread at a time (MPI must provide
//                MPI_THREAD_FUNNELED when that is always the main thread,
//                MPI_THREAD_SERIALIZED otherwise). axis, channel_id, rank,
//                size, semaphore, completed, frontier_at, entry_of, covers
//                and fail may be called from any thread, concurrently with
//                them.
// Memory order:  a round's signal releases; a thread that observes the
//                semaphore at >= k acquires (see <causal/semaphore.hpp>).
//                Across ranks, the MPI collective orders every rank's
//                contribution before every rank's signal.
// Blocking/allocation: complete_round, all_reduce and wait block in MPI
//                (collective: until every rank has joined the round).
//                start_round, start_all_reduce and test never block: a
//                progress process (e.g. a causal::executor process) can
//                drive test() until the round completes. The channel never
//                allocates in a round (MPI may: Open MPI builds a schedule
//                per non-blocking collective); create() allocates the state
//                and two slots, and calls MPI_Comm_dup, MPI_Bcast and
//                two MPI_Allreduce (collective, blocking). The destructor
//                waits for a round still in flight (every rank must have
//                started it).
// Size:          one pointer; the state lives on the heap (MPI keeps the
//                slot addresses while a round is in flight): about 4.4 KiB
//                for the defaults -- the semaphore (3 200 bytes), the last
//                join (200), two 320-byte slots, an mpi_failure (~290).
// Configuration: Frontier (default causal::frontier), Semaphore (default
//                basic_semaphore<Frontier>); at run time
//                mpi_collective_options: comm, channel id, semaphore scope.
// See also:      <causal/collective.hpp>, <causal/adapters/mpi/rank_axes.hpp>,
//                <causal/adapters/mpi/mpi_carrier.hpp>, <causal/frontier_wire.hpp>,
//                adapters/mpi/README.md.
#pragma once

#include <causal/adapters/mpi/mpi_carrier.hpp>
#include <causal/axis.hpp>
#include <causal/config.hpp>
#include <causal/frontier.hpp>
#include <causal/frontier_wire.hpp>
#include <causal/result.hpp>
#include <causal/semaphore.hpp>

#include <mpi.h>

#include <array>
#include <climits>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <utility>

CAUSAL_BEGIN_NAMESPACE

namespace mpi {

/// Runtime options of `basic_mpi_collective_channel::create`.
struct mpi_collective_options {
  /// The communicator to duplicate (collectively); the channel's ranks are
  /// its ranks. Errors inside MPI_Comm_dup follow `comm`'s error handler.
  MPI_Comm comm = MPI_COMM_WORLD;
  /// The channel's name: every rank must pass the same id (checked).
  std::uint64_t channel_id = 0;
  /// The scope of the channel's local semaphore.
  semaphore_scope scope = semaphore_scope::device_group;
};

/// Counters of one rank's channel.
struct mpi_collective_stats {
  std::uint64_t rounds = 0;          ///< rounds completed (the semaphore's value)
  std::uint64_t data_rounds = 0;     ///< of which all-reduce rounds
  std::uint64_t tainted_rounds = 0;  ///< rounds whose join overflowed (tainted)
  std::uint64_t refused_rounds = 0;  ///< rounds every rank refused (argument disagreement)
};

/// What `create` needs to obtain the collective axis on rank 0: a rank
/// axis allocator (basic_rank_axis_allocator) or anything shaped like one,
/// such as the rank's basic_node (its `allocate` announces the axis to the
/// peers). A rank must take all its axes from one source: two allocators
/// of the same rank hand out the same axes.
template <class A>
concept collective_axis_source = requires(A& a) {
  { a.allocate(domain::collective) } -> std::same_as<result<axis>>;
};

namespace detail {

/// The agreement header at the start of every exchange slot. Native byte
/// order: the ranks of one job share it (the frontier part is the portable
/// wire form). Each field reduces as its comment says.
struct collective_slot_header {
  std::uint32_t magic = 0;             ///< equal on every slot, else flag_malformed
  std::uint32_t flags = 0;             ///< OR
  std::uint64_t round_min = 0;         ///< min of the ranks' round numbers
  std::uint64_t round_max = 0;         ///< max
  std::uint64_t signature_min = 0;     ///< min of the round signatures (see below)
  std::uint64_t signature_max = 0;     ///< max
  std::uint64_t axis_min = 0;          ///< min of the ranks' channel axes (raw)
  std::uint64_t axis_max = 0;          ///< max
  std::uint32_t first_flagged = 0;     ///< min of the ranks that set a flag (else UINT32_MAX)
  std::uint32_t wire_bytes = 0;        ///< length of the frontier's wire form that follows
};
static_assert(sizeof(collective_slot_header) == 64, "the slot header is 64 bytes");

inline constexpr std::uint32_t collective_slot_magic = 0x31434d43;  // "CMC1"
/// The signature of a plain round (complete_round); an all-reduce round's
/// signature is its data size in bytes (count * MPI_Type_size).
inline constexpr std::uint64_t plain_round_signature = ~std::uint64_t{0};

enum collective_flag : std::uint32_t {
  flag_claims_round = 1U << 0,  ///< a contribution already holds (C, k) or later
  flag_malformed = 1U << 1,     ///< a slot failed to decode (bad magic or wire bytes)
  flag_overflow = 1U << 2,      ///< the join exceeded the capacity: evicted and tainted
  flag_failed = 1U << 3,        ///< the channel had failed on some rank before the round
  flag_bad_argument = 1U << 4,  ///< negative count, bad datatype, or data too large
};

/// Flags that refuse the round on every rank (the channel stays usable).
inline constexpr std::uint32_t refusing_flags = flag_claims_round | flag_bad_argument;

/// The number of distinct axes in the union of `a` and `b`.
template <class F>
[[nodiscard]] std::size_t union_size(const F& a, const F& b) noexcept {
  const auto ax = a.axes();
  const auto bx = b.axes();
  std::size_t i = 0;
  std::size_t j = 0;
  std::size_t n = 0;
  while (i < ax.size() && j < bx.size()) {
    if (ax[i] == bx[j]) {
      ++i;
      ++j;
    } else if (ax[i] < bx[j]) {
      ++i;
    } else {
      ++j;
    }
    ++n;
  }
  return n + (ax.size() - i) + (bx.size() - j);
}

}  // namespace detail

//===-- basic_mpi_collective_channel -------------------------------------------===//

/// A collective channel over the ranks of an MPI communicator; see the
/// file comment. Movable, not copyable.
///
/// Template parameters:
/// - `Frontier`: the frontier type of contributions and signals (every rank
///   must use the same; its capacity is checked at create()).
/// - `Semaphore`: the local channel semaphore (constructible from (initial
///   value, semaphore_scope); frontier type `Frontier`).
///
/// Example:
/// ```
/// causal::mpi::rank_axis_allocator axes(rank);
/// auto ch = causal::mpi::mpi_collective_channel::create({MPI_COMM_WORLD, 7}, axes);
/// auto k = ch->all_reduce(in, out, n, MPI_FLOAT, MPI_SUM, queue.knowledge());
/// if (k) queue.learn(ch->entry_of(*k));          // one entry, whatever N
/// ```
template <frontier_type Frontier = frontier, class Semaphore = basic_semaphore<Frontier>>
  requires std::same_as<typename Semaphore::frontier_type, Frontier>
class basic_mpi_collective_channel {
  using layout = typename Frontier::layout_type;
  /// The exchange joins with eviction, whatever Frontier's policy: an
  /// overflow then taints (and is flagged) instead of failing mid-reduction.
  using exchange_frontier = basic_frontier<Frontier::capacity, layout, evict_and_taint>;

 public:
  using frontier_type = Frontier;
  using semaphore_type = Semaphore;

  /// Bytes of one exchange slot: the header and the largest wire form,
  /// rounded up to 8.
  static constexpr std::size_t slot_bytes =
      (sizeof(detail::collective_slot_header) + max_serialized_size<exchange_frontier> + 7) / 8 * 8;
  static_assert(slot_bytes <= static_cast<std::size_t>(INT_MAX), "slot must fit MPI's int count");

  /// Creates this rank's end of the channel; collective over
  /// `options.comm` (every rank calls it at the same point with the same
  /// channel id). Rank 0 allocates the collective axis from `rank0_axes`
  /// (the others do not touch theirs) and broadcasts it.
  ///
  /// Errors (the same on every rank once the communicator is duplicated):
  /// failed_precondition (MPI not initialized, or finalized); the MPI error
  /// of MPI_Comm_dup and the calls after it (device_lost and others, as
  /// position the MPI error code); resource_exhausted (rank 0's allocator
  /// gave no collective axis, position its errc); malformed (the broadcast
  /// axis is not a collective axis of this layout); invalid_argument (the
  /// ranks passed different channel ids, position the lowest rank that
  /// differs from rank 0; or different frontier capacities).
  template <collective_axis_source Axes>
  [[nodiscard]] static result<basic_mpi_collective_channel> create(
      const mpi_collective_options& options, Axes& rank0_axes) noexcept {
    int initialized = 0;
    int finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized == 0 || finalized != 0) {
      return error{errc::failed_precondition,
                   "mpi collective channel: MPI is not initialized (or already finalized)"};
    }
    std::unique_ptr<state> s(new (std::nothrow) state(options.scope));
    if (!s) return error{errc::resource_exhausted, "mpi collective channel: out of memory"};
    // Only completed rounds move the semaphore (keyed by the state, which
    // stays put when the channel moves).
    causal::detail::reserve_writes_if_able(s->sem, s.get());

    if (int rc = MPI_Comm_dup(options.comm, &s->comm); rc != MPI_SUCCESS) {
      s->comm = MPI_COMM_NULL;
      return s->mpi_error("MPI_Comm_dup", rc);
    }
    if (int rc = MPI_Comm_set_errhandler(s->comm, MPI_ERRORS_RETURN); rc != MPI_SUCCESS) {
      return s->mpi_error("MPI_Comm_set_errhandler", rc);
    }
    int rank = 0;
    int size = 0;
    MPI_Comm_rank(s->comm, &rank);
    MPI_Comm_size(s->comm, &size);
    s->rank = static_cast<std::uint32_t>(rank);
    s->size = static_cast<std::uint32_t>(size);

    // Rank 0 proposes {axis, channel id, capacity, allocation errc}; every
    // rank checks it against its own view.
    std::uint64_t proposal[4] = {0, options.channel_id, Frontier::capacity, 0};
    if (rank == 0) {
      result<causal::axis> a = rank0_axes.allocate(domain::collective);
      if (a) {
        proposal[0] = a->raw();
      } else {
        proposal[3] = static_cast<std::uint64_t>(a.error_value().code());
      }
    }
    if (int rc = MPI_Bcast(proposal, 4, MPI_UINT64_T, 0, s->comm); rc != MPI_SUCCESS) {
      return s->mpi_error("MPI_Bcast", rc);
    }
    // The verdict: the worst problem code (max; higher codes explain the
    // lower ones away) and the lowest rank whose id differs (min).
    enum : std::uint64_t {
      agreed = 0, wrong_capacity = 1, wrong_id = 2, bad_axis = 3, no_axis = 4
    };
    std::uint64_t problem = agreed;
    const causal::axis proposed{proposal[0]};
    if (proposal[0] == 0) {
      problem = no_axis;
    } else if (domain_of<layout>(proposed) != domain::collective) {
      problem = bad_axis;
    } else if (proposal[1] != options.channel_id) {
      problem = wrong_id;
    } else if (proposal[2] != Frontier::capacity) {
      problem = wrong_capacity;
    }
    std::uint64_t verdict_in[2] = {problem, problem == wrong_id ? s->rank : ~std::uint64_t{0}};
    std::uint64_t worst = 0;
    std::uint64_t lowest = 0;
    if (int rc = MPI_Allreduce(&verdict_in[0], &worst, 1, MPI_UINT64_T, MPI_MAX, s->comm);
        rc != MPI_SUCCESS) {
      return s->mpi_error("MPI_Allreduce", rc);
    }
    if (int rc = MPI_Allreduce(&verdict_in[1], &lowest, 1, MPI_UINT64_T, MPI_MIN, s->comm);
        rc != MPI_SUCCESS) {
      return s->mpi_error("MPI_Allreduce", rc);
    }
    switch (worst) {
      case no_axis:
        return error{errc::resource_exhausted,
                     "mpi collective channel: rank 0's allocator gave no collective axis "
                     "(position: its errc)",
                     proposal[3]};
      case bad_axis:
        return error{errc::malformed,
                     "mpi collective channel: rank 0's axis is not a collective axis of this "
                     "layout (position: the raw axis)",
                     proposal[0]};
      case wrong_id:
        return error{errc::invalid_argument,
                     "mpi collective channel: ranks passed different channel ids (position: the "
                     "lowest rank whose id differs from rank 0's)",
                     lowest};
      case wrong_capacity:
        return error{errc::invalid_argument,
                     "mpi collective channel: ranks use frontiers of different capacities"};
      default: break;
    }
    s->channel_axis = proposed;
    s->channel_id = options.channel_id;

    if (int rc = MPI_Type_contiguous(static_cast<int>(slot_bytes), MPI_BYTE, &s->slot_type);
        rc != MPI_SUCCESS) {
      s->slot_type = MPI_DATATYPE_NULL;
      return s->mpi_error("MPI_Type_contiguous", rc);
    }
    if (int rc = MPI_Type_commit(&s->slot_type); rc != MPI_SUCCESS) {
      return s->mpi_error("MPI_Type_commit", rc);
    }
    if (int rc = MPI_Op_create(&merge_slots, 1, &s->merge_op); rc != MPI_SUCCESS) {
      s->merge_op = MPI_OP_NULL;
      return s->mpi_error("MPI_Op_create", rc);
    }
    return basic_mpi_collective_channel(std::move(s));
  }

  basic_mpi_collective_channel(basic_mpi_collective_channel&&) noexcept = default;
  basic_mpi_collective_channel& operator=(basic_mpi_collective_channel&& other) noexcept {
    if (this != &other) {
      release();
      state_ = std::move(other.state_);
    }
    return *this;
  }
  basic_mpi_collective_channel(const basic_mpi_collective_channel&) = delete;
  basic_mpi_collective_channel& operator=(const basic_mpi_collective_channel&) = delete;

  /// Waits for a round still in flight, then frees the channel's MPI
  /// objects (before MPI_Finalize: destroy channels before the session).
  ~basic_mpi_collective_channel() { release(); }

  //===-- observers ---------------------------------------------------------===//

  /// The collective axis C (the same on every rank).
  [[nodiscard]] causal::axis axis() const noexcept { return state_->channel_axis; }
  [[nodiscard]] std::uint64_t channel_id() const noexcept { return state_->channel_id; }
  [[nodiscard]] std::uint32_t rank() const noexcept { return state_->rank; }
  [[nodiscard]] std::uint32_t size() const noexcept { return state_->size; }
  /// The private communicator (for diagnostics; do not run collectives on it).
  [[nodiscard]] MPI_Comm communicator() const noexcept { return state_->comm; }

  /// This rank's channel semaphore: its value is the last completed round.
  /// Wait on it; only the channel signals it (reserve_writes).
  [[nodiscard]] Semaphore& semaphore() noexcept { return state_->sem; }
  [[nodiscard]] const Semaphore& semaphore() const noexcept { return state_->sem; }
  [[nodiscard]] std::uint64_t completed() const noexcept { return state_->sem.value(); }
  /// The round the next start_* runs (or the one in flight).
  [[nodiscard]] std::uint64_t next_round() const noexcept { return state_->next_round; }
  /// True while a non-blocking round is in flight.
  [[nodiscard]] bool in_flight() const noexcept { return state_->phase != round_phase::idle; }
  [[nodiscard]] mpi_collective_stats stats() const noexcept { return state_->counters; }
  /// The last MPI failure, with MPI's words for it (call == null if none).
  [[nodiscard]] const mpi_failure& last_failure() const noexcept { return state_->failure; }

  /// What a waiter on the semaphore at `k` imports (see basic_semaphore).
  [[nodiscard]] auto frontier_at(std::uint64_t k) const noexcept {
    return state_->sem.frontier_at(k);
  }

  /// The compressed entry of round `k`, {(C, k)}: what a rank's queue learns.
  [[nodiscard]] Frontier entry_of(std::uint64_t k) const noexcept {
    Frontier one;
    (void)one.insert_or_raise(state_->channel_axis, k);  // one entry always fits
    return one;
  }

  /// Returns true when `knowledge` covers `requirement`, directly or
  /// through the channel: it holds (C, k), round k has been reached on this
  /// rank, and the semaphore's frontier at k covers the requirement. Sound:
  /// reaching k means every rank's contribution to k, and so its past, was
  /// complete. A value reached by an external signal never counts.
  [[nodiscard]] bool covers(const Frontier& knowledge, frontier_entry requirement) const noexcept {
    if (knowledge.epoch_of(requirement.axis) >= requirement.epoch) return true;
    const std::uint64_t k = knowledge.epoch_of(state_->channel_axis);
    if (k == 0) return false;
    const auto imported = state_->sem.frontier_at(k);
    if (!imported || !imported->reached || imported->value_tainted) return false;
    return imported->frontier.epoch_of(requirement.axis) >= requirement.epoch;
  }

  /// Returns true when `knowledge` covers every entry of `requirement`;
  /// false for a tainted requirement (it may have lost entries).
  [[nodiscard]] bool covers(const Frontier& knowledge, const Frontier& requirement) const noexcept {
    if (requirement.tainted()) return false;
    for (const frontier_entry e : requirement) {
      if (!covers(knowledge, e)) return false;
    }
    return true;
  }

  /// Fails this rank's channel semaphore (sticky; first error wins). The
  /// other ranks learn it at the next round, which every rank then fails.
  bool fail(error e) noexcept { return state_->sem.fail(e); }

  //===-- blocking rounds ---------------------------------------------------===//

  /// Runs round k = next_round() with no data collective (for users who
  /// run their own MPI collective, before or after): the frontier exchange
  /// only, then the signal. Blocks until every rank has joined. Returns k.
  /// Errors: see the file comment and start_round.
  result<std::uint64_t> complete_round(const Frontier& mine) noexcept {
    if (status s = start_round(mine); !s) return s.error_value();
    return wait();
  }

  /// Runs round k = next_round() as an MPI_Allreduce of `count` elements of
  /// `datatype` with `op` (`send` may be MPI_IN_PLACE), after the frontier
  /// exchange; blocks until every rank has joined. Returns k.
  result<std::uint64_t> all_reduce(const void* send, void* recv, int count, MPI_Datatype datatype,
                                   MPI_Op op, const Frontier& mine) noexcept {
    if (status s = start_all_reduce(send, recv, count, datatype, op, mine); !s) {
      return s.error_value();
    }
    return wait();
  }

  //===-- non-blocking rounds -----------------------------------------------===//

  /// Starts round k = next_round() with no data collective; never blocks.
  /// Drive it with test() or wait(). Local errors (nothing changes, no MPI
  /// call): failed_precondition while a round is in flight; the failure of
  /// a channel whose failure every rank already knows.
  status start_round(const Frontier& mine) noexcept {
    return start(mine, detail::plain_round_signature, false, {});
  }

  /// Starts round k = next_round() as an all-reduce (see all_reduce); never
  /// blocks. `send` and `recv` must stay valid until the round completes.
  /// A negative count or a bad datatype is flagged in-band: every rank then
  /// returns invalid_argument from test()/wait().
  status start_all_reduce(const void* send, void* recv, int count, MPI_Datatype datatype,
                          MPI_Op op, const Frontier& mine) noexcept {
    std::uint64_t signature = 0;
    bool bad = count < 0 || datatype == MPI_DATATYPE_NULL;
    if (!bad) {
      int type_size = 0;
      if (MPI_Type_size(datatype, &type_size) != MPI_SUCCESS || type_size < 0) {
        bad = true;
      } else {
        signature = static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(type_size);
      }
    }
    return start(mine, signature, bad, data_args{send, recv, count, datatype, op});
  }

  /// Advances the round in flight without blocking. Returns the round
  /// number once it has completed (the semaphore then holds it), nullopt
  /// while it runs, or the round's error (see the file comment);
  /// failed_precondition when no round is in flight.
  result<std::optional<std::uint64_t>> test() noexcept { return advance(false); }

  /// Blocks until the round in flight completes; returns its number or its
  /// error (failed_precondition when no round is in flight).
  result<std::uint64_t> wait() noexcept {
    auto r = advance(true);
    if (!r) return r.error_value();
    CAUSAL_ASSERT(r->has_value(), "a blocking advance completes the round");
    return **r;
  }

 private:
  enum class round_phase : std::uint8_t { idle, exchanging, reducing };

  struct data_args {
    const void* send = nullptr;
    void* recv = nullptr;
    int count = 0;
    MPI_Datatype datatype = MPI_DATATYPE_NULL;
    MPI_Op op = MPI_OP_NULL;
  };

  struct state {
    explicit state(semaphore_scope scope) noexcept : sem(0, scope) {}
    state(const state&) = delete;
    state& operator=(const state&) = delete;

    /// Frees the MPI objects (also those of a create() that failed part-way).
    ~state() {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (finalized != 0) return;
      if (request != MPI_REQUEST_NULL) {
        // A collective request cannot be cancelled: wait for it.
        MPI_Wait(&request, MPI_STATUS_IGNORE);
      }
      if (merge_op != MPI_OP_NULL) MPI_Op_free(&merge_op);
      if (slot_type != MPI_DATATYPE_NULL) MPI_Type_free(&slot_type);
      if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    }

    error mpi_error(const char* call, int rc) noexcept {
      failure.call = call;
      failure.code = rc;
      failure.error_class = MPI_SUCCESS;
      MPI_Error_class(rc, &failure.error_class);
      failure.peer = -1;
      int length = 0;
      if (MPI_Error_string(rc, failure.text.data(), &length) != MPI_SUCCESS) failure.text[0] = '\0';
      return error{causal::mpi::detail::errc_of_mpi_class(failure.error_class),
                   "mpi collective channel: an MPI call failed (see last_failure(); position: the "
                   "MPI error code)",
                   static_cast<std::uint64_t>(static_cast<std::int64_t>(rc))};
    }

    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Datatype slot_type = MPI_DATATYPE_NULL;
    MPI_Op merge_op = MPI_OP_NULL;
    causal::axis channel_axis{};
    std::uint64_t channel_id = 0;
    std::uint32_t rank = 0;
    std::uint32_t size = 0;
    Semaphore sem;

    // Round state: touched only by the thread that drives rounds.
    round_phase phase = round_phase::idle;
    std::uint64_t next_round = 1;
    MPI_Request request = MPI_REQUEST_NULL;
    data_args data{};
    bool with_data = false;
    bool failure_shared = false;  // every rank knows the semaphore failed
    bool mpi_broken = false;      // an MPI call failed: make no more
    bool abandoned_request = false;  // a failed wait/test left `request` undefined
    Frontier joined{};
    mpi_collective_stats counters{};
    mpi_failure failure{};
    alignas(8) std::array<std::byte, slot_bytes> send_slot{};
    alignas(8) std::array<std::byte, slot_bytes> recv_slot{};
  };

  explicit basic_mpi_collective_channel(std::unique_ptr<state> s) noexcept : state_(std::move(s)) {}

  //===-- the exchange op ---------------------------------------------------===//

  static detail::collective_slot_header read_header(const std::byte* slot) noexcept {
    detail::collective_slot_header h;
    std::memcpy(&h, slot, sizeof h);
    return h;
  }

  static void write_header(std::byte* slot, const detail::collective_slot_header& h) noexcept {
    std::memcpy(slot, &h, sizeof h);
  }

  static std::span<const std::byte> wire_of(const std::byte* slot,
                                            const detail::collective_slot_header& h) noexcept {
    const std::size_t n = h.wire_bytes <= slot_bytes - sizeof h ? h.wire_bytes : 0;
    return {slot + sizeof h, n};
  }

  /// Joins slot `in` into slot `inout` (one slot): the MPI_Op's body.
  static void merge_one(const std::byte* in, std::byte* inout) noexcept {
    using header = detail::collective_slot_header;
    const header a = read_header(in);
    header out = read_header(inout);
    const bool both_valid =
        a.magic == detail::collective_slot_magic && out.magic == detail::collective_slot_magic;
    out.flags |= a.flags;
    if (!both_valid) out.flags |= detail::flag_malformed;
    out.magic = detail::collective_slot_magic;
    out.round_min = a.round_min < out.round_min ? a.round_min : out.round_min;
    out.round_max = a.round_max > out.round_max ? a.round_max : out.round_max;
    out.signature_min = a.signature_min < out.signature_min ? a.signature_min : out.signature_min;
    out.signature_max = a.signature_max > out.signature_max ? a.signature_max : out.signature_max;
    out.axis_min = a.axis_min < out.axis_min ? a.axis_min : out.axis_min;
    out.axis_max = a.axis_max > out.axis_max ? a.axis_max : out.axis_max;
    out.first_flagged = a.first_flagged < out.first_flagged ? a.first_flagged : out.first_flagged;
    if ((out.flags & detail::flag_malformed) == 0) {
      auto fa = deserialize<exchange_frontier>(wire_of(in, a));
      auto fb = deserialize<exchange_frontier>(wire_of(inout, read_header(inout)));
      if (!fa || !fb) {
        out.flags |= detail::flag_malformed;
      } else {
        // The union's size decides the overflow flag, not the merge's
        // taint: a tainted input would hide it, and the flag must not
        // depend on the order MPI combines slots in.
        if (detail::union_size(*fa, *fb) > exchange_frontier::capacity) {
          out.flags |= detail::flag_overflow;
        }
        if (out.axis_min == out.axis_max) {
          fb->merge(*fa, causal::axis{out.axis_min});  // C is never evicted
        } else {
          fb->merge(*fa);
        }
        auto written = serialize(*fb, std::span<std::byte>(inout + sizeof(header),
                                                            slot_bytes - sizeof(header)));
        // The bound max_serialized_size always fits.
        out.wire_bytes = written ? static_cast<std::uint32_t>(*written) : 0;
        if (!written) out.flags |= detail::flag_malformed;
      }
    }
    write_header(inout, out);
  }

  static void merge_slots(void* in, void* inout, int* len, MPI_Datatype*) noexcept {
    auto* a = static_cast<const std::byte*>(in);
    auto* b = static_cast<std::byte*>(inout);
    for (int i = 0; i < *len; ++i) {
      merge_one(a + static_cast<std::size_t>(i) * slot_bytes,
                b + static_cast<std::size_t>(i) * slot_bytes);
    }
  }

  //===-- rounds ------------------------------------------------------------===//

  status start(const Frontier& mine, std::uint64_t signature, bool bad_argument,
               data_args data) noexcept {
    state& s = *state_;
    if (s.phase != round_phase::idle) {
      return error{errc::failed_precondition,
                   "mpi collective channel: a round is already in flight (rounds run one at a "
                   "time, in order)",
                   s.next_round};
    }
    const std::optional<error> failed = s.sem.failure();
    if (failed && (s.failure_shared || s.mpi_broken)) return *failed;

    const std::uint64_t k = s.next_round;
    const causal::axis c = s.channel_axis;
    detail::collective_slot_header h;
    h.magic = detail::collective_slot_magic;
    h.round_min = h.round_max = k;
    h.signature_min = h.signature_max = signature;
    h.axis_min = h.axis_max = c.raw();
    h.first_flagged = ~std::uint32_t{0};
    if (failed) h.flags |= detail::flag_failed;  // spread a local failure in-band
    if (bad_argument) h.flags |= detail::flag_bad_argument;
    if (mine.epoch_of(c) >= k) h.flags |= detail::flag_claims_round;
    if (h.flags != 0) h.first_flagged = s.rank;

    exchange_frontier contribution;
    contribution.merge(mine);  // same capacity: never evicts
    if (mine.size() == Frontier::capacity && !mine.contains(c)) {
      h.flags |= detail::flag_overflow;  // (C, k) evicts an entry and taints
    }
    contribution.insert_or_raise(c, k);
    auto written = serialize(contribution, std::span<std::byte>(s.send_slot.data() + sizeof h,
                                                                 slot_bytes - sizeof h));
    CAUSAL_ASSERT(written.ok(), "max_serialized_size bounds every contribution");
    h.wire_bytes = static_cast<std::uint32_t>(*written);
    write_header(s.send_slot.data(), h);

    const int rc = MPI_Iallreduce(s.send_slot.data(), s.recv_slot.data(), 1, s.slot_type,
                                  s.merge_op, s.comm, &s.request);
    if (rc != MPI_SUCCESS) {
      s.request = MPI_REQUEST_NULL;
      return break_channel("MPI_Iallreduce", rc);
    }
    s.data = data;
    s.with_data = signature != detail::plain_round_signature;
    s.phase = round_phase::exchanging;
    return {};
  }

  /// Records an MPI failure, fails the semaphore and stops MPI use.
  error break_channel(const char* call, int rc) noexcept {
    state& s = *state_;
    error e = s.mpi_error(call, rc);
    if (s.request != MPI_REQUEST_NULL) {
      // After a failed MPI_Test/MPI_Wait the request's state is undefined:
      // never wait on it again (the destructor would block for good).
      s.request = MPI_REQUEST_NULL;
      s.abandoned_request = true;
    }
    s.mpi_broken = true;
    s.failure_shared = true;
    s.phase = round_phase::idle;
    s.sem.fail(e);
    if (const auto f = s.sem.failure(); f) return *f;  // first error wins
    return e;
  }

  /// Fails the semaphore with an error every rank found alike.
  error fail_everywhere(error e) noexcept {
    state& s = *state_;
    s.failure_shared = true;
    s.phase = round_phase::idle;
    s.sem.fail(e);
    return e;
  }

  /// Completes the request in flight (MPI_Wait when `block`, else one
  /// MPI_Test); returns true when it completed.
  result<bool> finish_request(bool block, const char* call) noexcept {
    state& s = *state_;
    int done = 0;
    const int rc = block ? MPI_Wait(&s.request, MPI_STATUS_IGNORE)
                         : MPI_Test(&s.request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return break_channel(call, rc);
    return block || done != 0;
  }

  result<std::optional<std::uint64_t>> advance(bool block) noexcept {
    state& s = *state_;
    if (s.phase == round_phase::idle) {
      return error{errc::failed_precondition, "mpi collective channel: no round in flight",
                   s.next_round};
    }
    const std::uint64_t k = s.next_round;
    if (s.phase == round_phase::exchanging) {
      auto done = finish_request(block, "MPI_Iallreduce (frontier exchange)");
      if (!done) return done.error_value();
      if (!*done) return std::optional<std::uint64_t>{};
      if (auto verdict = read_verdict(k); !verdict) {
        s.phase = round_phase::idle;  // refused or failed: round k did not run
        return verdict.error_value();
      }
      if (!s.with_data) return complete(k);
      const int rc = MPI_Iallreduce(s.data.send, s.data.recv, s.data.count, s.data.datatype,
                                    s.data.op, s.comm, &s.request);
      if (rc != MPI_SUCCESS) {
        s.request = MPI_REQUEST_NULL;
        return break_channel("MPI_Iallreduce (data)", rc);
      }
      s.phase = round_phase::reducing;
    }
    auto done = finish_request(block, "MPI_Iallreduce (data)");
    if (!done) return done.error_value();
    if (!*done) return std::optional<std::uint64_t>{};
    ++s.counters.data_rounds;
    return complete(k);
  }

  /// Reads the exchanged slot: the ranks' agreement and the join.
  status read_verdict(std::uint64_t k) noexcept {
    state& s = *state_;
    const detail::collective_slot_header h = read_header(s.recv_slot.data());
    const std::uint64_t flagged = h.first_flagged;
    if (h.magic != detail::collective_slot_magic || (h.flags & detail::flag_malformed) != 0) {
      return fail_everywhere(error{errc::malformed,
                                   "mpi collective channel: an exchanged slot failed to decode "
                                   "(position: the round)",
                                   k});
    }
    if ((h.flags & detail::flag_failed) != 0) {
      if (const auto own = s.sem.failure(); own) {
        s.failure_shared = true;
        return *own;
      }
      return fail_everywhere(error{errc::failed_precondition,
                                   "mpi collective channel: the channel failed on another rank "
                                   "(position: the lowest such rank)",
                                   flagged});
    }
    if (h.round_min != h.round_max || h.axis_min != h.axis_max) {
      return fail_everywhere(error{errc::failed_precondition,
                                   "mpi collective channel: ranks disagree on the round number "
                                   "or the channel (position: the lowest round)",
                                   h.round_min});
    }
    // From here on every rank agrees the round is k of this channel;
    // refusals leave the channel usable for round k.
    if (h.signature_min != h.signature_max) {
      ++s.counters.refused_rounds;
      return error{errc::invalid_argument,
                   "mpi collective channel: ranks disagree on the round's kind or data size "
                   "(complete_round vs all_reduce, or count * type size; position: the round)",
                   k};
    }
    if ((h.flags & detail::flag_bad_argument) != 0) {
      ++s.counters.refused_rounds;
      return error{errc::invalid_argument,
                   "mpi collective channel: all_reduce with a negative count or a bad datatype "
                   "(position: the lowest such rank)",
                   flagged};
    }
    if ((h.flags & detail::flag_claims_round) != 0) {
      ++s.counters.refused_rounds;
      return error{errc::invalid_argument,
                   "mpi collective channel: a contribution already holds this round's entry "
                   "(C, k) (position: the lowest such rank)",
                   flagged};
    }
    auto joined = deserialize<Frontier>(wire_of(s.recv_slot.data(), h));
    if (!joined || joined->epoch_of(s.channel_axis) != k) {
      return fail_everywhere(error{errc::malformed,
                                   "mpi collective channel: the exchanged join does not decode "
                                   "or lacks (C, k) (position: the round)",
                                   k});
    }
    s.joined = *joined;
    if ((h.flags & detail::flag_overflow) != 0) {
      s.joined.set_tainted();  // already tainted by the eviction; explicit for clarity
      ++s.counters.tainted_rounds;
    }
    return {};
  }

  result<std::optional<std::uint64_t>> complete(std::uint64_t k) noexcept {
    state& s = *state_;
    s.phase = round_phase::idle;
    s.next_round = k + 1;
    if (status sig = causal::detail::signal_as_owner(s.sem, &s, k, s.joined, frontier_entry{s.channel_axis, k});
        !sig) {
      return sig.error_value();
    }
    ++s.counters.rounds;
    return std::optional<std::uint64_t>{k};
  }

  void release() noexcept {
    if (state_ && state_->abandoned_request) {
      // MPI may still write into the slots of the request it failed: keep
      // the state (a few KiB, once per broken channel) rather than free it.
      (void)state_.release();
      return;
    }
    state_.reset();
  }

  std::unique_ptr<state> state_;
};

/// The default cross-rank channel: causal::frontier, causal::semaphore.
using mpi_collective_channel = basic_mpi_collective_channel<>;

}  // namespace mpi

CAUSAL_END_NAMESPACE
