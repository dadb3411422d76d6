// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// fence: user timelines and fences, the vocabulary of the invocation model
// (docs/invocations.md): a timeline is a semaphore the
// user advances, `timeline.at(t)` names a point on it, and a fence is a small
// set of (semaphore, value) points that is reached when every point is.
//
// Model. A fence point (S, v) means "S >= v" (wait-until, never wait-equal).
// A fence joins points: adding a second point on a semaphore it already
// names keeps the larger value, since S >= 5 implies S >= 3. The set is held
// inline (at most Capacity points, default 8), so a fence is a value: cheap
// to copy (Capacity * 16 + 8 bytes), never allocating; exceeding Capacity is
// `errc::capacity_exceeded` and leaves the fence unchanged. The empty fence
// is reached at once: it is how a call says "wait on nothing".
//
// One signaller per value. Timeline values strictly increase (semaphore.hpp:
// a non-increasing signal is an error), so a value has exactly one producer.
// Where several pieces of work must all finish before a point (fence c of
// the pipelined DAG in examples/04_pipelined_dag.cpp, signalled by fn1, fn2,
// fn3 and fn4), give each its own timeline and join their points into one
// fence: the join *is* the barrier. A single shared timeline would be
// unsound: the first finisher would move it past every other's value (and
// fn3, which waits on nothing, could release fn1 before fn0 has run).
//
// Waiting. `wait_until(deadline)` blocks the calling host thread until every
// point is reached (ok), some semaphore fails (its failure; destroyed first:
// `errc::cancelled`), or the deadline passes (`errc::timeout`). Inside a
// coroutine_process, `status s = co_await f;` suspends the process (not a
// thread) on timepoints held in the awaiter, with the protocol of
// coroutine.hpp, and resumes on a worker with the same three outcomes minus
// the timeout. `imported()` is what a waiter learns once the fence is
// reached: the join of each point's frontier_at(v) (docs/semaphores.md).
//
// Thread safety: a fence is a value type: distinct objects may be used
//                concurrently; one object is not synchronised. Its const
//                members (wait, reached, imported, co_await) may be called
//                concurrently on one object. basic_timeline's members may be
//                called concurrently; reserve()/next_step() hand out each
//                value once.
// Memory order:  what a signaller wrote before signal(v) is visible after a
//                wait (or co_await) that saw S >= v for every point: the
//                semaphore's release/acquire pairs.
// Blocking/allocation: never allocates. wait* spin briefly then park (the
//                multi-wait of semaphore.hpp, its timepoints on the stack);
//                every other member is non-blocking: reached()/failure() are
//                one or two loads per point, imported() takes each
//                semaphore's short spin lock.
// Size:          basic_fence: Capacity * 16 + 8 bytes (136 by default).
//                The awaiter adds 80 bytes per point of Capacity (timepoint
//                nodes live in the coroutine frame). basic_timeline: the
//                semaphore plus one cache line.
// Configuration: Semaphore (default causal::semaphore), Capacity (default 8,
//                at most max_wait_points = 64).
// See also:      docs/invocations.md, <causal/semaphore.hpp>, <causal/coroutine.hpp>,
//                <causal/invoke.hpp>, <causal/stream_pool.hpp>.
#pragma once

#include <causal/config.hpp>
#include <causal/coroutine.hpp>
#include <causal/result.hpp>
#include <causal/semaphore.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>

CAUSAL_BEGIN_NAMESPACE

template <class Semaphore, std::size_t Capacity>
class fence_awaiter;

//===-- basic_fence ---------------------------------------------------------===//

/// A set of (semaphore, value) points, reached when every point is; see the
/// file comment.
///
/// Template parameters:
/// - `Semaphore`: any basic_semaphore (what the points name).
/// - `Capacity`: the most points held inline, 1 to max_wait_points.
template <class Semaphore = semaphore, std::size_t Capacity = 8>
class basic_fence {
  static_assert(Capacity >= 1, "basic_fence: Capacity must be at least 1");
  static_assert(Capacity <= max_wait_points,
                "basic_fence: Capacity must be at most max_wait_points (64)");

 public:
  using semaphore_type = Semaphore;
  using frontier_type = typename Semaphore::frontier_type;
  using point = wait_point<Semaphore>;
  using clock = std::chrono::steady_clock;
  static constexpr std::size_t capacity = Capacity;

  /// The empty fence: reached at once.
  constexpr basic_fence() noexcept = default;

  /// The fence of one point, `sem` >= `value`.
  constexpr basic_fence(Semaphore& sem, std::uint64_t value) noexcept : count_(1) {
    points_[0] = point{&sem, value};
  }

  /// Returns the fence of `points` (joined: one point per semaphore, the
  /// largest value), or `errc::capacity_exceeded` when more than Capacity
  /// distinct semaphores are named, or `errc::invalid_argument` for a null
  /// semaphore.
  [[nodiscard]] static result<basic_fence> of(std::initializer_list<point> points) noexcept {
    basic_fence f;
    for (const point& p : points) {
      if (status s = f.add(p); !s) return s.error_value();
    }
    return f;
  }

  /// Adds `sem` >= `value`. A point on a semaphore already named keeps the
  /// larger value. Errors (the fence is unchanged): `capacity_exceeded`
  /// when Capacity distinct semaphores are already named.
  status add(Semaphore& sem, std::uint64_t value) noexcept { return add(point{&sem, value}); }

  /// Adds point `p`; see add(sem, value). A null semaphore is
  /// `errc::invalid_argument`.
  status add(const point& p) noexcept {
    if (p.semaphore == nullptr) return error{errc::invalid_argument, "fence: null semaphore"};
    for (std::size_t i = 0; i < count_; ++i) {
      if (points_[i].semaphore == p.semaphore) {
        if (p.value > points_[i].value) points_[i].value = p.value;
        return {};
      }
    }
    if (count_ == Capacity) {
      return error{errc::capacity_exceeded, "fence: more than Capacity semaphores", Capacity};
    }
    points_[count_++] = p;
    return {};
  }

  /// Joins every point of `other` into this fence, all or nothing: on
  /// `errc::capacity_exceeded` this fence is unchanged.
  template <std::size_t C2>
  status join(const basic_fence<Semaphore, C2>& other) noexcept {
    basic_fence joined = *this;
    for (const point& p : other) {
      if (status s = joined.add(p); !s) return s;
    }
    *this = joined;
    return {};
  }

  //===-- observers ---------------------------------------------------------===//

  [[nodiscard]] constexpr std::size_t size() const noexcept { return count_; }
  [[nodiscard]] constexpr bool empty() const noexcept { return count_ == 0; }
  [[nodiscard]] constexpr const point* begin() const noexcept { return points_.data(); }
  [[nodiscard]] constexpr const point* end() const noexcept { return points_.data() + count_; }
  [[nodiscard]] constexpr const point& operator[](std::size_t i) const noexcept {
    CAUSAL_ASSERT(i < count_, "fence: point index out of range");
    return points_[i];
  }
  [[nodiscard]] constexpr std::span<const point> points() const noexcept {
    return {points_.data(), count_};
  }
  /// Returns the value required of `sem`, or 0 when the fence does not
  /// name it.
  [[nodiscard]] std::uint64_t value_of(const Semaphore& sem) const noexcept {
    for (const point& p : points()) {
      if (p.semaphore == &sem) return p.value;
    }
    return 0;
  }

  /// True when every point is reached (a value reached before its
  /// semaphore failed stays reached).
  [[nodiscard]] bool reached() const noexcept {
    for (const point& p : points()) {
      if (!p.semaphore->try_wait(p.value)) return false;
    }
    return true;
  }

  /// The failure that keeps the fence from ever being reached: that of
  /// the first point whose semaphore failed below its value, if any (a
  /// point reached before its semaphore failed stays reached).
  [[nodiscard]] std::optional<error> failure() const noexcept {
    for (const point& p : points()) {
      if (auto f = detail::failure_below(*p.semaphore, p.value); f) return f;
    }
    return std::nullopt;
  }

  /// Returns what a waiter learns once the fence is reached: the join of
  /// frontier_at(v) over its points. A point not reached yet contributes
  /// nothing and taints the result (it may be incomplete; as knowledge
  /// that is safe, and taint keeps anyone from reasoning from absence).
  [[nodiscard]] frontier_type imported() const noexcept {
    frontier_type out{};
    for (const point& p : points()) {
      const auto got = p.semaphore->frontier_at(p.value);
      if (!got || !got->reached) {
        out.set_tainted();
        continue;
      }
      if constexpr (requires { out.merge(got->frontier).ok(); }) {
        // A rejecting frontier cannot hold the union: keep less, tainted.
        if (!out.merge(got->frontier)) out.set_tainted();
      } else {
        out.merge(got->frontier);
      }
    }
    return out;
  }

  //===-- host waits --------------------------------------------------------===//

  /// Blocks until every point is reached (ok), a semaphore fails (its
  /// failure) or `deadline` passes (`errc::timeout`).
  status wait_until(clock::time_point deadline,
                    unsigned spin = Semaphore::default_spin) const noexcept {
    return wait_all(points(), deadline, spin);
  }
  /// Blocks until every point is reached or a semaphore fails.
  status wait() const noexcept { return wait_until(clock::time_point::max()); }
  /// wait_until(`deadline`).
  status wait(clock::time_point deadline) const noexcept { return wait_until(deadline); }
  /// wait_until(now + `timeout`); a non-positive timeout only polls.
  template <class Rep, class Period>
  status wait_for(std::chrono::duration<Rep, Period> timeout) const noexcept {
    const auto now = clock::now();
    if (timeout <= timeout.zero()) return wait_until(now, 0);
    const std::chrono::duration<double> room = clock::time_point::max() - now;
    if (std::chrono::duration<double>(timeout) >= room - std::chrono::seconds(1)) return wait();
    return wait_until(now + std::chrono::ceil<clock::duration>(timeout));
  }

  //===-- host signals ------------------------------------------------------===//

  /// Signals every point's semaphore to its value, in order, carrying `f`
  /// (and the producer entry, when given). The points are reached one at
  /// a time, so only the last carries the producer's own entry: the others
  /// carry `f` with the producer's axis lowered below its epoch (what was
  /// known before the operation; docs/queues.md, "Signals of one
  /// operation"). Every point is attempted; returns the first error (a
  /// value not above its semaphore's payload is `errc::not_increasing` and
  /// leaves that semaphore unchanged).
  status signal(const frontier_type& f = frontier_type{}, frontier_entry producer = {}) const noexcept {
    status first{};
    if (count_ > 1) {
      frontier_type before = f;
      if (producer.epoch != 0) before.lower_to(producer.axis, producer.epoch - 1);
      for (std::size_t k = 0; k + 1 < count_; ++k) {
        status s = points_[k].semaphore->signal(points_[k].value, before, producer);
        if (!s && first) first = s;
      }
    }
    if (count_ != 0) {
      const point& last = points_[count_ - 1];
      status s = last.semaphore->signal(last.value, f, producer);
      if (!s && first) first = s;
    }
    return first;
  }

  /// Fails every point's semaphore with `e` (sticky; first error wins).
  void fail(const error& e) const noexcept {
    for (const point& p : points()) (void)detail::fail_signal(*p.semaphore, p.value, e);
  }

  //===-- coroutine ---------------------------------------------------------===//

  /// `status s = co_await fence;` inside a coroutine_process: resumes with
  /// ok once every point is reached, or with the first failure.
  [[nodiscard]] fence_awaiter<Semaphore, Capacity> operator co_await() const noexcept {
    return fence_awaiter<Semaphore, Capacity>{*this};
  }

  /// Two fences are equal when they name the same points in the same order.
  friend bool operator==(const basic_fence& a, const basic_fence& b) noexcept {
    if (a.count_ != b.count_) return false;
    for (std::size_t i = 0; i < a.count_; ++i) {
      if (a.points_[i].semaphore != b.points_[i].semaphore ||
          a.points_[i].value != b.points_[i].value) {
        return false;
      }
    }
    return true;
  }

 private:
  std::array<point, Capacity> points_{};
  std::size_t count_ = 0;
};

/// Returns the join of `a` and `b`, or `errc::capacity_exceeded`.
template <class Semaphore, std::size_t C1, std::size_t C2>
[[nodiscard]] result<basic_fence<Semaphore, C1>> join(const basic_fence<Semaphore, C1>& a,
                                                      const basic_fence<Semaphore, C2>& b) noexcept {
  basic_fence<Semaphore, C1> out = a;
  if (status s = out.join(b); !s) return s.error_value();
  return out;
}

/// The default fence: up to 8 points on causal::semaphore.
using fence = basic_fence<>;

//===-- fence_awaiter -------------------------------------------------------===//

/// What `co_await fence` returns: the awaiter of coroutine.hpp's countdown
/// protocol over a fence's points, its timepoints held inline (so an await
/// allocates nothing). Never suspends when every point is reached.
template <class Semaphore, std::size_t Capacity>
class fence_awaiter : private detail::coroutine_wait {
 public:
  explicit fence_awaiter(const basic_fence<Semaphore, Capacity>& f) noexcept : fence_(f) {}

  bool await_ready() noexcept {
    reset_wait();
    return fence_.reached();
  }

  bool await_suspend(std::coroutine_handle<detail::coroutine_promise> h) noexcept {
    const auto n = static_cast<std::uint32_t>(fence_.size());
    begin(h.promise(), nodes_.data(), n);
    std::uint32_t skipped = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      if (failure_seen()) {
        ++skipped;  // a point failed already: the wait is over
        continue;
      }
      arm(nodes_[i], fence_[i].value);
      fence_[i].semaphore->add_timepoint(nodes_[i]);  // may fire inline
    }
    return end_registration(skipped);
  }

  [[nodiscard]] status await_resume() noexcept { return result(); }

 private:
  basic_fence<Semaphore, Capacity> fence_;
  std::array<semaphore_timepoint, Capacity> nodes_{};
};

//===-- basic_timeline ------------------------------------------------------===//

/// The two fences of one step on a timeline: wait for the previous value,
/// signal the next.
template <class Fence>
struct timeline_step {
  Fence wait;
  Fence signal;
  /// The value `signal` names.
  std::uint64_t value = 0;
};

/// A user timeline: a semaphore the user (or invocations) advance, plus a
/// counter that hands out the values to signal next.
///
/// `at(t)` names a point; `reserve(n)` hands out n fresh values (each once,
/// thread-safe) for work about to be scheduled; `next_step()` reserves one
/// and returns {at(v - 1), at(v)}, the fences of "the next thing in order
/// on this timeline"; `scheduled()` is the fence of everything reserved so
/// far. Reserving only hands out numbers: the semaphore moves when the work
/// signalled with them finishes.
template <class Semaphore = semaphore, std::size_t FenceCapacity = 8>
class basic_timeline {
 public:
  using semaphore_type = Semaphore;
  using fence_type = basic_fence<Semaphore, FenceCapacity>;
  using step_type = timeline_step<fence_type>;

  /// A timeline at `initial` (values up to it count as reached).
  explicit basic_timeline(std::uint64_t initial = 0,
                          semaphore_scope scope = semaphore_scope::process_local) noexcept
      : semaphore_(initial, scope), reserved_(initial) {}

  basic_timeline(const basic_timeline&) = delete;
  basic_timeline& operator=(const basic_timeline&) = delete;

  [[nodiscard]] Semaphore& semaphore() noexcept { return semaphore_; }
  [[nodiscard]] const Semaphore& semaphore() const noexcept { return semaphore_; }

  /// The fence point "this timeline >= `t`".
  [[nodiscard]] fence_type at(std::uint64_t t) noexcept { return fence_type{semaphore_, t}; }

  /// The semaphore's payload (how far the timeline has got).
  [[nodiscard]] std::uint64_t value() const noexcept { return semaphore_.value(); }

  /// Reserves `n` (>= 1) consecutive values and returns the first: the
  /// next value to signal. Each value is handed out once.
  [[nodiscard]] std::uint64_t reserve(std::uint64_t n = 1) noexcept {
    CAUSAL_ASSERT(n >= 1, "timeline::reserve: n must be at least 1");
    // relaxed: a counter; the order of the work is carried by the fences.
    return reserved_.fetch_add(n, std::memory_order_relaxed) + 1;
  }

  /// The highest value reserved so far.
  [[nodiscard]] std::uint64_t last_reserved() const noexcept {
    return reserved_.load(std::memory_order_relaxed);
  }

  /// Reserves one value v and returns {at(v - 1), at(v), v}.
  [[nodiscard]] step_type next_step() noexcept {
    const std::uint64_t v = reserve(1);
    return step_type{at(v - 1), at(v), v};
  }

  /// The fence of everything reserved so far: at(last_reserved()).
  [[nodiscard]] fence_type scheduled() noexcept { return at(last_reserved()); }

 private:
  Semaphore semaphore_;
  alignas(CAUSAL_CACHELINE_SIZE) std::atomic<std::uint64_t> reserved_;
};

/// The default timeline over causal::semaphore.
using timeline = basic_timeline<>;

CAUSAL_END_NAMESPACE
