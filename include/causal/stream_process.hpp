// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// stream_process: a process that runs small commands -- fills, copies and
// single dispatches -- in the order one producer pushes them into a
// fixed-capacity ring, without recording a command buffer.
//
// Model (docs/executor.md "Process kinds"). One producer thread calls fill(dst, byte, n), copy(dst, src,
// n) and dispatch(fn, data); each writes one 32-byte command into a ring of
// `Capacity` slots and publishes it by advancing the tail. The process has
// wake budget 1, so the executor keeps it on its immediate list and drains
// it one worker at a time; each drain runs up to Traits::drain_quantum
// commands in ring order, advancing the head after each, then returns.
// Command i's effects happen-before command i+1 starts, whichever worker
// runs which.
//
//   producer: push --tail--> [ c5 c6 c7 . . . . c4 ] <--head-- drainer
//
// When a drain finds the ring empty the process goes to sleep (suspend,
// then drain_result::sleep) and costs nothing until the producer's next
// push wakes it. The hand-off is a Dekker pair of seq_cst operations on the
// tail and a `sleeping` flag, so no push is left unrun:
//
//   drainer (ring empty)              producer
//   suspend(1)                        write slot; tail.store (seq_cst)
//   sleeping.store(true)              if sleeping.load():
//   re-read tail                        if sleeping.exchange(false): wake(1)
//   non-empty and exchange(false)
//     won: wake(1) ourselves, drain on
//
// In the total order either the drainer's re-read sees the push or the
// producer's load sees the flag; exactly one side takes the flag, so each
// suspend(1) is matched by exactly one wake(1).
//
// A full ring rejects the push with errc::capacity_exceeded and changes
// nothing: every command accepted before still runs, the rejected one is
// not queued, and the producer retries once the drainer has made room
// (executed() tells how far it got). close() queues an end marker: the
// process completes once every command before it has run. A cancelled or
// completed stream rejects pushes (errc::cancelled / failed_precondition);
// commands accepted but not yet run when it is cancelled are dropped.
//
// Cache-line map (after the three lines of the process base):
//
//   line 3  producer        tail, cached head, closed flag
//   line 4  drainer         head, cached tail
//   line 5  hand-off        sleeping flag
//   line 6+ the ring        Capacity commands of 32 bytes
//
// Thread safety: fill, copy, dispatch and close are called by one producer
//                thread at a time (single producer); the observers from
//                any thread. The executor provides the single drainer.
//                Do not raise the wake budget above 1.
// Memory order:  a push releases (tail store); what the producer did before
//                pushing command i happens-before command i runs. Running
//                command i happens-before a read of executed() > i
//                (release store of the head, acquire load).
// Blocking/allocation: pushes never block, never lock, never allocate;
//                they may run the executor's activation (one list push and
//                a futex wake at most). Drain never blocks or allocates.
// Size:          (6 + Capacity / 2) cache lines with 64-byte lines.
// Configuration: Capacity (power of two, >= 2, default 256);
//                Traits::drain_quantum (default 64).
// See also:      <causal/block_processor.hpp>, <causal/process.hpp>,
//                <causal/executor.hpp>, docs/executor.md.
#pragma once

#include <causal/config.hpp>
#include <causal/process.hpp>
#include <causal/result.hpp>

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

CAUSAL_BEGIN_NAMESPACE

/// A streamed dispatch: called once with its user data. Must not throw.
using stream_fn = void (*)(void* user_data) noexcept;

/// Compile-time tuning of basic_stream_process. Derive and override.
struct default_stream_process_traits {
  /// Most commands one drain() call runs before returning to the
  /// executor: bounds how long other immediate work waits behind a busy
  /// stream, against ~30-60 ns of list hand-off per drain.
  static constexpr std::uint32_t drain_quantum = 64;
};

/// Checks the members basic_stream_process reads.
template <class T>
concept stream_process_traits = requires {
  { T::drain_quantum } -> std::convertible_to<std::uint32_t>;
};

/// A single-producer ring of fills, copies and dispatches, drained in
/// order by one worker at a time; see the file comment.
///
/// Capacity: ring slots (power of two, at least 2). Traits
/// (stream_process_traits): drain_quantum.
///
/// The process base is public (submit, cancel, completion, dependents,
/// scope); its user_data is left to the caller. Do not replace its drain
/// function or raise its wake budget.
///
/// Example:
///
///   causal::stream_process s;
///   executor.submit(s);
///   if (!s.copy(dst, src, 4096)) { /* full: retry later */ }
///   (void)s.dispatch(&notify, &state);
///   (void)s.close();   // completes after the two commands above
template <std::size_t Capacity = 256, stream_process_traits Traits = default_stream_process_traits>
class basic_stream_process : public process {
  static_assert(Capacity >= 2 && (Capacity & (Capacity - 1)) == 0,
                "Capacity must be a power of two of at least 2");
  static_assert(Traits::drain_quantum >= 1, "Traits::drain_quantum must be at least 1");

 public:
  using traits_type = Traits;

  /// Constructs an empty, open stream: suspend count 1 (the submit hold),
  /// wake budget 1. Commands may be pushed before submit; they run after.
  basic_stream_process() noexcept : process(&drain_thunk, nullptr) { set_wake_budget(1); }

  basic_stream_process(const basic_stream_process&) = delete;
  basic_stream_process& operator=(const basic_stream_process&) = delete;

  /// Returns the number of ring slots.
  [[nodiscard]] static constexpr std::size_t capacity() noexcept { return Capacity; }

  /// Queues std::memset(dst, value, n). Returns invalid_argument for a
  /// null `dst` with n > 0, capacity_exceeded when the ring is full, and
  /// the errors of a closed, cancelled or completed stream; nothing is
  /// queued on error. Producer only.
  [[nodiscard]] status fill(void* dst, std::uint8_t value, std::size_t n) noexcept {
    if (dst == nullptr && n != 0) return error{errc::invalid_argument, "stream_process: null fill destination"};
    command c{};
    c.dst = dst;
    c.n = n;
    c.kind = op::fill;
    c.value = value;
    return push(c);
  }

  /// Queues std::memmove(dst, src, n) (overlap is allowed). Errors as for
  /// fill(). Producer only.
  [[nodiscard]] status copy(void* dst, const void* src, std::size_t n) noexcept {
    if ((dst == nullptr || src == nullptr) && n != 0) {
      return error{errc::invalid_argument, "stream_process: null copy pointer"};
    }
    command c{};
    c.dst = dst;
    c.src = src;
    c.n = n;
    c.kind = op::copy;
    return push(c);
  }

  /// Queues fn(user_data). Returns invalid_argument for a null `fn`;
  /// otherwise errors as for fill(). Producer only.
  [[nodiscard]] status dispatch(stream_fn fn, void* user_data) noexcept {
    if (fn == nullptr) return error{errc::invalid_argument, "stream_process: null dispatch function"};
    command c{};
    c.fn = fn;
    c.dst = user_data;
    c.kind = op::dispatch;
    return push(c);
  }

  /// Queues the end of the stream: the process completes once every
  /// command pushed before has run; later pushes fail with
  /// failed_precondition. Returns capacity_exceeded when the ring is full
  /// (the stream stays open; retry). Producer only.
  [[nodiscard]] status close() noexcept {
    command c{};
    c.kind = op::end;
    status st = push(c);
    if (st) closed_ = true;
    return st;
  }

  //===-- observers --===//

  /// Returns how many commands (not counting close) were accepted.
  /// Producer only.
  [[nodiscard]] std::uint64_t pushed() const noexcept {
    return tail_.load(std::memory_order_relaxed) - (closed_ ? 1 : 0);
  }
  /// Returns how many commands have run; their effects are visible to the
  /// caller (acquire).
  [[nodiscard]] std::uint64_t executed() const noexcept {
    // acquire: pairs with the drainer's release store of the head.
    return head_.load(std::memory_order_acquire);
  }
  /// Returns true after a successful close(). Producer only.
  [[nodiscard]] bool closed() const noexcept { return closed_; }

 private:
  enum class op : std::uint8_t { fill, copy, dispatch, end };

  /// One ring slot: 32 bytes. `dst` is the user data of a dispatch.
  struct command {
    union {
      const void* src;
      stream_fn fn;
    };
    void* dst;
    std::size_t n;
    op kind;
    std::uint8_t value;

    constexpr command() noexcept : src(nullptr), dst(nullptr), n(0), kind(op::end), value(0) {}
  };
  static_assert(sizeof(command) == 32, "stream_process: a command is 32 bytes");

  static constexpr std::uint64_t mask = Capacity - 1;

  status push(const command& c) noexcept {
    if (closed_) return error{errc::failed_precondition, "stream_process: pushed after close()"};
    const std::uint64_t s = detail::process_access::state(*this).load(std::memory_order_relaxed);
    if (s & detail::state_bits::cancelled) return error{errc::cancelled, "stream_process: cancelled"};
    if (s & detail::state_bits::done) return error{errc::failed_precondition, "stream_process: completed"};
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);  // ours alone
    if (tail - cached_head_ >= Capacity) {
      // acquire: pairs with the drainer's release store of the head, so
      // the slot it left is no longer being read when we overwrite it.
      cached_head_ = head_.load(std::memory_order_acquire);
      if (tail - cached_head_ >= Capacity) {
        return error{errc::capacity_exceeded, "stream_process: ring full; retry after the drainer makes room",
                     Capacity};
      }
    }
    ring_[tail & mask] = c;
    // seq_cst: a release for the slot (the drainer's tail load acquires),
    // and the producer's half of the sleep hand-off (file comment).
    tail_.store(tail + 1, std::memory_order_seq_cst);
    if (sleeping_.load(std::memory_order_seq_cst) &&
        sleeping_.exchange(false, std::memory_order_seq_cst)) {
      wake(1);  // ours to match the drainer's suspend(1)
    }
    return {};
  }

  static drain_result drain_thunk(process& p, worker_context&) noexcept {
    return static_cast<basic_stream_process&>(p).drain_ring();
  }

  drain_result drain_ring() noexcept {
    // The drainer's fields are ours alone during this call; the executor's
    // list hand-off orders successive drains (on any workers).
    std::uint64_t head = head_.load(std::memory_order_relaxed);
    std::uint32_t ran = 0;
    while (ran < Traits::drain_quantum) {
      if (head == cached_tail_) {
        // acquire: pairs with the producer's seq_cst (release) tail store.
        cached_tail_ = tail_.load(std::memory_order_acquire);
        if (head == cached_tail_) break;
      }
      const command& c = ring_[head & mask];
      switch (c.kind) {
        case op::fill:
          if (c.n != 0) std::memset(c.dst, c.value, c.n);
          break;
        case op::copy:
          if (c.n != 0) std::memmove(c.dst, c.src, c.n);
          break;
        case op::dispatch:
          c.fn(c.dst);
          break;
        case op::end:
          // Not counted in executed(): it is not a command of the user's.
          return drain_result::complete();
      }
      ++head;
      ++ran;
      // release: publishes the command's effects to executed() and hands
      // the slot back to the producer (its acquire load of the head).
      head_.store(head, std::memory_order_release);
    }
    if (ran == Traits::drain_quantum) return drain_result::more();
    // Empty: sleep until the next push (file comment, the hand-off).
    suspend(1);
    sleeping_.store(true, std::memory_order_seq_cst);
    if (tail_.load(std::memory_order_seq_cst) != head &&
        sleeping_.exchange(false, std::memory_order_seq_cst)) {
      // A push landed before the producer could see the flag, and we took
      // the flag back: undo our own suspension (the count returns to 0
      // while we are active, so the wake only counts) and drain on.
      wake(1);
      return drain_result::more();
    }
    // If the producer took the flag its wake(1) reaches us either before
    // the executor puts us to sleep (then it drains us again at once) or
    // after (then it activates us).
    return drain_result::sleep(ran != 0);
  }

  //===-- line 3: producer --===//
  alignas(CAUSAL_CACHELINE_SIZE) std::atomic<std::uint64_t> tail_{0};
  std::uint64_t cached_head_ = 0;
  bool closed_ = false;

  //===-- line 4: drainer --===//
  alignas(CAUSAL_CACHELINE_SIZE) std::atomic<std::uint64_t> head_{0};
  std::uint64_t cached_tail_ = 0;

  //===-- line 5: hand-off --===//
  alignas(CAUSAL_CACHELINE_SIZE) std::atomic<bool> sleeping_{false};

  //===-- line 6+: the ring --===//
  alignas(CAUSAL_CACHELINE_SIZE) command ring_[Capacity];
};

/// The stream process with the default ring (256 commands, 8 KiB).
using stream_process = basic_stream_process<>;

CAUSAL_END_NAMESPACE
