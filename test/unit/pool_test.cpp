// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Tests for <causal/pool.hpp>: fresh carves and alignment; free reuse by
// knowledge (the freeing queue's FIFO, another queue covering the
// producer, dominance when there is no producer); free reuse by completion
// (tracker, timeline); "try before you fence" (exactly one device wait on
// the producer's timeline, visible in the recording backend's log and
// ordering the acquirer's next operation; several waits only without a
// usable producer timeline; the block with the fewest waits wins; the
// block lists the waits it cost); the soundness rule for tainted death
// frontiers; isolation between unrelated workloads (docs/buffers.md);
// splitting and merging; coalescing fragments freed by different queues
// once all have retired (never one not proven retired), and giving a
// retired top block back to the fresh tail; every error path, each
// leaving the pool unchanged; the counters; and the promise that acquire
// and release never allocate.
//
// Queues are recording_queue (the in-memory reference backend). A queue's
// "timeline" is a semaphore it signals to its new epoch on every operation,
// so value v means epoch v retired once the backend completes it.

#include <causal/completion.hpp>
#include <causal/pool.hpp>
#include <causal/queue.hpp>
#include <causal/semaphore.hpp>

#include "catch.hpp"
#include "string_makers.hpp"
#include "counting_new.hpp"

#include <cstddef>
#include <cstdint>
#include <array>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

namespace Catch {
template <>
struct StringMaker<causal::pool_path> {
  static std::string convert(causal::pool_path p) { return std::string(causal::to_string(p)); }
};
}  // namespace Catch

namespace {

using causal::axis;
using causal::completion_tracker;
using causal::domain;
using causal::errc;
using causal::frontier;
using causal::frontier_entry;
using causal::pool_path;
using causal::pool_stats;
using causal::semaphore;

using queue_t = causal::recording_queue<>;
using pool_t = causal::basic_block_pool<queue_t>;
using event_kind = queue_t::backend_type::event_kind;

axis queue_axis(std::uint64_t n) { return causal::make_axis(0, 0, domain::queue, n).value(); }

const axis F = queue_axis(1);  // the freeing queue
const axis R = queue_axis(2);  // a reusing queue
const axis G = queue_axis(3);  // another freeing queue
const axis X = queue_axis(10);
const axis Y = queue_axis(11);

/// Submits one operation on `q`, signalling `timeline` (when given) to the
/// operation's epoch. Returns the epoch.
std::uint64_t run_op(queue_t& q, semaphore* timeline = nullptr) {
  auto r = timeline != nullptr ? q.submit({}, {{timeline, q.epoch() + 1}}, 0) : q.submit({}, {}, 0);
  REQUIRE(r);
  REQUIRE_FALSE(r->deferred);
  return r->epoch;
}

/// Completes `q`'s oldest issued operation if it can run; retires it.
std::uint64_t complete_one(queue_t& q) {
  const std::uint64_t e = q.backend().complete_next();
  if (e != 0) q.retire(e);
  return e;
}

void complete_all(queue_t& q) {
  while (complete_one(q) != 0) {
  }
}

/// Everything observable about a pool except its failure counter.
struct snapshot {
  std::size_t carved, live, free, free_bytes, fresh;
  pool_stats stats;
  friend bool operator==(const snapshot&, const snapshot&) = default;
};

template <class Pool>
snapshot snap(const Pool& p) {
  pool_stats s = p.stats();
  s.failures = 0;
  return snapshot{p.carved(), p.live_count(), p.free_count(), p.free_bytes(), p.fresh_bytes(), s};
}

/// A frontier of 13 distinct axes: built through the evicting policy, it
/// holds 12 and is tainted.
frontier overflowing_frontier() {
  frontier f{{queue_axis(20), 1}, {queue_axis(21), 2}, {queue_axis(22), 3}, {queue_axis(23), 4},
             {queue_axis(24), 5}, {queue_axis(25), 6}, {queue_axis(26), 7}, {queue_axis(27), 8},
             {queue_axis(28), 9}, {queue_axis(29), 10}, {queue_axis(30), 11}, {queue_axis(31), 12},
             {queue_axis(32), 13}};
  REQUIRE(f.tainted());
  return f;
}

}  // namespace

//===-- fresh carves --------------------------------------------------------===//

TEST_CASE("pool: fresh carves are aligned, disjoint and within the quota", "[pool][fresh]") {
  pool_t pool(1024, 64);
  REQUIRE(pool.setup_status());
  queue_t q{F};
  auto a = pool.acquire(q, 1);
  auto b = pool.acquire(q, 100);
  auto c = pool.acquire(q, 64);
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(c);
  CHECK(a->offset == 0);
  CHECK(a->size == 64);
  CHECK(b->offset == 64);
  CHECK(b->size == 128);
  CHECK(c->offset == 192);
  CHECK(c->size == 64);
  CHECK(a->path == pool_path::fresh);
  CHECK(pool.carved() == 256);
  CHECK(pool.fresh_bytes() == 768);
  CHECK(pool.live_count() == 3);
  CHECK(pool.free_count() == 0);
  CHECK(pool.stats().fresh_carves == 3);
  CHECK(q.backend().total_events() == 0);  // no device work at all
}

//===-- free reuse by knowledge ---------------------------------------------===//

TEST_CASE("pool: the freeing queue reuses its own block for free (FIFO)", "[pool][knowledge]") {
  pool_t pool(256, 64);
  queue_t f{F};
  auto b = pool.acquire(f, 256);
  REQUIRE(b);
  const std::uint64_t e = run_op(f);  // the last use
  REQUIRE(pool.release(*b, f));
  REQUIRE(pool.free_count() == 1);
  CHECK(pool.free_block(0).producer == frontier_entry{F, e});
  CHECK(*pool.free_block(0).death == f.knowledge());

  auto again = pool.acquire(f, 256);
  REQUIRE(again);
  CHECK(again->path == pool_path::knowledge);
  CHECK(again->offset == b->offset);
  CHECK(pool.stats().reused_by_knowledge == 1);
  CHECK(pool.stats().waits_issued == 0);
  CHECK(f.backend().count(event_kind::wait) == 0);
}

TEST_CASE("pool: another queue reuses for free once its knowledge covers the producer",
          "[pool][knowledge]") {
  pool_t pool(256, 64);
  queue_t f{F}, r{R};
  semaphore tl_f;  // F's timeline (not registered: no fencing in this test)
  auto b = pool.acquire(f, 256);
  REQUIRE(b);
  run_op(f, &tl_f);
  const std::uint64_t e = run_op(f, &tl_f);
  REQUIRE(pool.release(*b, f));

  // R knows nothing of F: no free proof, no fresh space, no timeline.
  const snapshot before = snap(pool);
  auto no = pool.acquire(r, 64);
  REQUIRE_FALSE(no);
  CHECK(no.code() == errc::resource_exhausted);
  CHECK(snap(pool) == before);

  SECTION("knowing an earlier epoch of F is not enough") {
    REQUIRE(r.submit({{&tl_f, e - 1}}, {}, 0));
    CHECK(r.knowledge().epoch_of(F) == e - 1);
    CHECK_FALSE(pool.acquire(r, 64));
  }
  SECTION("a wait that imports F's frontier at the free makes reuse free") {
    REQUIRE(r.submit({{&tl_f, e}}, {}, 0));  // tier 2: R's own device wait
    REQUIRE(r.knowledge().epoch_of(F) == e);
    const std::size_t waits_before = r.backend().count(event_kind::wait);
    auto got = pool.acquire(r, 64);
    REQUIRE(got);
    CHECK(got->path == pool_path::knowledge);
    CHECK(got->offset == 0);
    CHECK(r.backend().count(event_kind::wait) == waits_before);  // the pool issued none
    CHECK(pool.stats().reused_by_knowledge == 1);
    CHECK(pool.stats().waits_issued == 0);
  }
}

TEST_CASE("pool: a producer that was never submitted proves nothing: reuse by knowledge needs "
          "dominance of the death frontier",
          "[pool][knowledge]") {
  pool_t pool(128, 64);
  queue_t host{G}, r{R};  // `host` never submits: its producer never comes
  auto b = pool.acquire(host, 128);
  REQUIRE(b);
  host.learn(frontier{{X, 3}, {Y, 4}});
  REQUIRE(pool.release(*b, host));
  // What `host` learnt orders only its next operation: that is the
  // producer, and it may never be submitted.
  CHECK(pool.free_block(0).producer == frontier_entry{G, 1});
  CHECK(pool.free_block(0).producer_ahead);

  r.learn(frontier{{X, 3}, {Y, 3}});
  CHECK_FALSE(pool.acquire(r, 64));  // Y:4 not covered
  r.learn(frontier{{Y, 4}});
  auto got = pool.acquire(r, 64);
  REQUIRE(got);
  CHECK(got->path == pool_path::knowledge);
}

//===-- free reuse by completion --------------------------------------------===//

TEST_CASE("pool: the completion tracker proves a producer retired", "[pool][completion]") {
  completion_tracker tracker;
  REQUIRE(tracker.register_axis(F));
  pool_t pool(256, 64, &tracker);
  queue_t f{F}, r{R};
  f.track_completion(tracker);
  auto b = pool.acquire(f, 256);
  REQUIRE(b);
  run_op(f);
  const std::uint64_t e = run_op(f);
  REQUIRE(pool.release(*b, f));
  const frontier r_before = r.knowledge();

  CHECK_FALSE(pool.acquire(r, 256));  // nothing retired yet
  REQUIRE(complete_one(f) == e - 1);
  CHECK_FALSE(pool.acquire(r, 256));  // retired below the death epoch
  REQUIRE(complete_one(f) == e);
  REQUIRE(tracker.is_retired({F, e}));
  auto got = pool.acquire(r, 256);
  REQUIRE(got);
  CHECK(got->path == pool_path::completion);
  CHECK(pool.stats().reused_by_completion == 1);
  CHECK(r.backend().total_events() == 0);
  CHECK(r.knowledge() == r_before);  // nothing of F's past was imported
}

TEST_CASE("pool: a registered timeline that reached the producer epoch proves it retired",
          "[pool][completion]") {
  pool_t pool(256, 64);
  queue_t f{F}, r{R};
  semaphore tl_f;
  REQUIRE(pool.register_timeline(F, tl_f));
  auto b = pool.acquire(f, 256);
  REQUIRE(b);
  const std::uint64_t e = run_op(f, &tl_f);
  REQUIRE(pool.release(*b, f));
  complete_all(f);
  REQUIRE(tl_f.value() == e);
  auto got = pool.acquire(r, 256);
  REQUIRE(got);
  CHECK(got->path == pool_path::completion);
  CHECK(r.backend().count(event_kind::wait) == 0);

  SECTION("an external (tainted) timeline value does not count") {
    pool_t pool2(64, 64);
    queue_t g{G}, r2{R};
    semaphore tl_g;
    REQUIRE(pool2.register_timeline(G, tl_g));
    auto b2 = pool2.acquire(g, 64);
    REQUIRE(b2);
    const std::uint64_t eg = run_op(g);  // no witnessed signal of tl_g
    REQUIRE(pool2.release(*b2, g));
    REQUIRE(tl_g.signal_external(eg));
    REQUIRE(tl_g.is_tainted(eg));
    auto got2 = pool2.acquire(r2, 64);
    REQUIRE(got2);
    CHECK(got2->path == pool_path::fenced);  // a device wait instead
    CHECK(r2.backend().count(event_kind::wait) == 1);
  }
}

//===-- try before you fence ------------------------------------------------===//

TEST_CASE("pool: try before you fence issues exactly one wait on the producer's timeline",
          "[pool][fence]") {
  pool_t pool(256, 64);
  queue_t f{F}, r{R};
  semaphore tl_f;
  REQUIRE(pool.register_timeline(F, tl_f));
  auto b = pool.acquire(f, 256);
  REQUIRE(b);
  // F's death frontier names more than F: it waited on X and Y's work.
  f.learn(frontier{{X, 7}, {Y, 9}});
  run_op(f, &tl_f);
  const std::uint64_t e = run_op(f, &tl_f);
  REQUIRE(pool.release(*b, f));
  REQUIRE(pool.free_block(0).death->size() == 3);

  const std::size_t events_before = r.backend().total_events();
  auto got = pool.acquire(r, 256);
  REQUIRE(got);
  CHECK(got->path == pool_path::fenced);
  CHECK(got->offset == 0);
  CHECK(pool.stats().reused_after_wait == 1);
  CHECK(pool.stats().waits_issued == 1);
  // Exactly one event, a wait on F's timeline at the producer epoch.
  REQUIRE(r.backend().total_events() == events_before + 1);
  const auto& w = r.backend().event_at(r.backend().event_count() - 1);
  CHECK(w.kind == event_kind::wait);
  CHECK(w.semaphore == &tl_f);
  CHECK(w.value == e);
  // R learnt the whole death frontier.
  CHECK(causal::dominates(r.knowledge(), frontier{{F, e}, {X, 7}, {Y, 9}}));

  // The wait orders R's next operation after F's freeing operation.
  const std::uint64_t next = run_op(r);
  CHECK(complete_one(r) == 0);  // blocked: tl_f < e
  CHECK(complete_one(f) == e - 1);
  CHECK(complete_one(r) == 0);
  CHECK(complete_one(f) == e);
  CHECK(complete_one(r) == next);
}

TEST_CASE("pool: a block freed after a fenced acquire, before any submission, names the next "
          "operation as its producer: covering or retiring the current epoch proves nothing",
          "[pool][fence][producer]") {
  // F frees B (its last use is F:1). R fence-acquires B: one wait on F's
  // timeline, which orders R's *next* operation. R frees B at once, before
  // submitting anything. B's previous user (F:1) may still run: R's epoch
  // (R:1) does not cover the fence wait.
  completion_tracker tracker;
  REQUIRE(tracker.register_axis(F));
  REQUIRE(tracker.register_axis(R));
  REQUIRE(tracker.register_axis(G));
  causal::basic_block_pool<queue_t> pool(64, 64, &tracker);
  queue_t f{F}, r{R}, g{G};
  f.track_completion(tracker);
  r.track_completion(tracker);
  semaphore tl_f, tl_r;
  REQUIRE(pool.register_timeline(F, tl_f));
  REQUIRE(pool.register_timeline(R, tl_r));
  auto b = pool.acquire(f, 64);
  REQUIRE(b);
  const std::uint64_t last_use = run_op(f, &tl_f);  // F:1 uses B
  REQUIRE(pool.release(*b, f));
  run_op(r, &tl_r);  // R:1, unrelated
  complete_all(r);   // R:1 retired
  auto fenced = pool.acquire(r, 64);
  REQUIRE(fenced);
  REQUIRE(fenced->path == pool_path::fenced);
  REQUIRE(r.knowledge_producer() == frontier_entry{R, 2});  // ahead of R:1
  REQUIRE(pool.release(*fenced, r));
  CHECK(pool.free_block(0).producer == frontier_entry{R, 2});
  CHECK(pool.free_block(0).producer_ahead);

  SECTION("the tracker showing R:1 retired does not free it") {
    REQUIRE(tracker.is_retired(frontier_entry{R, 1}));
    auto got = pool.acquire(g, 64);
    // G cannot reuse it for free; it fences on F:1 itself (the death
    // frontier's entries), never on R:2, which may never be submitted.
    REQUIRE(got);
    CHECK(got->path == pool_path::fenced);
    bool waits_on_f = false;
    for (std::size_t i = 0; i < g.backend().event_count(); ++i) {
      const auto& ev = g.backend().event_at(i);
      CHECK(ev.semaphore != &tl_r);
      waits_on_f = waits_on_f || (ev.semaphore == &tl_f && ev.value == last_use);
    }
    CHECK(waits_on_f);
  }
  SECTION("knowledge covering R:1 does not free it") {
    g.learn(frontier{{R, 1}});
    auto got = pool.acquire(g, 64);
    REQUIRE(got);
    CHECK(got->path == pool_path::fenced);
  }
  SECTION("R itself reuses it for free: its next operation follows the fence wait") {
    auto got = pool.acquire(r, 64);
    REQUIRE(got);
    CHECK(got->path == pool_path::knowledge);
  }
  SECTION("once R's next operation retires, anyone reuses it") {
    run_op(r, &tl_r);  // R:2, after the fence wait on F:1
    complete_all(f);
    complete_all(r);
    REQUIRE(tracker.is_retired(frontier_entry{R, 2}));
    auto got = pool.acquire(g, 64);
    REQUIRE(got);
    CHECK(got->path == pool_path::completion);
  }
  SECTION("covering F:1 as well (the whole death frontier) frees it") {
    g.learn(frontier{{R, 1}, {F, last_use}});
    auto got = pool.acquire(g, 64);
    REQUIRE(got);
    CHECK(got->path == pool_path::knowledge);
  }
}

TEST_CASE("pool: fresh space is preferred to fencing", "[pool][fence]") {
  pool_t pool(512, 64);
  queue_t f{F}, r{R};
  semaphore tl_f;
  REQUIRE(pool.register_timeline(F, tl_f));
  auto b = pool.acquire(f, 256);
  REQUIRE(b);
  run_op(f, &tl_f);
  REQUIRE(pool.release(*b, f));
  auto got = pool.acquire(r, 256);
  REQUIRE(got);
  CHECK(got->path == pool_path::fresh);
  CHECK(got->offset == 256);
  CHECK(r.backend().total_events() == 0);
  auto fenced = pool.acquire(r, 256);
  REQUIRE(fenced);
  CHECK(fenced->path == pool_path::fenced);
  CHECK(fenced->offset == 0);
}

TEST_CASE("pool: without a producer timeline, one wait per uncovered gap entry",
          "[pool][fence]") {
  completion_tracker tracker;
  REQUIRE(tracker.register_axis(X));
  REQUIRE(tracker.register_axis(Y));
  pool_t pool(128, 64, &tracker);
  queue_t host{G}, r{R};
  semaphore tl_x, tl_y;
  REQUIRE(pool.register_timeline(X, tl_x));
  REQUIRE(pool.register_timeline(Y, tl_y));
  auto b = pool.acquire(host, 128);
  REQUIRE(b);
  host.learn(frontier{{X, 3}, {Y, 4}});  // host never submits: no producer
  REQUIRE(pool.release(*b, host));

  SECTION("two gaps, two waits, one per timeline") {
    auto got = pool.acquire(r, 128);
    REQUIRE(got);
    CHECK(got->path == pool_path::fenced);
    CHECK(pool.stats().waits_issued == 2);
    REQUIRE(r.backend().count(event_kind::wait) == 2);
    CHECK(r.backend().event_at(0).semaphore == &tl_x);
    CHECK(r.backend().event_at(0).value == 3);
    CHECK(r.backend().event_at(1).semaphore == &tl_y);
    CHECK(r.backend().event_at(1).value == 4);
  }
  SECTION("a gap entry the tracker retired needs no wait") {
    REQUIRE(tracker.advance(X, 5));
    auto got = pool.acquire(r, 128);
    REQUIRE(got);
    CHECK(pool.stats().waits_issued == 1);
    REQUIRE(r.backend().count(event_kind::wait) == 1);
    CHECK(r.backend().event_at(0).semaphore == &tl_y);
  }
  SECTION("a gap entry the knowledge covers needs no wait") {
    r.learn(frontier{{Y, 4}});
    auto got = pool.acquire(r, 128);
    REQUIRE(got);
    REQUIRE(r.backend().count(event_kind::wait) == 1);
    CHECK(r.backend().event_at(0).semaphore == &tl_x);
  }
  SECTION("a gap axis with no timeline makes the block unfenceable") {
    REQUIRE(pool.unregister_timeline(Y));
    const snapshot before = snap(pool);
    auto no = pool.acquire(r, 128);
    REQUIRE_FALSE(no);
    CHECK(no.code() == errc::resource_exhausted);
    CHECK(snap(pool) == before);
    CHECK(r.backend().total_events() == 0);
  }
}

TEST_CASE("pool: the fencing path picks the block with the fewest waits, skipping unfenceable ones",
          "[pool][fence]") {
  pool_t pool(384, 64);
  queue_t f{F}, g{G}, host{queue_axis(4)}, r{R};
  semaphore tl_f, tl_x, tl_y;
  REQUIRE(pool.register_timeline(F, tl_f));
  REQUIRE(pool.register_timeline(X, tl_x));
  REQUIRE(pool.register_timeline(Y, tl_y));
  auto bg = pool.acquire(g, 128);     // freed by G: no timeline for G
  auto bh = pool.acquire(host, 128);  // freed with no producer: 2 waits
  auto bf = pool.acquire(f, 128);     // freed by F: 1 wait
  REQUIRE(bg);
  REQUIRE(bh);
  REQUIRE(bf);
  run_op(g);
  host.learn(frontier{{X, 1}, {Y, 1}});
  const std::uint64_t e = run_op(f, &tl_f);
  REQUIRE(pool.release(*bg, g));
  REQUIRE(pool.release(*bh, host));
  REQUIRE(pool.release(*bf, f));

  auto first = pool.acquire(r, 128);
  REQUIRE(first);
  CHECK(first->offset == bf->offset);
  CHECK(r.backend().count(event_kind::wait) == 1);
  CHECK(r.backend().event_at(0).value == e);
  auto second = pool.acquire(r, 128);
  REQUIRE(second);
  CHECK(second->offset == bh->offset);
  CHECK(r.backend().count(event_kind::wait) == 3);
  auto third = pool.acquire(r, 128);  // only G's block is left: unfenceable
  REQUIRE_FALSE(third);
  CHECK(third.code() == errc::resource_exhausted);
  CHECK(pool.stats().reused_after_wait == 2);
  CHECK(pool.stats().waits_issued == 3);
}

TEST_CASE("pool: a fenced acquire lists the waits it issued in the block it returns",
          "[pool][fence][report]") {
  SECTION("one wait on the producer's timeline") {
    pool_t pool(256, 64);
    queue_t f{F}, r{R};
    semaphore tl_f;
    REQUIRE(pool.register_timeline(F, tl_f));
    auto b = pool.acquire(f, 256);
    REQUIRE(b);
    CHECK(b->wait_count == 0);  // a fresh carve fences on nothing
    CHECK(b->reported_waits().empty());
    const std::uint64_t e = run_op(f, &tl_f);
    REQUIRE(pool.release(*b, f));
    auto own = pool.acquire(f, 256);  // free reuse: no wait either
    REQUIRE(own);
    CHECK(own->path == pool_path::knowledge);
    CHECK(own->wait_count == 0);
    REQUIRE(pool.release(*own, f));

    auto got = pool.acquire(r, 256);
    REQUIRE(got);
    REQUIRE(got->path == pool_path::fenced);
    REQUIRE(got->wait_count == 1);
    REQUIRE(got->reported_waits().size() == 1);
    const causal::pool_wait w = got->reported_waits()[0];
    CHECK(w.semaphore == &tl_f);
    CHECK(w.axis == F);
    CHECK(w.value == e);
    // The same wait the backend was given.
    const auto& ev = r.backend().event_at(r.backend().event_count() - 1);
    CHECK(ev.kind == event_kind::wait);
    CHECK(ev.semaphore == w.semaphore);
    CHECK(ev.value == w.value);
  }
  SECTION("more waits than the inline list: all counted, the first ones listed in order") {
    constexpr std::size_t n = causal::pool_block::max_reported_waits + 2;
    pool_t pool(64, 64);
    queue_t host{G}, r{R};
    std::array<semaphore, n> timelines;
    frontier learnt;
    for (std::size_t i = 0; i < n; ++i) {
      const axis a = queue_axis(50 + i);
      REQUIRE(pool.register_timeline(a, timelines[i]));
      learnt.insert_or_raise(a, 10 + i);
    }
    auto b = pool.acquire(host, 64);
    REQUIRE(b);
    host.learn(learnt);  // host never submits: a wait per gap entry
    REQUIRE(pool.release(*b, host));
    auto got = pool.acquire(r, 64);
    REQUIRE(got);
    REQUIRE(got->path == pool_path::fenced);
    CHECK(got->wait_count == n);
    CHECK(pool.stats().waits_issued == n);
    REQUIRE(got->reported_waits().size() == causal::pool_block::max_reported_waits);
    REQUIRE(r.backend().count(event_kind::wait) == n);
    for (std::size_t i = 0; i < causal::pool_block::max_reported_waits; ++i) {
      CAPTURE(i);
      const auto& ev = r.backend().event_at(i);
      CHECK(got->waits[i].semaphore == ev.semaphore);
      CHECK(got->waits[i].value == ev.value);
      CHECK(learnt.epoch_of(got->waits[i].axis) == ev.value);
    }
  }
  SECTION("a fence whose gaps all retired issues nothing and lists nothing") {
    completion_tracker tracker;
    REQUIRE(tracker.register_axis(X));
    pool_t pool(64, 64, &tracker);
    queue_t host{G}, r{R};
    semaphore tl_x;
    REQUIRE(pool.register_timeline(X, tl_x));
    auto b = pool.acquire(host, 64);
    REQUIRE(b);
    host.learn(frontier{{X, 3}});
    REQUIRE(pool.release(*b, host));
    REQUIRE(tracker.advance(X, 3));
    auto got = pool.acquire(r, 64);
    REQUIRE(got);
    CHECK(got->path == pool_path::completion);
    CHECK(got->wait_count == 0);
    CHECK(r.backend().total_events() == 0);
  }
}

TEST_CASE("pool: a binary-event backend cannot fence on a value nobody submitted",
          "[pool][fence]") {
  using bqueue_t = causal::recording_queue<false>;
  causal::basic_block_pool<bqueue_t> pool(64, 64);
  bqueue_t f{F}, r{R};
  semaphore tl_f;
  REQUIRE(pool.register_timeline(F, tl_f));
  auto b = pool.acquire(f, 64);
  REQUIRE(b);

  SECTION("unsubmitted: no fence") {
    REQUIRE(f.submit({}, {}, 0));  // the freeing op does not signal tl_f
    REQUIRE(pool.release(*b, f));
    auto no = pool.acquire(r, 64);
    REQUIRE_FALSE(no);
    CHECK(no.code() == errc::resource_exhausted);
    CHECK(r.backend().total_events() == 0);
  }
  SECTION("submitted: one wait") {
    REQUIRE(f.submit({}, {{&tl_f, 1}}, 0));
    REQUIRE(pool.release(*b, f));
    auto got = pool.acquire(r, 64);
    REQUIRE(got);
    CHECK(got->path == pool_path::fenced);
    CHECK(r.backend().count(bqueue_t::backend_type::event_kind::wait) == 1);
  }
}

TEST_CASE("pool: a failed wait leaves the block free; a failed timeline is never waited on",
          "[pool][fence][errors]") {
  pool_t pool(64, 64);
  queue_t f{F}, r{R};
  semaphore tl_f;
  REQUIRE(pool.register_timeline(F, tl_f));
  auto b = pool.acquire(f, 64);
  REQUIRE(b);
  run_op(f, &tl_f);
  REQUIRE(pool.release(*b, f));
  const frontier r_before = r.knowledge();

  SECTION("issue_wait fails") {
    const snapshot before = snap(pool);
    r.backend().fail_next_wait();
    auto no = pool.acquire(r, 64);
    REQUIRE_FALSE(no);
    CHECK(no.code() == errc::device_lost);
    CHECK(snap(pool) == before);
    CHECK(pool.stats().failures == 1);
    CHECK(r.knowledge() == r_before);  // nothing learnt without the wait
    auto got = pool.acquire(r, 64);    // the retry works
    REQUIRE(got);
    CHECK(got->path == pool_path::fenced);
  }
  SECTION("the timeline failed") {
    tl_f.fail(causal::error{errc::device_lost, "test: F's device is gone"});
    auto no = pool.acquire(r, 64);
    REQUIRE_FALSE(no);
    CHECK(no.code() == errc::resource_exhausted);
    CHECK(r.backend().total_events() == 0);
  }
}

//===-- taint ---------------------------------------------------------------===//

TEST_CASE("pool: a tainted death frontier is never reused by dominance alone", "[pool][taint]") {
  completion_tracker tracker;
  REQUIRE(tracker.register_axis(F));
  pool_t pool(64, 64, &tracker);
  queue_t f{F}, r{R};
  semaphore tl_f;
  auto b = pool.acquire(f, 64);
  REQUIRE(b);
  const frontier big = overflowing_frontier();

  SECTION("with a producer: covered, retired or one wait") {
    f.learn(big);
    f.track_completion(tracker);
    run_op(f, &tl_f);
    const std::uint64_t e = run_op(f, &tl_f);
    REQUIRE(pool.release(*b, f));
    const frontier& death = *pool.free_block(0).death;
    REQUIRE(death.tainted());
    REQUIRE(death.epoch_of(F) == e);  // the producer's axis is pinned

    // R knows every entry but the producer's epoch: not enough.
    for (const frontier_entry x : death) {
      if (x.axis != F) r.learn(frontier{x});
    }
    r.learn(frontier{{F, e - 1}});
    REQUIRE_FALSE(r.knowledge().tainted());
    for (const frontier_entry x : death) {
      if (x.axis != F) REQUIRE(r.knowledge().epoch_of(x.axis) >= x.epoch);
    }
    CHECK_FALSE(pool.acquire(r, 64));

    SECTION("covering the producer proves the whole tainted past") {
      r.learn(frontier{{F, e}});
      auto got = pool.acquire(r, 64);
      REQUIRE(got);
      CHECK(got->path == pool_path::knowledge);
    }
    SECTION("the tracker retiring the producer proves it") {
      complete_all(f);
      auto got = pool.acquire(r, 64);
      REQUIRE(got);
      CHECK(got->path == pool_path::completion);
    }
    SECTION("or one wait on the producer's timeline") {
      REQUIRE(pool.register_timeline(F, tl_f));
      auto got = pool.acquire(r, 64);
      REQUIRE(got);
      CHECK(got->path == pool_path::fenced);
      REQUIRE(r.backend().count(event_kind::wait) == 1);
      CHECK(r.backend().event_at(0).value == e);
      CHECK(r.knowledge().tainted());  // learnt, taint and all
    }
  }
  SECTION("with a producer never submitted: entry-wise coverage never suffices") {
    queue_t host{G};  // never submits
    host.learn(big);
    REQUIRE(pool.release(*b, host));
    REQUIRE(pool.free_block(0).death->tainted());
    REQUIRE(pool.free_block(0).producer_ahead);  // (G, 1): never submitted
    r.learn(big);
    for (const frontier_entry x : *pool.free_block(0).death) {
      REQUIRE(r.knowledge().epoch_of(x.axis) >= x.epoch);  // every entry covered...
    }
    const snapshot before = snap(pool);
    auto no = pool.acquire(r, 64);  // ...but the dropped ones are unknown
    REQUIRE_FALSE(no);
    CHECK(no.code() == errc::resource_exhausted);
    CHECK(snap(pool) == before);
    CHECK(r.backend().total_events() == 0);
  }
}

//===-- isolation -----------------------------------------------------------===//

TEST_CASE("pool: model B reuses model A's block with zero waits only after A retired past the "
          "death epoch",
          "[pool][isolation]") {
  completion_tracker tracker;
  const axis A = queue_axis(40), B = queue_axis(41);
  REQUIRE(tracker.register_axis(A));
  REQUIRE(tracker.register_axis(B));
  pool_t pool(1024, 64, &tracker);
  queue_t model_a{A}, model_b{B};
  model_a.track_completion(tracker);
  model_b.track_completion(tracker);
  semaphore tl_a;

  // Model A uses the whole quota for three operations, then frees it.
  auto weights = pool.acquire(model_a, 1024);
  REQUIRE(weights);
  run_op(model_a, &tl_a);
  run_op(model_a, &tl_a);
  const std::uint64_t death_epoch = run_op(model_a, &tl_a);
  REQUIRE(pool.release(*weights, model_a));
  // A keeps working after the free; none of that may couple B.
  run_op(model_a, &tl_a);
  // Model B has its own history, disjoint from A's.
  run_op(model_b);
  const frontier b_knowledge = model_b.knowledge();

  SECTION("no timeline for A: B cannot reuse until A's axis retires past the death epoch") {
    CHECK_FALSE(pool.acquire(model_b, 512));
    REQUIRE(complete_one(model_a) == 1);
    REQUIRE(complete_one(model_a) == 2);
    CHECK(tracker.retired_epoch(A) == death_epoch - 1);
    CHECK_FALSE(pool.acquire(model_b, 512));
    REQUIRE(complete_one(model_a) == death_epoch);
    auto got = pool.acquire(model_b, 512);
    REQUIRE(got);
    CHECK(got->path == pool_path::completion);
    CHECK(model_b.backend().count(event_kind::wait) == 0);  // zero device waits
    CHECK(model_b.knowledge() == b_knowledge);              // no coupling to A's axes
    CHECK_FALSE(model_b.knowledge().contains(A));
    // A's later operation (epoch 4) has not retired, and did not matter.
    CHECK(tracker.retired_epoch(A) == death_epoch);
  }
  SECTION("with A's timeline: before A retires, B pays a device wait, never zero") {
    REQUIRE(pool.register_timeline(A, tl_a));
    auto got = pool.acquire(model_b, 512);
    REQUIRE(got);
    CHECK(got->path == pool_path::fenced);
    CHECK(model_b.backend().count(event_kind::wait) == 1);
    CHECK(model_b.backend().event_at(model_b.backend().event_count() - 1).value == death_epoch);
  }
}

//===-- splitting and merging -----------------------------------------------===//

TEST_CASE("pool: reuse splits off a free tail; same-producer neighbours merge on release",
          "[pool][split][merge]") {
  pool_t pool(512, 64);
  queue_t f{F}, g{G};
  auto big = pool.acquire(f, 512);
  REQUIRE(big);
  run_op(f);
  REQUIRE(pool.release(*big, f));

  auto small = pool.acquire(f, 100);
  REQUIRE(small);
  CHECK(small->offset == 0);
  CHECK(small->size == 128);
  CHECK(pool.stats().splits == 1);
  REQUIRE(pool.free_count() == 1);
  CHECK(pool.free_block(0).offset == 128);
  CHECK(pool.free_block(0).size == 384);
  CHECK(pool.free_block(0).producer == frontier_entry{F, 1});

  SECTION("released by the same queue: one block again, producer the later epoch") {
    const std::uint64_t e = run_op(f);
    REQUIRE(pool.release(*small, f));
    CHECK(pool.stats().merges == 1);
    REQUIRE(pool.free_count() == 1);
    CHECK(pool.free_block(0).offset == 0);
    CHECK(pool.free_block(0).size == 512);
    CHECK(pool.free_block(0).producer == frontier_entry{F, e});
    auto whole = pool.acquire(f, 512);
    REQUIRE(whole);
    CHECK(whole->path == pool_path::knowledge);
  }
  SECTION("released by another queue: the fragments stay apart") {
    run_op(g);
    REQUIRE(pool.release(*small, g));
    CHECK(pool.stats().merges == 0);
    CHECK(pool.free_count() == 2);
    auto whole = pool.acquire(f, 512);
    REQUIRE_FALSE(whole);
    CHECK(whole.code() == errc::resource_exhausted);
  }
  SECTION("the merged death frontier is the join of both") {
    f.learn(frontier{{X, 5}});
    run_op(f);
    REQUIRE(pool.release(*small, f));
    REQUIRE(pool.free_count() == 1);
    const frontier& death = *pool.free_block(0).death;
    CHECK(death.epoch_of(X) == 5);
    CHECK(death.epoch_of(F) == 2);
  }
}

TEST_CASE("pool: a release between two free neighbours merges both sides", "[pool][merge]") {
  const bool middle_first = GENERATE(false, true);
  pool_t pool(192, 64);
  queue_t f{F};
  auto a = pool.acquire(f, 64);
  auto b = pool.acquire(f, 64);
  auto c = pool.acquire(f, 64);
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(c);
  run_op(f);
  if (middle_first) {
    REQUIRE(pool.release(*c, f));
    REQUIRE(pool.release(*a, f));
  } else {
    REQUIRE(pool.release(*a, f));
    REQUIRE(pool.release(*c, f));
  }
  CHECK(pool.free_count() == 2);
  REQUIRE(pool.release(*b, f));
  CHECK(pool.stats().merges == 2);
  REQUIRE(pool.free_count() == 1);
  CHECK(pool.free_block(0).offset == 0);
  CHECK(pool.free_block(0).size == 192);
  CHECK(pool.live_count() == 0);
  auto whole = pool.acquire(f, 192);
  REQUIRE(whole);
  CHECK(whole->path == pool_path::knowledge);
}

namespace {
// A minimal pool_queue over a rejecting frontier: basic_semaphore (and so
// basic_queue) does not compile with one, but the pool must.
using tight = causal::basic_frontier<2, causal::default_axis_layout, causal::reject_overflow>;
struct stub_timeline {
  [[nodiscard]] std::uint64_t value() const noexcept { return 0; }
  [[nodiscard]] bool failed() const noexcept { return false; }
  [[nodiscard]] bool is_tainted(std::uint64_t) const noexcept { return false; }
};
struct stub_backend {
  causal::status issue_wait(stub_timeline&, std::uint64_t) noexcept {
    ++waits;
    return {};
  }
  int waits = 0;
};
struct stub_queue {
  using frontier_type = tight;
  using semaphore_type = stub_timeline;
  [[nodiscard]] causal::axis axis() const noexcept { return self; }
  [[nodiscard]] std::uint64_t epoch() const noexcept { return current; }
  [[nodiscard]] const tight& knowledge() const noexcept { return known; }
  // The tests set `known` with `current` as its own entry: nothing ahead.
  [[nodiscard]] frontier_entry knowledge_producer() const noexcept {
    return current != 0 ? frontier_entry{self, current} : frontier_entry{};
  }
  void learn(const tight& f) noexcept { (void)known.merge(f, self); }
  stub_backend& backend() noexcept { return device; }
  causal::axis self;
  std::uint64_t current = 0;
  tight known{};
  stub_backend device{};
};
tight tight_of(std::initializer_list<frontier_entry> entries) {
  return tight::from_entries(std::span<const frontier_entry>(entries.begin(), entries.size())).value();
}
}  // namespace

TEST_CASE("pool: with a rejecting frontier, neighbours whose join does not fit stay apart",
          "[pool][merge]") {
  causal::basic_block_pool<stub_queue> pool(128, 64);
  stub_queue f{F};
  auto a = pool.acquire(f, 64);
  auto b = pool.acquire(f, 64);
  REQUIRE(a);
  REQUIRE(b);
  f.current = 1;
  f.known = tight_of({{F, 1}, {X, 1}});
  REQUIRE(pool.release(*a, f));
  f.current = 2;
  f.known = tight_of({{F, 2}, {Y, 1}});
  REQUIRE(pool.release(*b, f));  // {F, X, Y} does not fit 2 entries
  CHECK(pool.stats().merges == 0);
  CHECK(pool.free_count() == 2);
  auto c = pool.acquire(f, 64);  // F covers both producers
  REQUIRE(c);
  CHECK(c->path == pool_path::knowledge);

  SECTION("a join that fits merges") {
    REQUIRE(pool.release(*c, f));  // same knowledge as the other free block
    CHECK(pool.stats().merges == 1);
    CHECK(pool.free_count() == 1);
  }
}

TEST_CASE("pool: free reuse picks the smallest block that fits", "[pool][knowledge]") {
  pool_t pool(1024, 64);
  queue_t f{F}, g{G};
  auto a = pool.acquire(f, 512);
  auto b = pool.acquire(g, 128);  // separates a and c, so they cannot merge
  auto c = pool.acquire(f, 256);
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(c);
  run_op(f);
  REQUIRE(pool.release(*a, f));
  REQUIRE(pool.release(*c, f));
  auto got = pool.acquire(f, 200);
  REQUIRE(got);
  CHECK(got->offset == c->offset);
  CHECK(got->size == 256);
  CHECK(pool.stats().splits == 0);
}

//===-- coalescing retired blocks -------------------------------------------===//

TEST_CASE("pool: fragments freed by different queues coalesce once all have retired, serving a "
          "request larger than any of them",
          "[pool][coalesce]") {
  // The acceptance test's shape: 23 fragments (26 KiB) freed in turn by
  // three queues, all idle, and a 3.8 KiB request. A live block above them
  // keeps the fresh tail out of it.
  constexpr std::size_t fragment = 1152, fragments = 23, request = 3890, rounded = 3904;
  completion_tracker tracker;
  REQUIRE(tracker.register_axis(F));
  REQUIRE(tracker.register_axis(G));
  pool_t pool((fragments + 1) * fragment, 64, &tracker);
  queue_t f{F}, g{G}, h{X}, r{R};
  f.track_completion(tracker);
  g.track_completion(tracker);
  semaphore tl_h;  // H's retirement shows on its timeline, not the tracker
  REQUIRE(pool.register_timeline(X, tl_h));
  const std::array<queue_t*, 3> owners{&f, &g, &h};
  std::vector<causal::pool_block> blocks;
  for (std::size_t i = 0; i < fragments; ++i) {
    auto b = pool.acquire(*owners[i % 3], fragment);
    REQUIRE(b);
    blocks.push_back(*b);
  }
  auto top = pool.acquire(r, fragment);
  REQUIRE(top);
  REQUIRE(pool.fresh_bytes() == 0);
  // Each queue uses its fragments in one operation, then frees them.
  run_op(f);
  run_op(g);
  run_op(h, &tl_h);
  for (std::size_t i = 0; i < fragments; ++i) REQUIRE(pool.release(blocks[i], *owners[i % 3]));
  REQUIRE(pool.free_count() == fragments);  // no two neighbours share a producer
  REQUIRE(pool.free_bytes() == fragments * fragment);
  REQUIRE(rounded > fragment);

  SECTION("once every queue retired, the fragments are one block for anyone, with no wait") {
    complete_all(f);
    complete_all(g);
    complete_all(h);
    REQUIRE(tl_h.value() == 1);
    const frontier r_before = r.knowledge();
    auto got = pool.acquire(r, request);
    REQUIRE(got);
    CHECK(got->path == pool_path::completion);
    CHECK(got->offset == 0);
    CHECK(got->size == rounded);
    CHECK(got->wait_count == 0);
    CHECK(r.backend().total_events() == 0);  // no device wait
    CHECK(r.knowledge() == r_before);        // nothing of F's, G's or H's past imported
    CHECK(pool.stats().coalesces == fragments - 1);
    CHECK(pool.stats().reused_by_completion == 1);
    // What is left is one block that owes nothing: reused by any queue.
    REQUIRE(pool.free_count() == 1);
    const auto rest = pool.free_block(0);
    CHECK(rest.offset == rounded);
    CHECK(rest.size == fragments * fragment - rounded);
    CHECK(rest.dead);
    CHECK(rest.producer == frontier_entry{});
    CHECK(rest.death->empty());
    CHECK(pool.live_count() == 2);
    queue_t stranger{queue_axis(60)};
    auto more = pool.acquire(stranger, rest.size);
    REQUIRE(more);
    CHECK(more->path == pool_path::completion);
    CHECK(stranger.backend().total_events() == 0);
  }
  SECTION("while one queue has not retired, its fragments stay apart and the request fails") {
    complete_all(f);
    complete_all(g);  // H's operation has not completed: tl_h is still 0
    auto no = pool.acquire(r, request);
    REQUIRE_FALSE(no);
    CHECK(no.code() == errc::resource_exhausted);
    CHECK(r.backend().total_events() == 0);
    // F's and G's neighbours joined in pairs; each of H's fragments is
    // still exactly itself, owing H's operation.
    std::size_t h_fragments = 0;
    for (std::size_t i = 0; i < pool.free_count(); ++i) {
      const auto b = pool.free_block(i);
      CHECK(b.size < rounded);
      const bool holds_h = (b.offset / fragment) % 3 == 2 ||
                           ((b.offset + b.size) / fragment - 1) % 3 == 2;
      if (!holds_h) continue;
      ++h_fragments;
      CHECK(b.size == fragment);
      CHECK(b.producer == frontier_entry{X, 1});
      CHECK_FALSE(b.dead);
    }
    CHECK(h_fragments == fragments / 3);
    CHECK(pool.free_bytes() == fragments * fragment);
    CHECK(pool.stats().coalesces == fragments / 3 + 1);  // F+G pairs
    // H retires: now the request is served.
    complete_all(h);
    auto got = pool.acquire(r, request);
    REQUIRE(got);
    CHECK(got->path == pool_path::completion);
    CHECK(got->offset == 0);
  }
}

TEST_CASE("pool: a free block not proven retired is never coalesced nor returned to the tail",
          "[pool][coalesce]") {
  completion_tracker tracker;
  REQUIRE(tracker.register_axis(F));
  REQUIRE(tracker.register_axis(G));
  queue_t f{F}, g{G}, r{R};
  f.track_completion(tracker);
  g.track_completion(tracker);

  SECTION("between two retired neighbours") {
    pool_t pool(256, 64, &tracker);
    semaphore tl_g;
    REQUIRE(pool.register_timeline(G, tl_g));
    auto a = pool.acquire(f, 64);
    auto b = pool.acquire(g, 64);
    auto c = pool.acquire(f, 64);
    auto top = pool.acquire(r, 64);  // live: keeps the tail out of it
    REQUIRE(a);
    REQUIRE(b);
    REQUIRE(c);
    REQUIRE(top);
    run_op(f);
    const std::uint64_t eg = run_op(g, &tl_g);
    REQUIRE(pool.release(*a, f));
    REQUIRE(pool.release(*b, g));
    REQUIRE(pool.release(*c, f));
    complete_all(f);  // F retired; G's operation has not completed
    REQUIRE(tracker.is_retired({F, 1}));
    const snapshot before = snap(pool);
    auto no = pool.acquire(r, 192);  // only a + b + c would fit
    REQUIRE_FALSE(no);
    CHECK(no.code() == errc::resource_exhausted);
    CHECK(snap(pool) == before);  // nothing joined (a and c are not adjacent)
    CHECK(r.backend().total_events() == 0);
    for (std::size_t i = 0; i < pool.free_count(); ++i) {
      const auto v = pool.free_block(i);
      CHECK(v.size == 64);
      CHECK_FALSE(v.dead);
      if (v.offset == b->offset) CHECK(v.producer == frontier_entry{G, eg});
    }
    CHECK(pool.stats().coalesces == 0);
    // Once G's operation retires, all three join.
    complete_all(g);
    REQUIRE(tl_g.value() == eg);
    auto got = pool.acquire(r, 192);
    REQUIRE(got);
    CHECK(got->path == pool_path::completion);
    CHECK(got->offset == 0);
    CHECK(got->wait_count == 0);
    CHECK(pool.stats().coalesces == 2);
    CHECK(r.backend().total_events() == 0);
  }
  SECTION("at the top of the carved range") {
    pool_t pool(256, 64, &tracker);
    auto a = pool.acquire(r, 64);  // live
    auto b = pool.acquire(g, 64);  // freed by G, at the top
    REQUIRE(a);
    REQUIRE(b);
    run_op(g);
    REQUIRE(pool.release(*b, g));
    REQUIRE(pool.carved() == 128);
    const snapshot before = snap(pool);
    auto no = pool.acquire(r, 192);  // fresh 128 + b would fit
    REQUIRE_FALSE(no);
    CHECK(no.code() == errc::resource_exhausted);
    CHECK(snap(pool) == before);
    CHECK(pool.carved() == 128);
    CHECK(pool.free_block(0).producer == frontier_entry{G, 1});
    // G retires: b goes back to the fresh tail and the request is carved.
    complete_all(g);
    auto got = pool.acquire(r, 192);
    REQUIRE(got);
    CHECK(got->path == pool_path::fresh);
    CHECK(got->offset == 64);
    CHECK(pool.stats().tail_returns == 1);
    CHECK(pool.free_count() == 0);
    CHECK(pool.carved() == 256);
  }
}

TEST_CASE("pool: coalescing frees descriptors of a full block table", "[pool][coalesce]") {
  completion_tracker tracker;
  REQUIRE(tracker.register_axis(F));
  REQUIRE(tracker.register_axis(G));
  causal::basic_block_pool<queue_t, completion_tracker, 4> pool(1024, 64, &tracker);
  queue_t f{F}, g{G}, r{R};
  f.track_completion(tracker);
  g.track_completion(tracker);
  std::array<causal::pool_block, 4> blocks;
  for (std::size_t i = 0; i < 4; ++i) {
    auto b = pool.acquire(i % 2 == 0 ? f : g, 64);
    REQUIRE(b);
    blocks[i] = *b;
  }
  // Fresh bytes are left, but no descriptor to carve them with.
  CHECK_FALSE(pool.acquire(r, 64));
  run_op(f);
  run_op(g);
  for (std::size_t i = 0; i < 4; ++i) REQUIRE(pool.release(blocks[i], i % 2 == 0 ? f : g));
  complete_all(f);
  complete_all(g);
  // Four retired blocks, the top one among them: all go back to the tail.
  auto got = pool.acquire(r, 640);
  REQUIRE(got);
  CHECK(got->path == pool_path::fresh);
  CHECK(got->offset == 0);
  CHECK(pool.stats().coalesces == 3);
  CHECK(pool.stats().tail_returns == 1);
  CHECK(pool.free_count() == 0);
  CHECK(pool.live_count() == 1);
}

//===-- errors --------------------------------------------------------------===//

TEST_CASE("pool: bad requests fail clearly and leave the pool unchanged", "[pool][errors]") {
  pool_t pool(1000, 64);
  queue_t f{F};
  auto keep = pool.acquire(f, 500);
  REQUIRE(keep);
  const snapshot before = snap(pool);

  auto zero = pool.acquire(f, 0);
  REQUIRE_FALSE(zero);
  CHECK(zero.code() == errc::invalid_argument);

  auto huge = pool.acquire(f, 1001);
  REQUIRE_FALSE(huge);
  CHECK(huge.code() == errc::capacity_exceeded);

  auto rounded = pool.acquire(f, 990);  // 990 -> 1024 > 1000: can never fit
  REQUIRE_FALSE(rounded);
  CHECK(rounded.code() == errc::capacity_exceeded);

  auto max = pool.acquire(f, static_cast<std::size_t>(-1));
  REQUIRE_FALSE(max);
  CHECK(max.code() == errc::capacity_exceeded);

  auto busy = pool.acquire(f, 512);  // fits the quota, not the free space now
  REQUIRE_FALSE(busy);
  CHECK(busy.code() == errc::resource_exhausted);

  CHECK(snap(pool) == before);
  CHECK(pool.stats().failures == 5);
  CHECK(f.backend().total_events() == 0);
}

TEST_CASE("pool: a bad alignment makes the pool refuse every acquire", "[pool][errors]") {
  const std::size_t alignment = GENERATE(std::size_t{0}, std::size_t{3}, std::size_t{96});
  pool_t pool(1024, alignment);
  REQUIRE_FALSE(pool.setup_status());
  CHECK(pool.setup_status().code() == errc::invalid_argument);
  queue_t f{F};
  auto b = pool.acquire(f, 64);
  REQUIRE_FALSE(b);
  CHECK(b.code() == errc::invalid_argument);
  CHECK(pool.carved() == 0);
}

TEST_CASE("pool: double, foreign, forged and stale releases fail and change nothing",
          "[pool][errors]") {
  pool_t pool(512, 64), other(512, 64);
  queue_t f{F};
  auto b = pool.acquire(f, 128);
  auto o = other.acquire(f, 128);
  REQUIRE(b);
  REQUIRE(o);

  SECTION("foreign") {
    const snapshot before = snap(pool);
    const auto s = pool.release(*o, f);
    CHECK(s.code() == errc::invalid_argument);
    CHECK(snap(pool) == before);
  }
  SECTION("forged") {
    causal::pool_block forged = *b;
    forged.size = 256;
    const snapshot before = snap(pool);
    CHECK(pool.release(forged, f).code() == errc::invalid_argument);
    forged = *b;
    forged.index = 9999;
    CHECK(pool.release(forged, f).code() == errc::invalid_argument);
    CHECK(snap(pool) == before);
  }
  SECTION("double") {
    REQUIRE(pool.release(*b, f));
    const snapshot before = snap(pool);
    const auto s = pool.release(*b, f);
    CHECK(s.code() == errc::failed_precondition);
    CHECK(snap(pool) == before);
  }
  SECTION("stale: the same slot in a later lifetime") {
    REQUIRE(pool.release(*b, f));
    auto again = pool.acquire(f, 128);
    REQUIRE(again);
    REQUIRE(again->index == b->index);
    REQUIRE(again->offset == b->offset);
    const snapshot before = snap(pool);
    CHECK(pool.release(*b, f).code() == errc::failed_precondition);
    CHECK(snap(pool) == before);
    CHECK(pool.release(*again, f));
  }
}

TEST_CASE("pool: a queue holding deferred submissions cannot release", "[pool][errors]") {
  using bqueue_t = causal::recording_queue<false>;
  causal::basic_block_pool<bqueue_t> pool(64, 64);
  bqueue_t f{F};
  semaphore later;
  auto b = pool.acquire(f, 64);
  REQUIRE(b);
  REQUIRE(f.submit({{&later, 1}}, {}, 0));  // tier 3: held, no epoch yet
  REQUIRE(f.deferred_count() == 1);
  const snapshot before = snap(pool);
  CHECK(pool.release(*b, f).code() == errc::failed_precondition);
  CHECK(snap(pool) == before);
  REQUIRE(later.signal(1, frontier{}));
  REQUIRE(f.pump());
  REQUIRE(f.deferred_count() == 0);
  REQUIRE(pool.release(*b, f));
  CHECK(pool.free_block(0).producer == frontier_entry{F, 1});
}

TEST_CASE("pool: a full block table fails with resource_exhausted", "[pool][errors]") {
  causal::basic_block_pool<queue_t, completion_tracker, 2> pool(1024, 64);
  queue_t f{F};
  auto a = pool.acquire(f, 64);
  auto b = pool.acquire(f, 64);
  REQUIRE(a);
  REQUIRE(b);
  const snapshot before = snap(pool);
  auto c = pool.acquire(f, 64);
  REQUIRE_FALSE(c);
  CHECK(c.code() == errc::resource_exhausted);
  CHECK(snap(pool) == before);
  // With no spare descriptor a reuse takes the whole block (no split).
  run_op(f);
  REQUIRE(pool.release(*a, f));
  REQUIRE(pool.release(*b, f));  // merges with a: one descriptor frees up
  CHECK(pool.free_count() == 1);
  auto d = pool.acquire(f, 64);
  REQUIRE(d);
  CHECK(pool.stats().splits == 1);
}

TEST_CASE("pool: timeline registration errors", "[pool][errors]") {
  causal::basic_block_pool<queue_t, completion_tracker, 8, 1> pool(64, 64);
  semaphore s1, s2;
  CHECK(pool.register_timeline(axis{}, s1).code() == errc::invalid_argument);
  REQUIRE(pool.register_timeline(F, s1));
  CHECK(pool.register_timeline(F, s2).code() == errc::invalid_argument);
  CHECK(pool.register_timeline(G, s2).code() == errc::capacity_exceeded);
  CHECK(pool.unregister_timeline(G).code() == errc::invalid_argument);
  REQUIRE(pool.unregister_timeline(F));
  REQUIRE(pool.register_timeline(G, s2));
}

//===-- counters and allocation ---------------------------------------------===//

TEST_CASE("pool: every path has its counter", "[pool][stats]") {
  completion_tracker tracker;
  REQUIRE(tracker.register_axis(G));
  pool_t pool(256, 64, &tracker);
  queue_t f{F}, g{G}, r{R};
  g.track_completion(tracker);
  semaphore tl_f;
  REQUIRE(pool.register_timeline(F, tl_f));

  auto fb = pool.acquire(f, 128);  // fresh
  auto gb = pool.acquire(g, 128);  // fresh
  REQUIRE(fb);
  REQUIRE(gb);
  run_op(f, &tl_f);
  run_op(g);
  REQUIRE(pool.release(*fb, f));
  REQUIRE(pool.release(*gb, g));
  auto k = pool.acquire(f, 128);  // knowledge (F's own block)
  REQUIRE(k);
  CHECK(k->path == pool_path::knowledge);
  CHECK_FALSE(pool.acquire(r, 128));  // failure: G not retired, no timeline
  complete_all(g);
  auto c = pool.acquire(r, 128);  // completion (G retired)
  REQUIRE(c);
  CHECK(c->path == pool_path::completion);
  REQUIRE(pool.release(*k, f));
  auto w = pool.acquire(r, 128);  // fenced on F's timeline
  REQUIRE(w);
  CHECK(w->path == pool_path::fenced);

  pool_stats expected;
  expected.reused_by_knowledge = 1;
  expected.reused_by_completion = 1;
  expected.reused_after_wait = 1;
  expected.waits_issued = 1;
  expected.fresh_carves = 2;
  expected.failures = 1;
  expected.releases = 3;
  CHECK(pool.stats() == expected);
  CHECK(pool.stats().acquires() == 5);
}

TEST_CASE("pool: acquire and release never allocate", "[pool][allocation]") {
  completion_tracker tracker;
  REQUIRE(tracker.register_axis(G));
  queue_t f{F}, g{G}, r{R};
  g.track_completion(tracker);
  semaphore tl_f, tl_r;
  pool_t pool(64, 64, &tracker);
  REQUIRE(pool.register_timeline(F, tl_f));
  REQUIRE(pool.register_timeline(R, tl_r));
  pool_t gpool(128, 64, &tracker);
  std::uint64_t ok = 0, bad = 0;
  {
    causal::test::allocation_guard guard;
    // Ping-pong: each queue reuses the block the other just freed, whose
    // freeing operation has not completed: every acquire but the first
    // fences on the other's timeline.
    auto first = pool.acquire(f, 64);
    ok += first.ok();
    (void)f.submit({}, {{&tl_f, f.epoch() + 1}}, 0);
    if (first) (void)pool.release(*first, f);
    for (int i = 0; i < 200; ++i) {
      auto a = pool.acquire(r, 64);
      ok += a.ok();
      (void)r.submit({}, {{&tl_r, r.epoch() + 1}}, 0);
      if (a) (void)pool.release(*a, r);
      while (const std::uint64_t e = f.backend().complete_next()) f.retire(e);
      auto b = pool.acquire(f, 64);
      ok += b.ok();
      (void)f.submit({}, {{&tl_f, f.epoch() + 1}}, 0);
      if (b) (void)pool.release(*b, f);
      while (const std::uint64_t e = r.backend().complete_next()) r.retire(e);
      // The fast path: the freeing queue takes its own block back.
      auto c = pool.acquire(f, 64);
      ok += c.ok();
      if (c) (void)pool.release(*c, f);
      // Completion: R reuses G's block once the tracker shows G retired.
      auto gb = gpool.acquire(g, 128);
      (void)g.submit({}, {}, 0);
      if (gb) (void)gpool.release(*gb, g);
      while (const std::uint64_t e = g.backend().complete_next()) g.retire(e);
      auto rc = gpool.acquire(r, 128);
      ok += rc.ok();
      if (rc) (void)gpool.release(*rc, g);
      // Errors.
      bad += !pool.acquire(f, 0).ok();
      bad += !pool.acquire(f, 1 << 20).ok();
      if (c) bad += !pool.release(*c, f).ok();
    }
    REQUIRE(guard.allocations() == 0);
  }
  CHECK(ok == 1 + 4 * 200);
  CHECK(bad == 3 * 200);
  CHECK(pool.stats().failures == 2 * 200);
  CHECK(pool.stats().reused_after_wait == 400);
  CHECK(pool.stats().waits_issued == 400);
  CHECK(pool.stats().reused_by_knowledge == 200);
  CHECK(gpool.stats().reused_by_completion == 200);
}

TEST_CASE("pool: coalescing and returning retired blocks to the tail never allocate",
          "[pool][allocation][coalesce]") {
  completion_tracker tracker;
  REQUIRE(tracker.register_axis(F));
  REQUIRE(tracker.register_axis(G));
  queue_t f{F}, g{G}, r{R};
  f.track_completion(tracker);
  g.track_completion(tracker);
  pool_t pool(1024, 64, &tracker);
  std::array<causal::pool_block, 16> blocks{};
  std::uint64_t served = 0;
  {
    causal::test::allocation_guard guard;
    for (int round = 0; round < 50; ++round) {
      // Sixteen fragments, freed in turn by F and G.
      for (std::size_t i = 0; i < blocks.size(); ++i) {
        auto b = pool.acquire(i % 2 == 0 ? f : g, 64);
        if (b) blocks[i] = *b;
      }
      (void)f.submit({}, {}, 0);
      (void)g.submit({}, {}, 0);
      for (std::size_t i = 0; i < blocks.size(); ++i) {
        (void)pool.release(blocks[i], i % 2 == 0 ? f : g);
      }
      while (const std::uint64_t e = f.backend().complete_next()) f.retire(e);
      while (const std::uint64_t e = g.backend().complete_next()) g.retire(e);
      // Larger than any fragment: coalescing (to the tail) serves it.
      auto big = pool.acquire(r, 512);
      served += big.ok();
      if (big) (void)pool.release(*big, r);
      auto again = pool.acquire(r, 1024);  // r's own block back, and the rest
      served += again.ok();
      if (again) (void)pool.release(*again, r);
    }
    REQUIRE(guard.allocations() == 0);
  }
  CHECK(served == 2 * 50);
  CHECK(pool.stats().coalesces >= 50 * 15);
  CHECK(pool.stats().tail_returns >= 50);
}
