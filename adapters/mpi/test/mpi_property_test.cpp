// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// mpi_property_test: random programs over 2-4 loopback ranks against a
// reference model of what every proxy must end up with.
//
// A program exports semaphores on random ranks (some before start, some
// later), opens proxies of them on other ranks (some long after the
// owner's first signals), and interleaves, in random order, signals with
// frontiers and producers, submitted signals, signals of submitted values,
// external signals, failures, withdrawals, orderly shutdowns of a rank
// (BYE) and polls of single nodes. The
// model records, for every owner semaphore, the frontier and producer it
// holds for each value it reached (read back with frontier_at at once) and
// for each signal it submitted. After the job goes quiet, every proxy must:
//   - have heard each value at most once, in increasing order (an observer
//     on the proxy logs what it reaches);
//   - for every value it reached, hold exactly the owner's frontier and
//     producer for that value (external values: external there too), and
//     for every submitted signal it holds, the owner's record;
//   - end at the owner's final value with the owner's outstanding submitted
//     signals, or failed with the owner's error (code and text), or -- after
//     a withdrawal or a shutdown of either rank -- failed (cancelled or the
//     owner's error) at a value the owner had reached by then;
//   - stay at 0, unfailed, when the owner never exported the id.
// Every proxy edge thus advances or fails, and a failed proxy is counted
// once (stats().proxies_failed). And on every rank, whenever a proxy
// reaches a value, no proxy of another owner on that rank still holds a
// submitted signal whose producer that value's frontier covers (node.hpp,
// "Causal delivery": a queue that learnt the frontier would elide its wait
// on that signal): an observer checks it at each reach.
//
// Claims are true, as a program's are: a frontier a semaphore reaches
// names another rank's axis only at an epoch whose submitted signals (on
// that rank's semaphores, the only ones its axes produce) are all reached
// or can never be (failed, withdrawn, the rank left), and a submitted
// signal's producer epoch is above every such claim made before. (An
// owner's frontier may say what it likes of its own axes: its own news
// arrive in its order.) Messages between each pair of ranks arrive in
// order, but each send may wait on the way for a random number of steps,
// so one rank's news overtake another's at a third.
//
// A second generator builds *pipelines* over 3-4 ranks, the shape that
// needs causal delivery: each rank runs a queue-like axis whose operations
// submit signals on one or two of the rank's exports (the last carrying
// the operation's own entry) and complete in epoch order, and learns what
// its proxies' reached values carry (a queue that waited on them), so that
// claims travel from rank to rank through third ranks. Every rank has a
// proxy of every other rank's exports, and messages arrive in random
// order across senders. Checked: no proxy reaches a value whose frontier
// covers the producer of a submitted signal another proxy of that rank
// (of any owner) holds and has not reached; no proxy is handed a
// submitted signal whose producer a proxy of another owner on that rank
// has already reached a value claiming; every proxy ends at its owner's
// value.
//
// Each program draws from its own mt19937_64, started from the program's
// number; a failure prints that number (rerun one with the Catch2 test's
// CAUSAL_MPI_PROGRAM environment variable). Every program runs twice: on
// nodes with the default traits, and on nodes that hold only two ordered
// news between polls, where later values go without their frontiers
// (external there; node.hpp, "Order") and everything else must still hold.

#include <causal/adapters/mpi/loopback_carrier.hpp>
#include <causal/adapters/mpi/node.hpp>
#include <causal/axis.hpp>
#include <causal/frontier.hpp>
#include <causal/semaphore.hpp>

#include "catch.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace mpi = causal::mpi;
using causal::axis;
using causal::errc;
using causal::frontier;
using causal::frontier_entry;
using causal::semaphore;
using namespace std::chrono_literals;

/// A node that holds almost no ordered news between polls, so that random
/// programs overflow it: later values go without their frontiers
/// (node.hpp, "Order"), and everything else must still hold.
struct tiny_news_traits : mpi::default_node_traits {
  static constexpr std::size_t news_capacity = 2;
};
using layout = causal::default_axis_layout;

axis rank_axis(std::uint64_t rank, std::uint64_t ordinal) {
  return layout::make(causal::axis_fields{0, rank, causal::domain::queue, ordinal}).value();
}

/// A loopback endpoint whose sends may wait on the way: each pair's
/// messages keep their order, but a send waits behind the pair's waiting
/// ones, or, at random, starts a wait (how often, in percent: drawn per
/// peer from `slowness`, so that some links are slower than others);
/// release() sends some.
struct shuffled_carrier : mpi::loopback_carrier {
  shuffled_carrier(mpi::loopback_hub& hub, std::uint32_t rank, std::mt19937_64& rng,
                   std::array<unsigned, 3> slowness)
      : mpi::loopback_carrier(hub, rank), rng_(&rng), waiting_(hub.size()), percent_(hub.size()) {
    for (auto& p : percent_) p = slowness[rng() % slowness.size()];
  }
  causal::status send(std::uint32_t peer, std::span<const std::byte> bytes) noexcept {
    if (peer < waiting_.size() && (!waiting_[peer].empty() || (*rng_)() % 100 < percent_[peer])) {
      waiting_[peer].emplace_back(bytes.begin(), bytes.end());  // the test's own allocation
      return {};
    }
    return mpi::loopback_carrier::send(peer, bytes);
  }
  /// Sends up to `n` of the messages waiting for `peer`, in order.
  void release(std::uint32_t peer, std::size_t n) {
    auto& q = waiting_[peer];
    for (; n != 0 && !q.empty(); --n) {
      (void)mpi::loopback_carrier::send(peer, q.front());
      q.pop_front();
    }
  }
  [[nodiscard]] bool waiting() const {
    for (const auto& q : waiting_) {
      if (!q.empty()) return true;
    }
    return false;
  }
  void release_all() {
    for (std::uint32_t r = 0; r < waiting_.size(); ++r) release(r, ~std::size_t{0});
  }

 private:
  std::mt19937_64* rng_;
  std::vector<std::deque<std::vector<std::byte>>> waiting_;
  std::vector<unsigned> percent_;
};

/// What one value of an owner semaphore holds.
struct value_record {
  frontier f{};
  frontier_entry producer{};
  bool external = false;
};

/// An owner semaphore and what the model knows of it.
struct owned {
  std::uint32_t rank = 0;
  std::uint64_t id = 0;
  semaphore sem;
  bool exported = false;
  bool withdrawn = false;
  std::uint64_t value_at_withdraw = 0;
  std::uint64_t value_at_shutdown = 0;  // of the owner rank's node
  std::optional<causal::error> failure{};
  std::map<std::uint64_t, value_record> reached;    // by value
  std::map<std::uint64_t, value_record> submitted;  // every signal ever submitted, by value
};

/// A proxy and what its observer heard.
struct watched_proxy {
  static void on_reached(void* self, const causal::observed_signal<frontier>& ev) noexcept {
    auto& w = *static_cast<watched_proxy*>(self);
    w.reached.push_back({ev.value, value_record{*ev.frontier, ev.producer, ev.external}});
    if (!ev.external && !ev.replay && w.same_rank != nullptr) w.check_claims(*ev.frontier);
  }
  /// Counts, in `ahead`, the proxies of other owners on this rank that
  /// hold a submitted signal, not reached, whose producer `f` covers.
  /// (Under this proxy's lock; reads the others only.)
  void check_claims(const frontier& f) noexcept;

  static void on_submitted(void* self, const causal::observed_signal<frontier>& ev) noexcept {
    auto& w = *static_cast<watched_proxy*>(self);
    w.submitted.push_back({ev.value, value_record{*ev.frontier, ev.producer, false}});
  }

  std::uint32_t rank = 0;  // where the proxy lives
  owned* owner = nullptr;
  semaphore* sem = nullptr;
  /// Every proxy of the program (the check reads those of this rank).
  const std::vector<std::unique_ptr<watched_proxy>>* same_rank = nullptr;
  std::uint64_t* claims_checked = nullptr;
  std::uint64_t* ahead = nullptr;
  // The observer allocates when logging: fine here, the node's hot paths
  // are not under test.
  std::vector<std::pair<std::uint64_t, value_record>> reached;
  std::vector<std::pair<std::uint64_t, value_record>> submitted;
  causal::semaphore_observer<frontier> observer{this, &on_submitted, &on_reached, nullptr, nullptr};
};

void watched_proxy::check_claims(const frontier& f) noexcept {
  ++*claims_checked;
  for (const auto& other : *same_rank) {
    if (other.get() == this || other->rank != rank || other->owner->rank == owner->rank) continue;
    const semaphore& q = *other->sem;
    if (q.failed()) continue;
    // Its outstanding submitted signals, lowest first.
    for (std::uint64_t v = q.value() + 1;;) {
      const auto next = q.frontier_at(v);
      if (!next || next->reached) break;
      if (next->has_producer() && f.epoch_of(next->producer.axis) >= next->producer.epoch) ++*ahead;
      if (next->signal_value == ~std::uint64_t{0}) break;
      v = next->signal_value + 1;
    }
  }
}

bool same_record(const value_record& a, const value_record& b) {
  return a.f == b.f && a.producer == b.producer && a.external == b.external;
}

std::string describe(const value_record& r) {
  std::ostringstream s;
  s << causal::to_string(r.f) << " producer (" << r.producer.axis.raw() << ", " << r.producer.epoch << ")"
    << (r.external ? " external" : "");
  return s.str();
}

/// What the programs exercised, summed: a generator that stopped reaching
/// the interesting cases would pass vacuously.
struct coverage {
  std::uint64_t proxies = 0;
  std::uint64_t proxy_values = 0;
  std::uint64_t proxy_submitted = 0;
  std::uint64_t failed_owners = 0;
  std::uint64_t withdrawn = 0;
  std::uint64_t late_proxies = 0;   // opened after the owner had reached a value
  std::uint64_t early_proxies = 0;  // opened before the owner exported
  std::uint64_t ranks_shut_down = 0;
  std::uint64_t without_frontier = 0;  // reached values sent as external to keep the order
  std::uint64_t claims_checked = 0;    // proxy values whose frontier the causal check read
  std::uint64_t reached_held = 0;      // REACHED a node held for another owner's news
  std::uint64_t submitted_covered = 0;  // SUBMITTED not announced: already claimed complete
};

/// Runs program number `number` on nodes with `Traits`; returns an empty
/// string or what broke.
template <class Traits>
std::string run_program(std::uint64_t number, coverage& seen) {
  using node_t = mpi::basic_node<shuffled_carrier, semaphore, Traits, mpi::manual_clock>;
  std::mt19937_64 rng(number);
  auto below = [&](std::uint64_t n) { return static_cast<std::uint64_t>(rng() % n); };
  auto chance = [&](unsigned percent) { return below(100) < percent; };

  const auto ranks = static_cast<std::uint32_t>(2 + below(3));
  mpi::node_options options;
  options.heartbeat_interval = 0us;
  options.heartbeat_timeout = 0us;
  mpi::loopback_hub hub(ranks);
  mpi::manual_clock clock;
  std::vector<std::unique_ptr<shuffled_carrier>> carriers;
  std::vector<std::unique_ptr<node_t>> nodes;
  // Owner semaphores outlive the nodes' exports (declared before the
  // nodes, destroyed after them); proxies' observers likewise.
  std::vector<std::unique_ptr<owned>> sems;
  std::vector<std::unique_ptr<watched_proxy>> proxies;
  for (std::uint32_t r = 0; r < ranks; ++r) {
    // Mild: late subscriptions and values arrive later, not much.
    carriers.push_back(std::make_unique<shuffled_carrier>(hub, r, rng, std::array<unsigned, 3>{0, 10, 30}));
  }
  // Owner semaphores: 1-3 per rank, ids 10 * rank + k.
  for (std::uint32_t r = 0; r < ranks; ++r) {
    const std::uint64_t count = 1 + below(3);
    for (std::uint64_t k = 0; k < count; ++k) {
      auto o = std::make_unique<owned>();
      o->rank = r;
      o->id = 10 * r + k;
      sems.push_back(std::move(o));
    }
  }
  struct node_guard {
    std::vector<std::unique_ptr<node_t>>& nodes;
    ~node_guard() { nodes.clear(); }
  } guard{nodes};
  for (std::uint32_t r = 0; r < ranks; ++r) nodes.push_back(std::make_unique<node_t>(*carriers[r], options, clock));

  std::ostringstream problems;
  std::vector<bool> down(ranks, false);  // the rank's node shut down (BYE)
  std::uint64_t ahead = 0;  // proxy values applied ahead of what they claim
  auto export_one = [&](owned& o) {
    if (o.exported || down[o.rank]) return;
    if (!nodes[o.rank]->export_semaphore(o.id, o.sem)) {
      problems << "export of " << o.id << " on rank " << o.rank << " failed\n";
      return;
    }
    o.exported = true;
  };
  for (auto& o : sems) {
    if (chance(60)) export_one(*o);
  }
  for (auto& n : nodes) (void)n->start();

  // True claims (the file comment). An axis's submitted signals live on
  // its rank's semaphores; `claimed` holds, per axis, the highest epoch
  // another rank's reached frontier claimed.
  std::map<axis, std::uint64_t> claimed;
  auto rank_of = [](axis a) { return static_cast<std::uint32_t>(layout::machine(a)); };
  // The highest epoch of `x` another rank may claim now: below every
  // submitted signal of `x` not reached that still can be.
  auto claimable = [&](axis x) {
    std::uint64_t bound = ~std::uint64_t{0};
    for (const auto& q : sems) {
      if (q->rank != rank_of(x) || q->failure || q->withdrawn || down[q->rank]) continue;
      for (auto it = q->submitted.upper_bound(q->sem.value()); it != q->submitted.end(); ++it) {
        const frontier_entry p = it->second.producer;
        if (p.axis == x && p.epoch != 0) bound = std::min(bound, p.epoch - 1);
      }
    }
    return bound;
  };
  auto truthful = [&](const frontier& f, std::uint32_t owner_rank) {
    for (const frontier_entry e : f) {
      if (rank_of(e.axis) != owner_rank && e.epoch > claimable(e.axis)) return false;
    }
    return true;
  };
  auto note_claims = [&](const frontier& f, std::uint32_t owner_rank) {
    for (const frontier_entry e : f) {
      if (rank_of(e.axis) != owner_rank) claimed[e.axis] = std::max(claimed[e.axis], e.epoch);
    }
  };
  auto random_frontier = [&](std::uint32_t owner_rank) {
    frontier f;
    const std::uint64_t entries = below(4);
    for (std::uint64_t k = 0; k < entries; ++k) {
      // Mostly the owner's axes, sometimes another rank's (as far as true).
      const auto rank = static_cast<std::uint32_t>(chance(80) ? owner_rank : below(ranks));
      const axis x = rank_axis(rank, 1 + below(4));
      std::uint64_t epoch = 1 + below(60);
      if (rank != owner_rank) epoch = std::min(epoch, claimable(x));
      if (epoch != 0) f.insert_or_raise(x, epoch);
    }
    return f;
  };
  // A reached value's producer: anything (it is no claim).
  auto random_producer = [&](const frontier& f, std::uint32_t owner_rank) {
    if (chance(30)) return frontier_entry{};
    if (!f.empty() && chance(70)) return f[static_cast<std::size_t>(below(f.size()))];
    return frontier_entry{rank_axis(owner_rank, 1 + below(4)), 1 + below(60)};
  };
  // A submitted signal's producer: an operation of the owner's rank not
  // yet claimed complete by another.
  auto random_submitter = [&](std::uint32_t owner_rank) {
    if (chance(30)) return frontier_entry{};
    const axis x = rank_axis(owner_rank, 1 + below(4));
    const auto it = claimed.find(x);
    return frontier_entry{x, (it == claimed.end() ? 0 : it->second) + 1 + below(60)};
  };
  // The frontier `o` records when it reaches `v` with `f`: merged with the
  // signal submitted for exactly `v`, if any.
  auto recorded_at = [&](const owned& o, std::uint64_t v, const frontier& f) {
    frontier r = f;
    if (const auto it = o.submitted.find(v); it != o.submitted.end() && v > o.sem.value()) r.merge(it->second.f);
    return r;
  };
  auto note_reached = [&](owned& o, std::uint64_t v) {
    // What the owner now holds for v, read back exactly.
    const auto got = o.sem.frontier_at(v);
    if (!got) {
      problems << "owner lost its record for " << v << "\n";
      return;
    }
    o.reached[v] = value_record{got->frontier, got->producer, got->value_tainted};
    note_claims(got->frontier, o.rank);
  };
  auto open_one = [&](std::uint32_t at, owned& o) {
    if (down[at]) return;
    for (auto& p : proxies) {
      if (p->rank == at && p->owner == &o) return;
    }
    auto w = std::make_unique<watched_proxy>();
    w->rank = at;
    w->owner = &o;
    const auto sem = nodes[at]->open_proxy(o.rank, o.id);
    if (!sem) {
      problems << "open_proxy failed: " << sem.error_value().message() << "\n";
      return;
    }
    w->sem = *sem;
    w->same_rank = &proxies;
    w->claims_checked = &seen.claims_checked;
    w->ahead = &ahead;
    if (!w->sem->set_observer(&w->observer)) problems << "proxy already observed\n";
    ++seen.proxies;
    if (o.sem.value() != 0) ++seen.late_proxies;
    if (!o.exported) ++seen.early_proxies;
    proxies.push_back(std::move(w));
  };

  const std::uint64_t steps = 40 + below(80);
  for (std::uint64_t step = 0; step < steps; ++step) {
    owned& o = *sems[static_cast<std::size_t>(below(sems.size()))];
    const std::uint64_t op = below(100);
    const bool usable = !o.failure && !o.withdrawn;
    if (op < 22) {
      // Some messages on their way from one rank to another arrive; a
      // node polls.
      if (chance(40)) {
        carriers[static_cast<std::size_t>(below(ranks))]->release(static_cast<std::uint32_t>(below(ranks)),
                                                                   1 + below(4));
      }
      nodes[static_cast<std::size_t>(below(ranks))]->poll();
    } else if (op < 42 && usable) {
      const std::uint64_t v = o.sem.value() + 1 + below(3);
      const frontier f = random_frontier(o.rank);
      const frontier_entry p = random_producer(f, o.rank);
      if (truthful(recorded_at(o, v, f), o.rank) && o.sem.signal(v, f, p)) note_reached(o, v);
    } else if (op < 56 && usable) {
      const std::uint64_t v = o.sem.value() + 1 + below(5);
      const frontier f = random_frontier(o.rank);
      const frontier_entry p = random_submitter(o.rank);
      if (o.sem.submit_signal(v, f, p)) o.submitted[v] = value_record{f, p, false};
    } else if (op < 64 && usable) {
      // Reach the lowest outstanding submitted value (its recorded
      // frontier), if what that claims is true by now.
      const auto next = o.submitted.upper_bound(o.sem.value());
      if (next != o.submitted.end() && truthful(next->second.f, o.rank) && o.sem.signal(next->first)) {
        note_reached(o, next->first);
      }
    } else if (op < 67 && usable) {
      const std::uint64_t v = o.sem.value() + 1 + below(3);
      if (o.sem.signal_external(v)) {
        frontier none;
        none.set_tainted();  // an external value carries no frontier
        o.reached[v] = value_record{none, {}, true};
      }
    } else if (op < 69 && usable && chance(35)) {
      const causal::error e{chance(50) ? errc::device_lost : errc::timeout, chance(50) ? "boom" : "it broke", below(99)};
      if (o.sem.fail(e)) o.failure = e;
    } else if (op < 70 && o.exported && !o.withdrawn && chance(35)) {
      if (nodes[o.rank]->withdraw(o.id)) {
        o.withdrawn = true;
        o.value_at_withdraw = o.sem.value();
      }
    } else if (op < 71 && !down[o.rank] && chance(6)) {
      // The owner's rank leaves the job in order: BYE.
      nodes[o.rank]->shutdown();
      down[o.rank] = true;
      ++seen.ranks_shut_down;
      for (auto& other : sems) {
        if (other->rank == o.rank) other->value_at_shutdown = other->sem.value();
      }
    } else if (op < 76) {
      export_one(o);
    } else if (op < 90) {
      const auto at = static_cast<std::uint32_t>(below(ranks));
      if (at != o.rank) open_one(at, o);
    } else {
      for (auto& n : nodes) n->poll();
    }
  }

  // Quiesce: everything on its way arrives.
  bool quiet = false;
  for (int round = 0; round < 64 && !quiet; ++round) {
    std::size_t work = 0;
    for (auto& c : carriers) {
      if (c->waiting()) ++work;
      c->release_all();
    }
    for (auto& n : nodes) work += n->poll();
    quiet = work == 0;
  }
  if (!quiet) problems << "the job never went quiet\n";
  if (ahead != 0) problems << ahead << " proxy values applied ahead of a submitted signal they claim\n";

  std::vector<std::uint64_t> failed_per_rank(ranks, 0);
  for (const auto& w : proxies) {
    const owned& o = *w->owner;
    std::ostringstream where;
    where << "proxy on rank " << w->rank << " of (" << o.rank << ", " << o.id << "): ";
    const semaphore& p = *w->sem;
    if (p.failed()) ++failed_per_rank[w->rank];
    seen.proxy_values += w->reached.size();
    seen.proxy_submitted += w->submitted.size();
    // Each value once, increasing.
    for (std::size_t i = 1; i < w->reached.size(); ++i) {
      if (w->reached[i].first <= w->reached[i - 1].first) problems << where.str() << "values not increasing\n";
    }
    // Each reached value carries the owner's record for it -- or none (an
    // external value) where the owner's node had more ordered news than it
    // holds between polls.
    const bool stripped = nodes[o.rank]->stats().reached_without_frontier != 0;
    for (const auto& [v, rec] : w->reached) {
      const auto it = o.reached.find(v);
      if (it == o.reached.end()) {
        problems << where.str() << "reached " << v << ", which the owner never reached\n";
      } else if (stripped && rec.external && !it->second.external) {
        // sent without its frontier to keep the order
      } else if (!same_record(rec, it->second)) {
        problems << where.str() << "value " << v << " has " << describe(rec) << ", the owner " << describe(it->second)
                 << "\n";
      }
    }
    for (const auto& [v, rec] : w->submitted) {
      const auto it = o.submitted.find(v);
      if (it == o.submitted.end()) {
        problems << where.str() << "submitted " << v << ", which the owner never submitted\n";
      } else if (!same_record(rec, it->second)) {
        problems << where.str() << "submitted " << v << " has " << describe(rec) << ", the owner "
                 << describe(it->second) << "\n";
      }
    }
    // The end state.
    if (down[w->rank] || down[o.rank]) {
      // Lost: failed, with the owner's error or cancelled (BYE, this node's
      // shutdown, a withdrawal), at a value the owner had reached.
      if (!p.failed()) {
        problems << where.str() << "not failed though rank " << (down[o.rank] ? o.rank : w->rank)
                 << " left (value " << p.value() << ", the rank had polled: "
                 << (nodes[down[o.rank] ? o.rank : w->rank]->stats().messages_sent != 0) << ")\n";
      } else {
        const errc got = p.failure()->code();
        const bool owner_error = o.failure && got == o.failure->code();
        if (got != errc::cancelled && !owner_error) {
          problems << where.str() << "failed with " << causal::to_string(got) << " after a rank left\n";
        }
      }
      if (down[o.rank] && p.value() > o.value_at_shutdown) {
        problems << where.str() << "passed the owner's value at its shutdown\n";
      }
      if (p.value() > o.sem.value()) problems << where.str() << "passed the owner's value\n";
      continue;
    }
    if (!o.exported) {
      if (p.value() != 0 || p.failed()) problems << where.str() << "moved though never exported\n";
      continue;
    }
    if (o.withdrawn) {
      if (!p.failed()) {
        problems << where.str() << "not failed after the withdrawal\n";
      } else {
        const errc got = p.failure()->code();
        const bool owner_error = o.failure && got == o.failure->code();
        if (got != errc::cancelled && !owner_error) problems << where.str() << "failed with " << causal::to_string(got) << "\n";
      }
      if (p.value() > o.value_at_withdraw) problems << where.str() << "passed the value at the withdrawal\n";
      continue;
    }
    if (p.value() != o.sem.value()) {
      problems << where.str() << "ends at " << p.value() << ", the owner at " << o.sem.value() << "\n";
    }
    if (o.failure) {
      if (!p.failed()) {
        problems << where.str() << "not failed, the owner failed\n";
      } else if (p.failure()->code() != o.failure->code() || p.failure()->message() != o.failure->message() ||
                 p.failure()->position() != o.failure->position()) {
        problems << where.str() << "failed with " << p.failure()->message() << ", the owner with "
                 << o.failure->message() << "\n";
      }
      continue;
    }
    if (p.failed()) {
      problems << where.str() << "failed (" << p.failure()->message() << ") though the owner did not\n";
      continue;
    }
    // The outstanding submitted signals match.
    if (p.pending_count() != o.sem.pending_count()) {
      problems << where.str() << p.pending_count() << " submitted outstanding, the owner " << o.sem.pending_count()
               << "\n";
    }
    for (auto it = o.submitted.upper_bound(o.sem.value()); it != o.submitted.end(); ++it) {
      const auto got = p.frontier_at(it->first);
      if (!got || got->reached || got->signal_value != it->first || got->frontier != it->second.f ||
          got->producer != it->second.producer) {
        problems << where.str() << "submitted " << it->first << " missing or different\n";
      }
    }
    // The final value's frontier is the owner's (unless it came without).
    if (o.sem.value() != 0) {
      const auto mine = p.frontier_at(o.sem.value());
      const auto theirs = o.sem.frontier_at(o.sem.value());
      if (mine && stripped && mine->value_tainted) {
        // sent without its frontier to keep the order
      } else if (!mine || !theirs || mine->frontier != theirs->frontier || mine->producer != theirs->producer) {
        problems << where.str() << "final frontier differs\n";
      }
    }
  }
  for (const auto& n : nodes) {
    seen.without_frontier += n->stats().reached_without_frontier;
    seen.reached_held += n->stats().reached_held;
    seen.submitted_covered += n->stats().submitted_covered;
  }
  for (const auto& o : sems) {
    seen.failed_owners += o->failure ? 1 : 0;
    seen.withdrawn += o->withdrawn ? 1 : 0;
  }
  for (std::uint32_t r = 0; r < ranks; ++r) {
    const auto counted = nodes[r]->stats().proxies_failed;
    if (counted != failed_per_rank[r]) {
      problems << "rank " << r << " counts " << counted << " failed proxies, " << failed_per_rank[r] << " are\n";
    }
    if (nodes[r]->stats().malformed != 0) {
      problems << "rank " << r << " saw malformed messages\n";
    }
    if (nodes[r]->stats().protocol_errors != 0) {
      problems << "rank " << r << " saw protocol errors: " << nodes[r]->stats().last_error->message() << "\n";
    }
  }
  // Remove the observers before the proxies' node goes away (the observer
  // structs die with `proxies`, after the nodes, so this is tidiness).
  for (auto& w : proxies) (void)w->sem->set_observer(nullptr, &w->observer);
  return problems.str();
}


/// Runs `count` programs from `first` on nodes with `Traits`; returns
/// what they exercised.
template <class Coverage, class Run>
Coverage run_numbered(const char* kind, std::uint64_t first, std::uint64_t count, Run run) {
  Coverage seen;
  for (std::uint64_t number = first; number < first + count; ++number) {
    const std::string problems = run(number, seen);
    if (!problems.empty()) {
      FAIL(kind << " " << number << " (rerun: CAUSAL_MPI_PROGRAM=" << number << ") broke:\n" << problems);
    }
  }
  return seen;
}

template <class Traits>
coverage run_programs(std::uint64_t first, std::uint64_t count) {
  const coverage seen = run_numbered<coverage>("program", first, count, &run_program<Traits>);
  INFO("proxies " << seen.proxies << ", values " << seen.proxy_values << ", submitted " << seen.proxy_submitted
                  << ", failed owners " << seen.failed_owners << ", withdrawn " << seen.withdrawn << ", late "
                  << seen.late_proxies << ", early " << seen.early_proxies << ", ranks shut down "
                  << seen.ranks_shut_down << ", without frontier " << seen.without_frontier << ", claims checked "
                  << seen.claims_checked << ", held " << seen.reached_held << ", covered " << seen.submitted_covered);
  if (count > 1) {
    CHECK(seen.proxies >= count);
    CHECK(seen.proxy_values >= 5 * count);
    CHECK(seen.proxy_submitted >= count);
    CHECK(seen.failed_owners >= count / 10);
    CHECK(seen.withdrawn >= count / 20);
    CHECK(seen.late_proxies >= count / 2);
    CHECK(seen.early_proxies >= count / 10);
    CHECK(seen.ranks_shut_down >= count / 20);
  }
  return seen;
}

/// A proxy of a pipeline program, with the checks of the file comment.
struct pipe_proxy {
  static void on_reached(void* self, const causal::observed_signal<frontier>& ev) noexcept {
    auto& w = *static_cast<pipe_proxy*>(self);
    if (ev.external || ev.replay) return;
    ++*w.checks;
    for (const auto& other : *w.all) {
      if (other.get() == &w || other->rank != w.rank || other->sem->failed()) continue;
      const semaphore& q = *other->sem;
      for (std::uint64_t v = q.value() + 1;;) {
        const auto next = q.frontier_at(v);
        if (!next || next->reached) break;
        if (next->has_producer() && ev.frontier->epoch_of(next->producer.axis) >= next->producer.epoch) ++*w.ahead;
        v = next->signal_value + 1;
      }
    }
  }
  static void on_submitted(void* self, const causal::observed_signal<frontier>& ev) noexcept {
    auto& w = *static_cast<pipe_proxy*>(self);
    if (ev.producer.epoch == 0) return;
    for (const auto& other : *w.all) {
      if (other->rank != w.rank || other->owner == w.owner || other->sem->value() == 0) continue;
      const auto at = other->sem->frontier_at(other->sem->value());
      if (at && !at->value_tainted && at->frontier.epoch_of(ev.producer.axis) >= ev.producer.epoch) ++*w.early;
    }
  }

  std::uint32_t rank = 0;   // where it lives
  std::uint32_t owner = 0;  // whose export it follows
  semaphore* sem = nullptr;
  semaphore* theirs = nullptr;
  const std::vector<std::unique_ptr<pipe_proxy>>* all = nullptr;
  std::uint64_t* checks = nullptr;
  std::uint64_t* ahead = nullptr;
  std::uint64_t* early = nullptr;
  causal::semaphore_observer<frontier> observer{this, &on_submitted, &on_reached, nullptr, nullptr};
};

struct pipeline_coverage {
  std::uint64_t operations = 0;
  std::uint64_t checks = 0;
  std::uint64_t reached_held = 0;
  std::uint64_t messages_held = 0;
  std::uint64_t submitted_covered = 0;
};

/// Runs pipeline program `number` on nodes with `Traits`; returns an empty
/// string or what broke.
template <class Traits>
std::string run_pipeline(std::uint64_t number, pipeline_coverage& seen) {
  using node_t = mpi::basic_node<shuffled_carrier, semaphore, Traits, mpi::manual_clock>;
  std::mt19937_64 rng(number);
  auto below = [&](std::uint64_t n) { return static_cast<std::uint64_t>(rng() % n); };
  auto chance = [&](unsigned percent) { return below(100) < percent; };

  const auto ranks = static_cast<std::uint32_t>(3 + below(2));
  mpi::node_options options;
  options.heartbeat_interval = 0us;
  options.heartbeat_timeout = 0us;
  struct operation {
    std::vector<std::pair<semaphore*, std::uint64_t>> signals;  // in order; the last carries the entry
  };
  struct rank_state {
    axis x{};
    std::uint64_t epoch = 0;
    frontier known{};  // the queue's knowledge
    std::array<semaphore, 2> exports;
    std::array<std::uint64_t, 2> submitted{};  // the last value submitted on each
    std::deque<operation> running{};
  };
  mpi::loopback_hub hub(ranks);
  mpi::manual_clock clock;
  std::vector<std::unique_ptr<rank_state>> state;  // outlives the nodes
  std::vector<std::unique_ptr<pipe_proxy>> proxies;
  std::vector<std::unique_ptr<shuffled_carrier>> carriers;
  std::vector<std::unique_ptr<node_t>> nodes;
  struct node_guard {
    std::vector<std::unique_ptr<node_t>>& nodes;
    ~node_guard() { nodes.clear(); }
  } guard{nodes};
  std::ostringstream problems;
  std::uint64_t ahead = 0;
  std::uint64_t early = 0;
  for (std::uint32_t r = 0; r < ranks; ++r) {
    state.push_back(std::make_unique<rank_state>());
    state[r]->x = rank_axis(r, 1);
    // Some links nearly always slow: a third rank's news overtake them.
    carriers.push_back(std::make_unique<shuffled_carrier>(hub, r, rng, std::array<unsigned, 3>{0, 40, 95}));
    nodes.push_back(std::make_unique<node_t>(*carriers[r], options, clock));
    for (std::uint64_t k = 0; k < 2; ++k) {
      if (!nodes[r]->export_semaphore(k, state[r]->exports[k])) problems << "export failed\n";
    }
  }
  for (auto& n : nodes) (void)n->start();
  for (std::uint32_t at = 0; at < ranks; ++at) {
    for (std::uint32_t owner = 0; owner < ranks; ++owner) {
      if (owner == at) continue;
      for (std::uint64_t k = 0; k < 2; ++k) {
        auto w = std::make_unique<pipe_proxy>();
        w->rank = at;
        w->owner = owner;
        w->sem = nodes[at]->open_proxy(owner, k).value_or(nullptr);
        w->theirs = &state[owner]->exports[k];
        w->all = &proxies;
        w->checks = &seen.checks;
        w->ahead = &ahead;
        w->early = &early;
        if (w->sem == nullptr || !w->sem->set_observer(&w->observer)) problems << "proxy not opened\n";
        proxies.push_back(std::move(w));
      }
    }
  }
  if (!problems.str().empty()) return problems.str();

  auto complete_oldest = [&](rank_state& rs) {
    if (rs.running.empty()) return;
    for (const auto& [sem, v] : rs.running.front().signals) {
      if (!sem->signal(v)) problems << "an operation's signal failed\n";
    }
    rs.running.pop_front();
  };
  const std::uint64_t steps = 100 + below(200);
  for (std::uint64_t step = 0; step < steps; ++step) {
    const auto r = static_cast<std::uint32_t>(below(ranks));
    rank_state& rs = *state[r];
    const std::uint64_t op = below(100);
    if (op < 22) {
      // An operation signals one export or both, in random order.
      const std::uint64_t e = ++rs.epoch;
      const frontier_entry producer{rs.x, e};
      operation o;
      const std::size_t first = static_cast<std::size_t>(below(2));
      const std::size_t count = chance(50) ? 2 : 1;
      frontier with = rs.known;
      with.insert_or_raise(rs.x, e);
      for (std::size_t i = 0; i < count; ++i) {
        const std::size_t k = (first + i) % 2;
        const std::uint64_t v = ++rs.submitted[k];
        const bool last = i + 1 == count;
        if (!rs.exports[k].submit_signal(v, last ? with : rs.known, producer)) problems << "submit failed\n";
        o.signals.emplace_back(&rs.exports[k], v);
      }
      rs.known = with;
      rs.running.push_back(std::move(o));
      ++seen.operations;
    } else if (op < 40) {
      complete_oldest(rs);
    } else if (op < 58) {
      // The rank's queue waits on a value one of its proxies reached and
      // learns its frontier (each rank has 2 * (ranks - 1) proxies, listed
      // rank by rank).
      const std::size_t mine = 2 * (ranks - 1);
      const auto& w = *proxies[r * mine + static_cast<std::size_t>(below(mine))];
      if (w.sem->value() != 0) {
        const auto at = w.sem->frontier_at(w.sem->value());
        if (at && !at->value_tainted) state[r]->known.merge(at->frontier);
      }
    } else if (op < 80) {
      nodes[r]->poll();
    } else {
      carriers[r]->release(static_cast<std::uint32_t>(below(ranks)), 1 + below(4));
    }
  }
  // Quiesce: every operation completes and every message arrives.
  for (auto& rs : state) {
    while (!rs->running.empty()) complete_oldest(*rs);
  }
  bool quiet = false;
  for (int round = 0; round < 64 && !quiet; ++round) {
    std::size_t work = 0;
    for (auto& c : carriers) {
      if (c->waiting()) ++work;
      c->release_all();
    }
    for (auto& n : nodes) work += n->poll();
    quiet = work == 0;
  }
  if (!quiet) problems << "the job never went quiet\n";
  if (ahead != 0) problems << ahead << " proxy values applied ahead of a submitted signal they claim\n";
  if (early != 0) problems << early << " submitted signals announced after a claim of their producer\n";
  for (const auto& w : proxies) {
    if (w->sem->value() != w->theirs->value() || w->sem->failed()) {
      problems << "proxy on rank " << w->rank << " of rank " << w->owner << " ends at " << w->sem->value()
               << (w->sem->failed() ? " (failed)" : "") << ", the owner at " << w->theirs->value() << "\n";
    }
  }
  for (const auto& n : nodes) {
    seen.reached_held += n->stats().reached_held;
    seen.messages_held += n->stats().messages_held;
    seen.submitted_covered += n->stats().submitted_covered;
    if (n->stats().malformed + n->stats().protocol_errors != 0) problems << "malformed or protocol errors\n";
  }
  for (auto& w : proxies) (void)w->sem->set_observer(nullptr, &w->observer);
  return problems.str();
}

template <class Traits>
pipeline_coverage run_pipelines(std::uint64_t first, std::uint64_t count) {
  const pipeline_coverage seen =
      run_numbered<pipeline_coverage>("pipeline", first, count, &run_pipeline<Traits>);
  INFO("operations " << seen.operations << ", checks " << seen.checks << ", held " << seen.reached_held
                     << " (messages " << seen.messages_held << "), covered " << seen.submitted_covered);
  if (count > 1) {
    CHECK(seen.checks >= 10 * count);
    CHECK(seen.reached_held >= count / 10);
    CHECK(seen.submitted_covered >= count / 10);
  }
  return seen;
}

}  // namespace

TEST_CASE("mpi property: random programs over 2-4 ranks match the reference model", "[mpi][property]") {
  std::uint64_t first = 1;
  std::uint64_t count = 300;
  if (const char* one = std::getenv("CAUSAL_MPI_PROGRAM"); one != nullptr) {
    first = std::strtoull(one, nullptr, 10);
    count = 1;
  }
  SECTION("nodes with the default traits") {
    (void)run_programs<mpi::default_node_traits>(first, count);
  }
  SECTION("nodes whose ordered news overflow (news_capacity 2)") {
    const coverage seen = run_programs<tiny_news_traits>(first, count);
    if (count > 1) CHECK(seen.without_frontier >= count / 10);
  }
}

TEST_CASE("mpi property: random pipelines over 3-4 ranks, delivered in random order, never apply a claim ahead "
          "of what it claims",
          "[mpi][property][order]") {
  std::uint64_t first = 1;
  std::uint64_t count = 200;
  if (const char* one = std::getenv("CAUSAL_MPI_PROGRAM"); one != nullptr) {
    first = std::strtoull(one, nullptr, 10);
    count = 1;
  }
  SECTION("nodes with the default traits") {
    (void)run_pipelines<mpi::default_node_traits>(first, count);
  }
  SECTION("nodes whose ordered news overflow (news_capacity 2)") {
    (void)run_pipelines<tiny_news_traits>(first, count);
  }
}
