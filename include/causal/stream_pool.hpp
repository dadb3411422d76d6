// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// stream_pool: stream-ordered allocation (docs/buffers.md):
// `stream_alloca(pool,
// size, wait, signal)` and `stream_dealloca(pool, buffer, wait, signal)` are
// scheduled exactly like invocations, so transient memory is reserved just
// before the work that needs it runs and returned just after.
//
// Model. A pool has a quota of bytes (an arena the pool never touches:
// sizes are modelled, so a 512 MB pool costs nothing until the caller maps
// memory at the offsets it hands out). Placement is pool.hpp's death-
// frontier block pool, driven by the pool's own queue: an axis from
// default_axis_allocator() whose epoch advances with every alloca and
// dealloca. Every pool operation runs after its wait fence is reached, on
// an executor worker, under the pool's spin lock, so the operations are
// totally ordered on that axis: a dealloca records the pool's knowledge
// (which has learned the dealloca's wait fence) as the block's death
// frontier and (axis, epoch) as its producer entry, and a later alloca on
// the same axis covers that producer by FIFO order -- reuse is always free,
// with no device wait. What the death frontier buys here is knowledge: an
// alloca signals its fence with the pool's knowledge and its own (axis,
// epoch), so the work that uses a reused block learns that the block's
// previous users have finished.
//
// Quota. A request larger than the quota can never fit: the alloca fails
// with `errc::capacity_exceeded` (its signal fence fails, the handle
// reports it). A request that fits the quota but not the space free now
// waits in FIFO order (later allocas queue behind it, so a large request is
// not starved) until deallocas make room: two 400 MB invocations on a 512
// MB pool both complete, one after the other. Since the block pool never
// hands a free block at the top of its carved range back to the fresh tail,
// fragmentation could leave a fitting request unserved with nothing live;
// then every free block is covered by the pool's own knowledge, so the pool
// rebuilds its (empty) block table and serves the request -- a request
// that fits is never failed and never strands. Peak committed bytes (live
// blocks, rounded to the alignment) are reported; N invocations in sequence
// peak at one invocation's worth.
//
// Transfer. `async_invoke_transfer(pool, fn, wait, signal, {inputs})`
// hands buffers to the callee: they are released as soon as fn returns
// (before its signal), or when the invocation ends if fn never ran (its
// wait failed, it was cancelled); the caller must not dealloca them.
// `release_now(buffer)` is the same immediate, host-ordered release for a
// callee that wants to give an input back earlier, from inside fn.
//
// Thread safety: every member and function may be called from any thread.
// Memory order:  pool operations are serialised by the pool's spin lock
//                (acquire/release); an alloca's result is published with
//                its signal fence as for any invocation.
// Blocking/allocation: stream_alloca/stream_dealloca allocate the operation
//                once at submit (like async_invoke); running an operation,
//                serving the FIFO and release_now never allocate. The lock
//                is held for an O(MaxBlocks * frontier) block-pool call.
//                The destructor cancels operations not yet run and waits
//                for running ones.
// Lifetime:      the executor outlives the pool: a basic_executor keeps
//                the pool on its list of bound objects and refuses,
//                loudly, to be destroyed first (docs/lifetimes.md).
// Size:          about MaxBlocks * 250 + 1.5 KiB (17 KiB by default), plus
//                the executor reference.
// Configuration: Executor (default causal::executor), Fence (default
//                causal::fence), MaxBlocks (default 64); quota, alignment
//                (default 256) and an optional arena base at construction.
// See also:      docs/buffers.md, <causal/pool.hpp>, <causal/invoke.hpp>,
//                <causal/fence.hpp>.
//
// Naming: glibc defines `alloca` as a function-like macro (<alloca.h>,
// pulled in by <cstdlib>), so no C++ name can be spelled `alloca(`: the
// operations are stream_alloca and stream_dealloca.
#pragma once

#include <causal/axis.hpp>
#include <causal/completion.hpp>
#include <causal/config.hpp>
#include <causal/detail/spin_lock.hpp>
#include <causal/fence.hpp>
#include <causal/frontier.hpp>
#include <causal/invoke.hpp>
#include <causal/pool.hpp>
#include <causal/process.hpp>
#include <causal/result.hpp>
#include <causal/scope.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <new>
#include <optional>
#include <utility>

CAUSAL_BEGIN_NAMESPACE

/// What an alloca hands out: bytes [offset, offset + size) of the pool's
/// arena (`data` is arena base + offset, or null when the pool has no
/// arena). `size` is the request rounded up to the pool's alignment.
struct stream_buffer {
  std::size_t offset = 0;
  std::size_t size = 0;
  std::byte* data = nullptr;
};

/// Cumulative counters of a stream pool.
struct stream_pool_stats {
  std::uint64_t allocas = 0;       ///< allocas that got a block
  std::uint64_t deallocas = 0;     ///< blocks returned (dealloca and release_now)
  std::uint64_t serialized = 0;    ///< allocas that waited for quota first
  std::uint64_t failures = 0;      ///< operations that failed
  std::uint64_t rebuilds = 0;      ///< block tables rebuilt to undo fragmentation
};

template <invocation_executor Executor, class Fence, std::size_t MaxBlocks>
class basic_stream_pool;

namespace detail {

/// The pool's own queue as pool.hpp sees it: an axis, its epoch and its
/// knowledge. Its backend never issues device waits (reuse is always
/// proven by knowledge: the pool frees and reuses on its own axis).
template <class Semaphore>
class stream_pool_queue {
 public:
  using semaphore_type = Semaphore;
  using frontier_type = typename Semaphore::frontier_type;

  struct backend_type {
    status issue_wait(Semaphore&, std::uint64_t) noexcept {
      return error{errc::failed_precondition, "stream pool: no device waits on the pool's queue"};
    }
  };

  [[nodiscard]] causal::axis axis() const noexcept { return axis_; }
  [[nodiscard]] std::uint64_t epoch() const noexcept { return epoch_; }
  [[nodiscard]] const frontier_type& knowledge() const noexcept { return knowledge_; }
  /// The pool frees only right after advance(), which follows everything
  /// it learnt: (axis, epoch) always proves the knowledge.
  [[nodiscard]] frontier_entry knowledge_producer() const noexcept {
    return axis_.raw() != 0 && epoch_ != 0 ? frontier_entry{axis_, epoch_} : frontier_entry{};
  }
  void learn(const frontier_type& f) noexcept {
    // The pool's own axis is pinned: overflow never evicts the entry that
    // proves its frees (docs/frontiers.md).
    if constexpr (frontier_type::overflow_type::rejects) {
      if (!knowledge_.merge(f, axis_)) knowledge_.set_tainted();
    } else {
      knowledge_.merge(f, axis_);
    }
  }
  [[nodiscard]] backend_type& backend() noexcept { return backend_; }

  void set_axis(causal::axis a) noexcept { axis_ = a; }
  /// One more operation on the pool's axis.
  void advance() noexcept {
    ++epoch_;
    if (axis_.raw() != 0) (void)knowledge_.insert_or_raise(axis_, epoch_);
  }

 private:
  causal::axis axis_{};
  std::uint64_t epoch_ = 0;
  frontier_type knowledge_{};
  [[no_unique_address]] backend_type backend_{};
};

/// A scheduled alloca.
template <class Pool>
class alloca_op final : public invocation_state<typename Pool::fence_type, stream_buffer> {
  using fence_type = typename Pool::fence_type;
  using core = invocation_core<fence_type>;
  using state = invocation_state<fence_type, stream_buffer>;

 public:
  alloca_op(Pool& pool, std::size_t size, const fence_type& wait, const fence_type& signal) noexcept
      : state(wait, signal, &step, &finish, &destroy), pool_(&pool), size_(size) {}

 private:
  friend Pool;

  static typename core::step_outcome step(core& c) noexcept {
    auto& self = static_cast<alloca_op&>(c);
    return self.pool_->run_alloca(self);
  }
  static void finish(core& c, const status& final) noexcept {
    auto& self = static_cast<alloca_op&>(c);
    self.settle(final);
    if (!final) self.pool_->abandon_alloca(self);
  }
  static void destroy(core& c) noexcept { delete static_cast<alloca_op*>(&c); }

  Pool* pool_;
  std::size_t size_;
  // Guarded by the pool's lock.
  pool_block block_{};
  bool assigned_ = false;
  bool released_ = false;
  bool queued_ = false;
  alloca_op* next_ = nullptr;
};

/// A scheduled dealloca of an alloca's buffer.
template <class Pool>
class dealloca_op final : public invocation_state<typename Pool::fence_type, void> {
  using fence_type = typename Pool::fence_type;
  using core = invocation_core<fence_type>;
  using state = invocation_state<fence_type, void>;

 public:
  dealloca_op(Pool& pool, alloca_op<Pool>& target, const fence_type& wait,
              const fence_type& signal) noexcept
      : state(wait, signal, &step, &finish, &destroy), pool_(&pool), target_(&target) {
    target.ref();
  }

 private:
  friend Pool;

  static typename core::step_outcome step(core& c) noexcept {
    auto& self = static_cast<dealloca_op&>(c);
    return self.pool_->run_dealloca(self);
  }
  static void finish(core& c, const status& final) noexcept {
    static_cast<dealloca_op&>(c).settle(final);
  }
  static void destroy(core& c) noexcept {
    auto* self = static_cast<dealloca_op*>(&c);
    self->target_->unref();
    delete self;
  }

  Pool* pool_;
  alloca_op<Pool>* target_;
};

}  // namespace detail

//===-- basic_stream_pool ---------------------------------------------------===//

/// A quota'd pool whose allocas and deallocas are scheduled on fences; see
/// the file comment.
///
/// Template parameters: `Executor` (runs the operations), `Fence`,
/// `MaxBlocks` (block descriptors, live + free; a request that needs a
/// descriptor when all are live waits like a request over the free space).
template <invocation_executor Executor = executor, class Fence = fence, std::size_t MaxBlocks = 64>
class basic_stream_pool {
 public:
  using executor_type = Executor;
  using fence_type = Fence;
  using semaphore_type = typename Fence::semaphore_type;
  using frontier_type = typename semaphore_type::frontier_type;
  /// The handle stream_alloca returns: get() is the stream_buffer.
  using buffer_handle = basic_invocation<stream_buffer, Fence>;
  /// Most buffers one async_invoke_transfer takes.
  static constexpr std::size_t max_transfers = 8;

  /// A pool of `quota` bytes handed out in multiples of `alignment` (a
  /// power of two; otherwise every alloca fails with
  /// `errc::invalid_argument`), over the arena at `arena` (may be null:
  /// sizes only). Operations run on `ex`.
  basic_stream_pool(Executor& ex, std::size_t quota, std::size_t alignment = 256,
                    std::byte* arena = nullptr)
      : ex_(&ex), quota_(quota), alignment_(alignment), arena_(arena) {
    if (auto a = default_axis_allocator().allocate(0, domain::host); a) queue_.set_axis(*a);
    blocks_.emplace(quota, alignment);
    // Bound to the executor for life: it refuses to go first, since an
    // operation of ours waiting on a fence would wake on a dead executor.
    if constexpr (requires { ex.bind_long_lived(bound_); }) {
      bound_.owner = this;
      bound_.describe = &describe_bound;
      ex.bind_long_lived(bound_);
    }
  }
  basic_stream_pool(const basic_stream_pool&) = delete;
  basic_stream_pool& operator=(const basic_stream_pool&) = delete;

  /// Cancels operations that have not run (their signal fences fail with
  /// `errc::cancelled`) and waits for running ones.
  ~basic_stream_pool() {
    group_.cancel_all();
    (void)group_.wait_idle();
    if constexpr (requires { ex_->unbind_long_lived(bound_); }) ex_->unbind_long_lived(bound_);
  }

  //===-- observers --===//

  [[nodiscard]] std::size_t quota() const noexcept { return quota_; }
  [[nodiscard]] std::size_t alignment() const noexcept { return alignment_; }
  /// Bytes held by live blocks now.
  [[nodiscard]] std::size_t committed() const noexcept {
    return committed_.load(std::memory_order_relaxed);
  }
  /// The most bytes live blocks ever held at once.
  [[nodiscard]] std::size_t peak_committed() const noexcept {
    return peak_.load(std::memory_order_relaxed);
  }
  /// Allocas waiting for quota now.
  [[nodiscard]] std::size_t waiting() const noexcept {
    detail::spin_guard guard(lock_);
    std::size_t n = 0;
    for (const alloca_type* op = head_; op != nullptr; op = op->next_) ++n;
    return n;
  }
  [[nodiscard]] stream_pool_stats stats() const noexcept {
    detail::spin_guard guard(lock_);
    return stats_;
  }
  /// The pool's axis (its operations' producer entries).
  [[nodiscard]] causal::axis axis() const noexcept { return queue_.axis(); }
  [[nodiscard]] Executor& get_executor() const noexcept { return *ex_; }

  //===-- operations --===//

  /// See stream_alloca().
  buffer_handle alloca_async(std::size_t size, const Fence& wait, const Fence& signal) noexcept {
    auto* op = new (std::nothrow) alloca_type(*this, size, wait, signal);
    if (op == nullptr) return submit_failed<stream_buffer>(signal);
    invoke_options options;
    options.group = &group_;
    op->start(*ex_, options);
    return buffer_handle{static_cast<typename buffer_handle::state_type*>(op)};
  }

  /// See stream_dealloca().
  basic_invocation<void, Fence> dealloca_async(const buffer_handle& buffer, const Fence& wait,
                                               const Fence& signal) noexcept {
    alloca_type* target = own(buffer);
    if (target == nullptr) {
      const error e{errc::invalid_argument, "stream_dealloca: not a buffer of this pool"};
      signal.fail(e);
      return basic_invocation<void, Fence>{e};
    }
    // Also wait for the alloca's own signal (when there is room), so a
    // dealloca can never run before the block exists.
    Fence w = wait;
    (void)w.join(target->signal_fence());
    auto* op = new (std::nothrow) dealloca_type(*this, *target, w, signal);
    if (op == nullptr) return submit_failed<void>(signal);
    invoke_options options;
    options.group = &group_;
    op->start(*ex_, options);
    return basic_invocation<void, Fence>{static_cast<detail::invocation_state<Fence, void>*>(op)};
  }

  /// Releases `buffer` now (host-ordered). Precondition: every use of it
  /// has finished (a callee that owns a transferred input). Errors:
  /// `invalid_argument` (not this pool's), `failed_precondition` (its
  /// alloca has not completed or failed, or it was released already).
  status release_now(const buffer_handle& buffer) noexcept {
    alloca_type* target = own(buffer);
    if (target == nullptr) {
      return error{errc::invalid_argument, "release_now: not a buffer of this pool"};
    }
    wake_list woken;
    status s;
    {
      detail::spin_guard guard(lock_);
      s = release_locked(*target);
      if (s) serve_locked(woken);
    }
    wake_all(woken);
    return s;
  }

 private:
  template <class>
  friend class detail::alloca_op;
  template <class>
  friend class detail::dealloca_op;

  using alloca_type = detail::alloca_op<basic_stream_pool>;
  using dealloca_type = detail::dealloca_op<basic_stream_pool>;
  using queue_type = detail::stream_pool_queue<semaphore_type>;
  using block_pool_type = basic_block_pool<queue_type, completion_tracker, MaxBlocks>;
  using step_outcome = typename detail::invocation_core<Fence>::step_outcome;

  /// Allocas a FIFO pass assigned, to wake after the lock is dropped (each
  /// holds a reference taken under the lock).
  struct wake_list {
    alloca_type* head = nullptr;
  };

  template <class T>
  static basic_invocation<T, Fence> submit_failed(const Fence& signal) noexcept {
    const error e{errc::resource_exhausted, "stream pool: cannot allocate the operation"};
    signal.fail(e);
    return basic_invocation<T, Fence>{e};
  }

  /// The alloca behind `buffer` when it is one of ours, else null.
  alloca_type* own(const buffer_handle& buffer) const noexcept {
    auto* s = buffer.state();
    // A handle of an async_invoke whose fn returns a stream_buffer is not
    // an alloca: the destroy hook tells them apart before any downcast.
    if (s == nullptr || s->destroy_hook() != &alloca_type::destroy) return nullptr;
    auto* op = static_cast<alloca_type*>(s);
    return op->pool_ == this ? op : nullptr;
  }

  //===-- running operations (workers) --===//

  step_outcome run_alloca(alloca_type& op) noexcept {
    if (!op.outcome_) return step_outcome::done;  // failed while queued
    const frontier_type seen = op.wait_imports();
    detail::spin_guard guard(lock_);
    if (op.assigned_) {
      // Woken by a dealloca that served us from the FIFO.
      complete_alloca_locked(op);
      return step_outcome::done;
    }
    if (!blocks_->setup_status()) {
      return fail_locked(op, blocks_->setup_status().error_value());
    }
    if (op.size_ == 0) return fail_locked(op, error{errc::invalid_argument, "stream_alloca: size 0"});
    if (op.size_ > quota_ || (op.size_ + alignment_ - 1) / alignment_ > quota_ / alignment_) {
      return fail_locked(op, error{errc::capacity_exceeded,
                                   "stream_alloca: request larger than the pool's quota", op.size_});
    }
    queue_.learn(seen);
    if (head_ == nullptr && try_assign_locked(op)) {
      complete_alloca_locked(op);
      return step_outcome::done;
    }
    if (!op.outcome_) return step_outcome::done;  // a hard error from the block pool
    // Wait for quota, behind earlier waiters. Suspend before anyone can
    // wake us: a dealloca may serve us as soon as the lock is dropped.
    op.queued_ = true;
    op.next_ = nullptr;
    if (tail_ != nullptr) {
      tail_->next_ = &op;
    } else {
      head_ = &op;
    }
    tail_ = &op;
    ++stats_.serialized;
    op.proc_.suspend(1);
    return step_outcome::sleep;
  }

  step_outcome run_dealloca(dealloca_type& op) noexcept {
    const frontier_type seen = op.wait_imports();
    wake_list woken;
    {
      detail::spin_guard guard(lock_);
      queue_.learn(seen);
      const status s = release_locked(*op.target_);
      if (!s) {
        ++stats_.failures;
        op.outcome_ = s;
      } else {
        op.outcome_ = status{};
        op.extra_ = queue_.knowledge();
        op.producer_ = frontier_entry{queue_.axis(), queue_.epoch()};
        if (queue_.axis().raw() == 0) op.producer_ = frontier_entry{};
        serve_locked(woken);
      }
    }
    wake_all(woken);
    return step_outcome::done;
  }

  /// An alloca completing with an error (cancelled, failed, torn down):
  /// leave the FIFO, give back a block assigned meanwhile.
  void abandon_alloca(alloca_type& op) noexcept {
    wake_list woken;
    {
      detail::spin_guard guard(lock_);
      if (op.queued_) unlink_locked(op);
      if (op.assigned_ && !op.released_) {
        (void)release_locked(op);
        serve_locked(woken);
      }
    }
    wake_all(woken);
  }

  //===-- under the lock --===//

  step_outcome fail_locked(alloca_type& op, const error& e) noexcept {
    ++stats_.failures;
    op.outcome_ = e;
    op.out_.emplace(e);
    return step_outcome::done;
  }

  /// Tries to place `op`; true when it got a block. A hard error (not
  /// "no room now") is recorded in op.outcome_.
  bool try_assign_locked(alloca_type& op) noexcept {
    result<pool_block> r = blocks_->acquire(queue_, op.size_);
    if (!r && r.code() == errc::resource_exhausted && blocks_->live_count() == 0) {
      // Fragmented with nothing live: every free block is covered by the
      // pool's own knowledge (it freed them all), so the table can start
      // over without losing an obligation.
      const status setup = blocks_->setup_status();
      blocks_.reset();
      blocks_.emplace(quota_, alignment_);
      (void)setup;
      ++stats_.rebuilds;
      r = blocks_->acquire(queue_, op.size_);
    }
    if (!r) {
      if (r.code() != errc::resource_exhausted) {
        (void)fail_locked(op, r.error_value());
      }
      return false;
    }
    queue_.advance();
    op.block_ = *r;
    op.assigned_ = true;
    ++stats_.allocas;
    const std::size_t now = committed_.load(std::memory_order_relaxed) + r->size;
    committed_.store(now, std::memory_order_relaxed);
    if (now > peak_.load(std::memory_order_relaxed)) peak_.store(now, std::memory_order_relaxed);
    op.extra_ = queue_.knowledge();
    op.producer_ = queue_.axis().raw() != 0 ? frontier_entry{queue_.axis(), queue_.epoch()}
                                             : frontier_entry{};
    return true;
  }

  void complete_alloca_locked(alloca_type& op) noexcept {
    op.outcome_ = status{};
    op.out_.emplace(stream_buffer{op.block_.offset, op.block_.size,
                                  arena_ != nullptr ? arena_ + op.block_.offset : nullptr});
  }

  status release_locked(alloca_type& target) noexcept {
    if (!target.assigned_) {
      return error{errc::failed_precondition,
                   "stream pool: buffer not allocated (its alloca failed or has not run; order "
                   "the dealloca after the alloca's signal fence)"};
    }
    if (target.released_) {
      return error{errc::failed_precondition, "stream pool: buffer released twice"};
    }
    queue_.advance();
    const status s = blocks_->release(target.block_, queue_);
    if (!s) return s;
    target.released_ = true;
    committed_.store(committed_.load(std::memory_order_relaxed) - target.block_.size,
                     std::memory_order_relaxed);
    ++stats_.deallocas;
    return {};
  }

  /// Serves the FIFO's head while it fits; collects those served.
  void serve_locked(wake_list& woken) noexcept {
    while (head_ != nullptr) {
      alloca_type& op = *head_;
      if (!try_assign_locked(op)) {
        if (op.outcome_) return;  // no room yet: keep the order
        // A hard error: it leaves the FIFO and completes with it.
      }
      unlink_locked(op);
      // Keeps `op` alive until it is woken, even if it is cancelled
      // meanwhile (its completion then gives the block back).
      op.ref();
      op.next_ = woken.head;
      woken.head = &op;
    }
  }

  void unlink_locked(alloca_type& op) noexcept {
    alloca_type* prev = nullptr;
    for (alloca_type* p = head_; p != nullptr; prev = p, p = p->next_) {
      if (p != &op) continue;
      if (prev != nullptr) {
        prev->next_ = p->next_;
      } else {
        head_ = p->next_;
      }
      if (tail_ == p) tail_ = prev;
      break;
    }
    op.queued_ = false;
    op.next_ = nullptr;
  }

  static void wake_all(wake_list& woken) noexcept {
    alloca_type* op = woken.head;
    while (op != nullptr) {
      alloca_type* next = op->next_;
      op->next_ = nullptr;
      (void)op->proc_.wake(1);
      op->unref();
      op = next;
    }
  }

  /// Our entry on the executor's list of bound objects (see the constructor).
  struct bound_entry : detail::bound_link {
    const basic_stream_pool* owner = nullptr;
  };
  static void describe_bound(const detail::bound_link& link, char* out, std::size_t size) noexcept {
    const basic_stream_pool& p = *static_cast<const bound_entry&>(link).owner;
    std::snprintf(out, size, "stream_pool of %zu bytes: %zu bytes committed", p.quota_, p.committed());
  }

  Executor* ex_;
  bound_entry bound_{};
  const std::size_t quota_;
  const std::size_t alignment_;
  std::byte* const arena_;
  mutable detail::spin_lock lock_;
  queue_type queue_{};
  std::optional<block_pool_type> blocks_{};
  alloca_type* head_ = nullptr;
  alloca_type* tail_ = nullptr;
  stream_pool_stats stats_{};
  std::atomic<std::size_t> committed_{0};
  std::atomic<std::size_t> peak_{0};
  // Last: destroyed first, so operations finish before the pool's state goes.
  scope group_;
};

/// The default stream pool.
using stream_pool = basic_stream_pool<>;

//===-- free functions --------------------------------------------------------===//

/// Schedules an allocation of `size` bytes from `pool`: it runs once `wait`
/// is reached (and, if the quota is in use, once deallocas make room),
/// then signals `signal`. The handle's get() is the stream_buffer. A size
/// over the quota fails with `errc::capacity_exceeded`.
template <class Pool>
typename Pool::buffer_handle stream_alloca(Pool& pool, std::size_t size,
                                           const typename Pool::fence_type& wait,
                                           const typename Pool::fence_type& signal) noexcept {
  return pool.alloca_async(size, wait, signal);
}

/// Schedules the release of `buffer` once `wait` (and the buffer's alloca)
/// is reached, then signals `signal`. Released twice, or a buffer whose
/// alloca failed: `errc::failed_precondition`.
template <class Pool>
basic_invocation<void, typename Pool::fence_type> stream_dealloca(
    Pool& pool, const typename Pool::buffer_handle& buffer, const typename Pool::fence_type& wait,
    const typename Pool::fence_type& signal) noexcept {
  return pool.dealloca_async(buffer, wait, signal);
}

namespace detail {

/// The buffers an invocation owns; released when its fn returns, or at the
/// latest when the invocation is destroyed.
template <class Pool>
class transferred_buffers {
 public:
  transferred_buffers(Pool& pool, std::initializer_list<typename Pool::buffer_handle> inputs) noexcept
      : pool_(&pool) {
    for (const auto& b : inputs) {
      if (count_ == Pool::max_transfers) break;
      buffers_[count_++] = b;
    }
  }
  transferred_buffers(transferred_buffers&& o) noexcept
      : pool_(o.pool_), buffers_(std::move(o.buffers_)), count_(std::exchange(o.count_, 0)) {}
  transferred_buffers(const transferred_buffers&) = delete;
  transferred_buffers& operator=(const transferred_buffers&) = delete;
  transferred_buffers& operator=(transferred_buffers&&) = delete;
  ~transferred_buffers() { release(); }

  void release() noexcept {
    for (std::size_t i = 0; i < count_; ++i) {
      (void)pool_->release_now(buffers_[i]);
      buffers_[i].reset();
    }
    count_ = 0;
  }

 private:
  Pool* pool_;
  std::array<typename Pool::buffer_handle, Pool::max_transfers> buffers_{};
  std::size_t count_ = 0;
};

}  // namespace detail

/// Like async_invoke on the pool's executor, with `inputs` transferred to
/// the callee: each is released as soon as fn returns (before the signal),
/// or when the invocation ends if fn never runs. The caller must not
/// dealloca them. More than Pool::max_transfers inputs:
/// `errc::capacity_exceeded` (nothing is scheduled; the signal fence fails).
template <class Pool, class F>
  requires std::invocable<std::decay_t<F>&>
basic_invocation<invoke_value_t<F>, typename Pool::fence_type> async_invoke_transfer(
    Pool& pool, F&& fn, const typename Pool::fence_type& wait,
    const typename Pool::fence_type& signal,
    std::initializer_list<typename Pool::buffer_handle> inputs,
    const invoke_options& options = {}) noexcept {
  using fence_type = typename Pool::fence_type;
  if (inputs.size() > Pool::max_transfers) {
    const error e{errc::capacity_exceeded, "async_invoke_transfer: more than max_transfers inputs",
                  Pool::max_transfers};
    signal.fail(e);
    return basic_invocation<invoke_value_t<F>, fence_type>{e};
  }
  auto body = [f = std::forward<F>(fn), owned = detail::transferred_buffers<Pool>(pool, inputs)]() mutable {
    struct release_on_exit {
      detail::transferred_buffers<Pool>& owned;
      ~release_on_exit() { owned.release(); }
    } guard{owned};
    return std::invoke(f);
  };
  return async_invoke<fence_type>(pool.get_executor(), std::move(body), wait, signal, options);
}

CAUSAL_END_NAMESPACE
