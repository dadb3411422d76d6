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
// once (stats().proxies_failed).
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

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
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
  }
  static void on_submitted(void* self, const causal::observed_signal<frontier>& ev) noexcept {
    auto& w = *static_cast<watched_proxy*>(self);
    w.submitted.push_back({ev.value, value_record{*ev.frontier, ev.producer, false}});
  }

  std::uint32_t rank = 0;  // where the proxy lives
  owned* owner = nullptr;
  semaphore* sem = nullptr;
  // The observer allocates when logging: fine here, the node's hot paths
  // are not under test.
  std::vector<std::pair<std::uint64_t, value_record>> reached;
  std::vector<std::pair<std::uint64_t, value_record>> submitted;
  causal::semaphore_observer<frontier> observer{this, &on_submitted, &on_reached, nullptr, nullptr};
};

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
};

/// Runs program number `number` on nodes with `Traits`; returns an empty
/// string or what broke.
template <class Traits>
std::string run_program(std::uint64_t number, coverage& seen) {
  using node_t = mpi::basic_node<mpi::loopback_carrier, semaphore, Traits, mpi::manual_clock>;
  std::mt19937_64 rng(number);
  auto below = [&](std::uint64_t n) { return static_cast<std::uint64_t>(rng() % n); };
  auto chance = [&](unsigned percent) { return below(100) < percent; };

  const auto ranks = static_cast<std::uint32_t>(2 + below(3));
  mpi::node_options options;
  options.heartbeat_interval = 0us;
  options.heartbeat_timeout = 0us;
  mpi::loopback_hub hub(ranks);
  mpi::manual_clock clock;
  std::vector<std::unique_ptr<mpi::loopback_carrier>> carriers;
  std::vector<std::unique_ptr<node_t>> nodes;
  // Owner semaphores outlive the nodes' exports (declared before the
  // nodes, destroyed after them); proxies' observers likewise.
  std::vector<std::unique_ptr<owned>> sems;
  std::vector<std::unique_ptr<watched_proxy>> proxies;
  for (std::uint32_t r = 0; r < ranks; ++r) {
    carriers.push_back(std::make_unique<mpi::loopback_carrier>(hub, r));
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

  auto random_frontier = [&](std::uint32_t owner_rank) {
    frontier f;
    const std::uint64_t entries = below(4);
    for (std::uint64_t k = 0; k < entries; ++k) {
      // Mostly the owner's axes, sometimes another rank's.
      const std::uint64_t rank = chance(80) ? owner_rank : below(ranks);
      f.insert_or_raise(rank_axis(rank, 1 + below(4)), 1 + below(60));
    }
    return f;
  };
  auto random_producer = [&](const frontier& f, std::uint32_t owner_rank) {
    if (chance(30)) return frontier_entry{};
    if (!f.empty() && chance(70)) return f[static_cast<std::size_t>(below(f.size()))];
    return frontier_entry{rank_axis(owner_rank, 1 + below(4)), 1 + below(60)};
  };
  auto note_reached = [&](owned& o, std::uint64_t v) {
    // What the owner now holds for v, read back exactly.
    const auto got = o.sem.frontier_at(v);
    if (!got) {
      problems << "owner lost its record for " << v << "\n";
      return;
    }
    o.reached[v] = value_record{got->frontier, got->producer, got->value_tainted};
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
      nodes[static_cast<std::size_t>(below(ranks))]->poll();
    } else if (op < 42 && usable) {
      const std::uint64_t v = o.sem.value() + 1 + below(3);
      const frontier f = random_frontier(o.rank);
      const frontier_entry p = random_producer(f, o.rank);
      if (o.sem.signal(v, f, p)) note_reached(o, v);
    } else if (op < 56 && usable) {
      const std::uint64_t v = o.sem.value() + 1 + below(5);
      const frontier f = random_frontier(o.rank);
      const frontier_entry p = random_producer(f, o.rank);
      if (o.sem.submit_signal(v, f, p)) o.submitted[v] = value_record{f, p, false};
    } else if (op < 64 && usable) {
      // Reach the lowest outstanding submitted value (its recorded frontier).
      const auto next = o.submitted.upper_bound(o.sem.value());
      if (next != o.submitted.end() && o.sem.signal(next->first)) note_reached(o, next->first);
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

  // Quiesce.
  bool quiet = false;
  for (int round = 0; round < 64 && !quiet; ++round) {
    std::size_t work = 0;
    for (auto& n : nodes) work += n->poll();
    quiet = work == 0;
  }
  if (!quiet) problems << "the job never went quiet\n";

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
  for (const auto& n : nodes) seen.without_frontier += n->stats().reached_without_frontier;
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
template <class Traits>
coverage run_programs(std::uint64_t first, std::uint64_t count) {
  coverage seen;
  for (std::uint64_t number = first; number < first + count; ++number) {
    const std::string problems = run_program<Traits>(number, seen);
    if (!problems.empty()) {
      FAIL("program " << number << " (rerun: CAUSAL_MPI_PROGRAM=" << number << ") broke:\n" << problems);
    }
  }
  INFO("proxies " << seen.proxies << ", values " << seen.proxy_values << ", submitted " << seen.proxy_submitted
                  << ", failed owners " << seen.failed_owners << ", withdrawn " << seen.withdrawn << ", late "
                  << seen.late_proxies << ", early " << seen.early_proxies << ", ranks shut down "
                  << seen.ranks_shut_down << ", without frontier " << seen.without_frontier);
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
