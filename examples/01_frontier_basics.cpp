// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// 01_frontier_basics: the frontier operations of docs/frontiers.md, computed
// by the library and printed, one story per section:
//   1. merge is the join of two causal histories;
//   2. dominance answers "are this operation's prerequisites satisfied?";
//   3. insert-or-raise records a queue's own progress;
//   4. transitivity: a queue learns about work on a queue it never met;
//   5. overflow taints, and a tainted requirement is never "satisfied";
//   6. the wire form that carries a frontier across processes.
//
// Every printed claim is also checked; the program exits 1 if the library
// ever computes something else, so it runs as a test too.
//
// Build by hand: c++ -std=c++20 -I include examples/01_frontier_basics.cpp -pthread
#include <causal/causal.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

int failures = 0;

void expect(bool ok, const char* claim) {
  std::printf("    %s %s\n", ok ? "ok  " : "FAIL", claim);
  if (!ok) ++failures;
}

void show(const char* label, const causal::frontier& f) {
  std::printf("  %-36s %s\n", label, causal::to_string(f).c_str());
}

// A queue as frontiers see it: one axis, an epoch that counts its
// operations, and what it knows (always including its own axis).
struct toy_queue {
  explicit toy_queue(causal::axis own) : self(own) {}

  causal::axis self;
  std::uint64_t epoch = 0;
  causal::frontier knowledge;

  // Runs one operation; returns the frontier its signal would carry.
  causal::frontier signal() {
    knowledge.insert_or_raise(self, ++epoch);
    return knowledge;
  }
  // Waits on a signal: imports the signaller's frontier.
  void wait(const causal::frontier& signalled) { knowledge.merge(signalled, self); }
};

}  // namespace

int main() {
  // Axes come from an allocator that never hands out one twice.
  causal::axis_allocator axes{0};
  const causal::axis a = axes.allocate(0, causal::domain::queue).value();
  const causal::axis b = axes.allocate(0, causal::domain::queue).value();
  const causal::axis c = axes.allocate(0, causal::domain::queue).value();
  std::printf("axes: A = %s, B = %s, C = %s\n\n", causal::to_string(a).c_str(),
              causal::to_string(b).c_str(), causal::to_string(c).c_str());

  std::printf("1. merge: the component-wise max (join)\n");
  // [snippet:merge]
  const causal::frontier x{{a, 5}, {b, 3}};
  const causal::frontier y{{a, 2}, {b, 7}, {c, 4}};
  const causal::frontier joined = causal::merge(x, y);  // {A:5, B:7, C:4}
  // [/snippet]
  show("merge({A:5, B:3}, {A:2, B:7, C:4}) =", joined);
  expect(joined == causal::frontier{{a, 5}, {b, 7}, {c, 4}}, "equals {A:5, B:7, C:4}");
  expect(causal::merge(y, x) == joined, "commutative: merge(y, x) is the same");
  expect(causal::merge(joined, x) == joined, "idempotent: merging x again changes nothing");

  std::printf("\n2. dominance: does the left side already know everything the right needs?\n");
  // [snippet:dominates]
  const bool covered = causal::dominates(causal::frontier{{a, 5}, {b, 7}, {c, 4}},
                                         causal::frontier{{a, 3}, {b, 7}});  // true
  const bool missing = causal::dominates(causal::frontier{{a, 5}, {b, 7}},
                                         causal::frontier{{a, 3}, {c, 4}});  // false: C unknown
  // [/snippet]
  std::printf("  dominates({A:5, B:7, C:4}, {A:3, B:7}) = %s\n", covered ? "true" : "false");
  std::printf("  dominates({A:5, B:7}, {A:3, C:4})       = %s\n", missing ? "true" : "false");
  expect(covered, "A:5 >= 3 and B:7 >= 7");
  expect(!missing, "C is missing from the left");
  const causal::frontier gap =
      causal::find_undominated(causal::frontier{{a, 5}, {b, 7}}, causal::frontier{{a, 3}, {c, 4}});
  show("the gap (waits that would close it):", gap);
  expect(gap == causal::frontier{{c, 4}}, "only C:4 is uncovered");
  std::printf("  compare(x, joined) = %s\n",
              std::string(causal::to_string(causal::compare(x, joined))).c_str());
  expect(causal::compare(x, joined) == causal::order::before, "x happened before the join");

  std::printf("\n3. insert-or-raise: record an (axis, epoch)\n");
  causal::frontier grow{{a, 5}, {b, 3}};
  grow.insert_or_raise(c, 4);
  show("insert_or_raise({A:5, B:3}, C, 4) =", grow);
  expect(grow == causal::frontier{{a, 5}, {b, 3}, {c, 4}}, "C:4 inserted in axis order");
  causal::frontier raise{{a, 5}, {b, 3}};
  raise.insert_or_raise(a, 8);
  show("insert_or_raise({A:5, B:3}, A, 8) =", raise);
  expect(raise == causal::frontier{{a, 8}, {b, 3}}, "A raised to 8");
  raise.insert_or_raise(a, 2);
  expect(raise.epoch_of(a) == 8, "a lower epoch never lowers an entry");

  std::printf("\n4. transitivity across three queues\n");
  // [snippet:transitivity]
  // toy_queue: this example's sketch of what every causal queue keeps (an
  // axis, an epoch, a knowledge frontier), not a library type.
  toy_queue qa{a}, qb{b}, qc{c};
  for (int i = 0; i < 4; ++i) qa.signal();  // four operations on A
  const causal::frontier s1 = qa.signal();  // A's 5th signals S1 = {A:5}
  qb.signal();
  qb.signal();
  qc.signal();                              // C has done one operation of its own
  qb.wait(s1);                              // B waits on S1 ...
  const causal::frontier s2 = qb.signal();  // ... and signals S2 = {A:5, B:3}
  qc.wait(s2);                              // C waits on S2 only
  // C now knows {A:5, B:3, C:1}: A reached 5, though C never touched A or S1.
  // [/snippet]
  show("S1 signalled by A:", s1);
  show("S2 signalled by B after waiting S1:", s2);
  show("C's knowledge after waiting S2:", qc.knowledge);
  expect(qc.knowledge.epoch_of(a) == 5, "C knows A:5 transitively");
  expect(causal::dominates(qc.knowledge, s1), "C's knowledge covers S1: a wait on S1 would be elided");

  std::printf("\n5. overflow: fixed capacity, evict the oldest, taint\n");
  causal::basic_frontier<2> small{{a, 9}, {b, 1}};
  small.insert_or_raise(c, 5);
  std::printf("  capacity 2, {A:9, B:1} + C:5 = %s\n", causal::to_string(small).c_str());
  expect(small.tainted() && small.epoch_of(b) == 0, "B (smallest epoch) evicted, frontier tainted");
  expect(!causal::dominates(causal::basic_frontier<2>{{a, 9}, {b, 1}, {c, 5}}, small),
         "a tainted requirement is never proven met by dominance");
  causal::basic_frontier<2, causal::default_axis_layout, causal::reject_overflow> strict;
  expect(strict.insert_or_raise(a, 1).ok() && strict.insert_or_raise(b, 1).ok(), "fits");
  const causal::status refused = strict.insert_or_raise(c, 1);
  std::printf("  reject_overflow instead: %s (%s)\n",
              std::string(causal::to_string(refused.code())).c_str(),
              std::string(refused.error_value().message()).c_str());
  expect(refused.code() == causal::errc::capacity_exceeded && strict.size() == 2,
         "rejected, frontier unchanged");

  std::printf("\n6. the wire form\n");
  const std::vector<std::byte> bytes = causal::serialize(joined);
  std::printf("  %s -> %zu bytes:", causal::to_string(joined).c_str(), bytes.size());
  for (const std::byte byte : bytes) std::printf(" %02x", static_cast<unsigned>(byte));
  std::printf("\n");
  const causal::result<causal::frontier> back = causal::deserialize<causal::frontier>(bytes);
  expect(back && *back == joined, "deserializes to the same frontier");
  std::vector<std::byte> corrupt = bytes;
  corrupt.push_back(std::byte{0});
  const auto bad = causal::deserialize<causal::frontier>(corrupt);
  std::printf("  with one byte appended: %s at byte %llu\n",
              std::string(bad.error_value().message()).c_str(),
              static_cast<unsigned long long>(bad.error_value().position()));
  expect(!bad && bad.code() == causal::errc::malformed, "trailing garbage is rejected");

  std::printf("\n%s\n", failures == 0 ? "all frontier examples hold" : "SOME EXAMPLES FAILED");
  return failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
