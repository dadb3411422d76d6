// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// frontier_bench: the cost of the four frontier operations that sit on
// causal's hot paths, next to a std::map<std::uint64_t, std::uint64_t>
// vector clock doing the same thing in the same binary.
//
// Why it matters. Every signal carries a frontier and every wait merges one
// (`merge`); wait elision asks `dominates(knowledge, requirement)` before it
// would park or issue a device wait; `compare` classifies two histories;
// `insert_or_raise` records a queue's own progress on each submit. These run
// once per signal/wait, so they must stay in the single-digit nanoseconds
// (goals: merge of two 6-entry frontiers <= 10 ns, dominates <= 5 ns, and at
// least 10x faster than the std::map clock). docs/frontiers.md.
//
// What runs. Each benchmark is named `<op>/<case>/<n>/<impl>`, impl being
// `ours` (causal::basic_frontier) or `map` (the std::map clock below), and
// the two are registered back to back so they run interleaved in one process.
// n is 1, 4, 6, 12, 16. Frontier types: `causal::frontier` (Capacity 12)
// wherever the data fits, `basic_frontier<16>` for the 16-entry same-axes
// cases, `basic_frontier<32>` for the 12- and 16-entry different-axes cases.
//
//   op               what one iteration does
//   merge            t = a; t.merge(b)               (in place; restore + merge)
//   merge_restore    t = a                           (the restore alone)
//   merge_pure       r = causal::merge(a, b)         (returns a new frontier)
//   dominates        dominates(K, R)                 (true: walks all of R)
//   compare          compare(K, R)                   (order::after: full walk)
//   insert_or_raise  same: raise an existing axis to a new, larger epoch
//                    diff: t = S; t.insert_or_raise(absent axis, e)
//   insert_restore   t = S                           (the restore of `diff`)
//
//   case `same`: a and b hold the same n axes; a wins on even positions, b
//                on odd ones, so a merge really changes half of a's epochs.
//   case `diff`: n <= 6: a and b hold n disjoint, interleaved axes (a the
//                even ordinals, b the odd), so the union has 2n entries and
//                fits Capacity 12. n = 12, 16: half-overlapping: b shares
//                every other axis of a and brings n/2 new ones interleaved
//                between them; the union has 1.5n entries (18, 24), in
//                basic_frontier<32>.
//   K = merge(a, b) and R = b, so K covers R: for `same` both hold n axes,
//   for `diff` K holds the union and R's axes are spread through it.
//   insert `diff`: S is a without its middle entry (n - 1 entries) and the
//   inserted axis is that middle one, so half the entries shift; the
//   result has n entries and fits the same type as `same`.
//
// In-place mutation is not a no-op after the first iteration: each `merge`
// and `insert_or_raise/diff` iteration first restores its target from a
// pristine copy (for ours a 200/272/520-byte memcpy; for the map a
// copy-assignment, which libstdc++ does by reusing the target's nodes, so
// the `diff` restore frees the nodes the previous merge allocated). The
// restore alone is timed as `*_restore`; bench/ratio.py reports both the
// gross figure and the net one (op minus restore), with ratios for each.
// `insert_or_raise/same` needs no restore: its epoch grows every iteration.
//
// The std::map clock is written as well as a map allows: merge walks both
// maps in order and inserts with a hint (O(n + m), not n log n); dominates
// and compare are the same linear walks as ours.
//
// Honesty. Inputs are built at run time from volatile seeds, and each
// iteration hides its inputs and result from the optimiser
// (benchmark::DoNotOptimize on the result or on a pointer to it, with its
// memory clobber), so nothing folds or hoists out of the loop. Before any
// timing, main() checks every op of every case: ours and the map must agree,
// and merge must yield exactly what the map says. After each timed loop the
// benchmark checks its last result again. Time per op is amortised over
// Google Benchmark's batches (one clock read per batch, not per op), so the
// ~18.5 ns clock-read cost of these VMs does not enter the figures.
//
// What to look for. `same` cases should cost a few ns and grow gently with
// n (one pass, vectorised max); `diff` cases a few ns more (a counting pass
// plus a backward merge). The map should be >= 10x slower, far more when a
// merge allocates (`diff`). Note that each benchmark replays one input, so
// the branch predictor learns the merge walk; real traffic sees more
// mispredictions in the `diff` paths.
//
// Run (release build, from the repository root):
//   meson setup build-bench -Dbenchmarks=enabled --buildtype=release
//   meson compile -C build-bench
//   build-bench/bench/frontier_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
// or without meson, one line:
//   g++ -std=c++20 -O2 -DNDEBUG -Iinclude bench/frontier_bench.cpp -lbenchmark -lpthread
// Ratio table: add --benchmark_format=json > out.json; python3 bench/ratio.py out.json
// See also: bench/README.md, bench/RESULTS.md, <causal/frontier.hpp>.

#include <causal/axis.hpp>
#include <causal/frontier.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

//===-- the std::map vector clock -------------------------------------------===//

using map_clock = std::map<std::uint64_t, std::uint64_t>;

/// Joins `from` into `into`: one in-order walk with hinted inserts.
void map_merge(map_clock& into, const map_clock& from) {
  auto it = into.begin();
  for (const auto& [k, v] : from) {
    while (it != into.end() && it->first < k) ++it;
    if (it != into.end() && it->first == k) {
      if (it->second < v) it->second = v;
      ++it;
    } else {
      it = std::next(into.emplace_hint(it, k, v));
    }
  }
}

map_clock map_merge_pure(const map_clock& a, const map_clock& b) {
  map_clock out = a;
  map_merge(out, b);
  return out;
}

/// Every entry of `b` is at most the same key's value in `a`.
bool map_dominates(const map_clock& a, const map_clock& b) {
  if (b.size() > a.size()) return false;
  auto i = a.begin();
  for (const auto& [k, v] : b) {
    while (i != a.end() && i->first < k) ++i;
    if (i == a.end() || i->first != k || i->second < v) return false;
    ++i;
  }
  return true;
}

causal::order map_compare(const map_clock& a, const map_clock& b) {
  bool a_ahead = false, b_ahead = false;
  auto i = a.begin();
  auto j = b.begin();
  while (i != a.end() && j != b.end()) {
    if (i->first < j->first) {
      a_ahead = true;
      ++i;
    } else if (j->first < i->first) {
      b_ahead = true;
      ++j;
    } else {
      a_ahead |= i->second > j->second;
      b_ahead |= j->second > i->second;
      ++i;
      ++j;
    }
  }
  a_ahead |= i != a.end();
  b_ahead |= j != b.end();
  if (!a_ahead && !b_ahead) return causal::order::equal;
  if (!b_ahead) return causal::order::after;
  if (!a_ahead) return causal::order::before;
  return causal::order::concurrent;
}

void map_insert_or_raise(map_clock& m, std::uint64_t k, std::uint64_t e) {
  if (e == 0) return;
  const auto [it, inserted] = m.try_emplace(k, e);
  if (!inserted && it->second < e) it->second = e;
}

//===-- inputs --------------------------------------------------------------===//

// Read once at run time, so the compiler cannot know any axis or epoch.
volatile std::uint64_t ordinal_seed = 1000;
volatile std::uint64_t epoch_seed = 5000;

/// The axis of ordinal `ordinal_seed + j` on machine 0's queue domain.
causal::axis axis_at(std::uint64_t j) {
  return causal::make_axis(0, 0, causal::domain::queue, ordinal_seed + j).value();
}

template <class F>
F make_frontier(const std::vector<causal::frontier_entry>& entries) {
  return F::from_entries(entries).value();
}

map_clock make_map(const std::vector<causal::frontier_entry>& entries) {
  map_clock m;
  for (const causal::frontier_entry& e : entries) map_insert_or_raise(m, e.axis.raw(), e.epoch);
  return m;
}

template <class F>
map_clock to_map(const F& f) {
  map_clock m;
  for (const causal::frontier_entry e : f) m.emplace(e.axis.raw(), e.epoch);
  return m;
}

enum class shape { same, diff };

/// The n entries of a and b for case `s` (see the header comment).
void make_entries(shape s, std::size_t n, std::vector<causal::frontier_entry>& a,
                  std::vector<causal::frontier_entry>& b) {
  const std::uint64_t e0 = epoch_seed;
  for (std::size_t k = 0; k < n; ++k) {
    const std::uint64_t base = e0 + 10 * k;
    if (s == shape::same) {
      // Same axes (every other ordinal); a wins on even k, b on odd k, so
      // K = merge(a, b) is strictly ahead of R = b even at n = 1.
      a.push_back({axis_at(2 * k), base + (k % 2 == 0 ? 7 : 0)});
      b.push_back({axis_at(2 * k), base + (k % 2 == 1 ? 7 : 0)});
    } else if (n <= 6) {
      // Disjoint, interleaved: a on even ordinals, b on odd ones.
      a.push_back({axis_at(2 * k), base});
      b.push_back({axis_at(2 * k + 1), base + 3});
    } else {
      // Half-overlapping, interleaved: b shares a's axis for even k and
      // brings a new one (the odd ordinal next to it) for odd k.
      a.push_back({axis_at(2 * k), base + (k % 4 == 0 ? 7 : 0)});
      b.push_back({axis_at(k % 2 == 0 ? 2 * k : 2 * k + 1), base + (k % 4 == 2 ? 7 : 0)});
    }
  }
}

/// Inputs of merge, dominates and compare, for both implementations.
template <class F>
struct pair_case {
  F a, b;        // the merge operands, n entries each
  F k, r;        // K = merge(a, b) covers R = b
  map_clock ma, mb, mk, mr;
  map_clock merged;  // the map's merge(a, b): what every merge must yield
};

template <class F>
std::unique_ptr<pair_case<F>> make_pair_case(shape s, std::size_t n) {
  std::vector<causal::frontier_entry> a, b;
  make_entries(s, n, a, b);
  auto c = std::make_unique<pair_case<F>>();
  c->a = make_frontier<F>(a);
  c->b = make_frontier<F>(b);
  c->ma = make_map(a);
  c->mb = make_map(b);
  c->merged = map_merge_pure(c->ma, c->mb);
  std::vector<causal::frontier_entry> merged_entries;
  for (const auto& [ax, e] : c->merged) merged_entries.push_back({causal::axis{ax}, e});
  c->k = make_frontier<F>(merged_entries);
  c->r = c->b;
  c->mk = c->merged;
  c->mr = c->mb;
  return c;
}

/// Inputs of insert_or_raise: `same` raises a's axes in turn to ever larger
/// epochs; `diff` inserts a's middle axis into a without it.
template <class F>
struct insert_case {
  std::size_t n = 0;
  F raise_start, insert_start;
  map_clock mraise_start, minsert_start;
  std::vector<causal::axis> raise_axes;
  std::uint64_t raise_epoch0 = 0;  // above every epoch of raise_start
  causal::axis insert_axis;
  std::uint64_t insert_epoch = 0;
  map_clock inserted;  // insert_start plus (insert_axis, insert_epoch)
};

template <class F>
std::unique_ptr<insert_case<F>> make_insert_case(std::size_t n) {
  std::vector<causal::frontier_entry> a, b;
  make_entries(shape::same, n, a, b);
  auto c = std::make_unique<insert_case<F>>();
  c->n = n;
  c->raise_start = make_frontier<F>(a);
  c->mraise_start = make_map(a);
  for (const causal::frontier_entry& e : a) c->raise_axes.push_back(e.axis);
  c->raise_epoch0 = epoch_seed + 10 * n + 100;
  std::vector<causal::frontier_entry> start = a;
  const causal::frontier_entry middle = start[n / 2];
  start.erase(start.begin() + static_cast<std::ptrdiff_t>(n / 2));
  c->insert_start = make_frontier<F>(start);
  c->minsert_start = make_map(start);
  c->insert_axis = middle.axis;
  c->insert_epoch = middle.epoch;
  c->inserted = make_map(a);
  return c;
}

/// Reports a failed check; returns `cond`.
bool expect(bool cond, const std::string& label, const char* what) {
  if (!cond) std::fprintf(stderr, "frontier_bench: check failed for %s: %s\n", label.c_str(), what);
  return cond;
}

/// Checks, once before timing, that ours and the map agree on every op.
template <class F>
bool check_pair_case(const pair_case<F>& c, const std::string& label) {
  bool ok = true;
  F t = c.a;
  t.merge(c.b);
  ok &= expect(t.invariants_hold() && !t.tainted(), label, "merge keeps the invariants, no overflow");
  ok &= expect(to_map(t) == c.merged, label, "in-place merge equals the map's merge");
  ok &= expect(to_map(causal::merge(c.a, c.b)) == c.merged, label, "pure merge equals the map's");
  ok &= expect(to_map(c.k) == c.mk && to_map(c.r) == c.mr, label, "K and R match their maps");
  ok &= expect(causal::dominates(c.k, c.r) && map_dominates(c.mk, c.mr), label,
               "K dominates R in both");
  ok &= expect(causal::dominates(c.a, c.b) == map_dominates(c.ma, c.mb) &&
                   causal::dominates(c.b, c.a) == map_dominates(c.mb, c.ma),
               label, "dominates(a, b) and dominates(b, a) agree");
  ok &= expect(causal::compare(c.k, c.r) == causal::order::after &&
                   map_compare(c.mk, c.mr) == causal::order::after,
               label, "compare(K, R) is after in both");
  ok &= expect(causal::compare(c.a, c.b) == map_compare(c.ma, c.mb), label,
               "compare(a, b) agrees");
  return ok;
}

template <class F>
bool check_insert_case(const insert_case<F>& c, const std::string& label) {
  bool ok = true;
  F ins = c.insert_start;
  ins.insert_or_raise(c.insert_axis, c.insert_epoch);
  map_clock mins = c.minsert_start;
  map_insert_or_raise(mins, c.insert_axis.raw(), c.insert_epoch);
  ok &= expect(to_map(ins) == c.inserted && mins == c.inserted, label,
               "inserting the absent axis agrees");
  ok &= expect(c.insert_start.size() + 1 == c.n && !c.insert_start.contains(c.insert_axis),
               label, "the inserted axis is really absent");
  F raised = c.raise_start;
  map_clock mraised = c.mraise_start;
  std::uint64_t e = c.raise_epoch0;
  for (std::size_t i = 0; i < 3 * c.n; ++i) {
    const causal::axis ax = c.raise_axes[i % c.n];
    raised.insert_or_raise(ax, ++e);
    map_insert_or_raise(mraised, ax.raw(), e);
  }
  ok &= expect(to_map(raised) == mraised && raised.size() == c.n, label,
               "raising existing axes agrees");
  return ok;
}

//===-- benchmark bodies ----------------------------------------------------===//

/// Makes `obj` visible to the outside world: the compiler must finish every
/// write to it, and (memory clobber) must assume all memory, inputs
/// included, may have changed before the next iteration.
template <class T>
void escape(T& obj) {
  T* p = &obj;
  benchmark::DoNotOptimize(p);
}

template <class F>
void bm_merge_ours(benchmark::State& st, const pair_case<F>* c) {
  F t;
  for (auto _ : st) {
    t = c->a;
    t.merge(c->b);
    escape(t);
  }
  if (to_map(t) != c->merged) st.SkipWithError("ours: merge result differs from the map's");
}

template <class F>
void bm_merge_map(benchmark::State& st, const pair_case<F>* c) {
  map_clock t;
  for (auto _ : st) {
    t = c->ma;
    map_merge(t, c->mb);
    escape(t);
  }
  if (t != c->merged) st.SkipWithError("map: merge result differs");
}

template <class F>
void bm_merge_restore_ours(benchmark::State& st, const pair_case<F>* c) {
  F t;
  for (auto _ : st) {
    t = c->a;
    escape(t);
  }
}

template <class F>
void bm_merge_restore_map(benchmark::State& st, const pair_case<F>* c) {
  // Start from the merged map so the first restore shrinks it like the
  // ones in bm_merge_map do; afterwards the nodes are simply reused.
  map_clock t = c->merged;
  for (auto _ : st) {
    t = c->ma;
    escape(t);
  }
}

template <class F>
void bm_merge_pure_ours(benchmark::State& st, const pair_case<F>* c) {
  F r;
  for (auto _ : st) {
    r = causal::merge(c->a, c->b);
    escape(r);
  }
  if (to_map(r) != c->merged) st.SkipWithError("ours: pure merge result differs from the map's");
}

template <class F>
void bm_merge_pure_map(benchmark::State& st, const pair_case<F>* c) {
  for (auto _ : st) {
    map_clock r = map_merge_pure(c->ma, c->mb);
    escape(r);
  }
  if (map_merge_pure(c->ma, c->mb) != c->merged) st.SkipWithError("map: pure merge differs");
}

template <class F>
void bm_dominates_ours(benchmark::State& st, const pair_case<F>* c) {
  bool r = false;
  for (auto _ : st) {
    r = causal::dominates(c->k, c->r);
    benchmark::DoNotOptimize(r);
  }
  if (!r) st.SkipWithError("ours: dominates(K, R) was false");
}

template <class F>
void bm_dominates_map(benchmark::State& st, const pair_case<F>* c) {
  bool r = false;
  for (auto _ : st) {
    r = map_dominates(c->mk, c->mr);
    benchmark::DoNotOptimize(r);
  }
  if (!r) st.SkipWithError("map: dominates(K, R) was false");
}

template <class F>
void bm_compare_ours(benchmark::State& st, const pair_case<F>* c) {
  causal::order r = causal::order::equal;
  for (auto _ : st) {
    r = causal::compare(c->k, c->r);
    benchmark::DoNotOptimize(r);
  }
  if (r != causal::order::after) st.SkipWithError("ours: compare(K, R) was not after");
}

template <class F>
void bm_compare_map(benchmark::State& st, const pair_case<F>* c) {
  causal::order r = causal::order::equal;
  for (auto _ : st) {
    r = map_compare(c->mk, c->mr);
    benchmark::DoNotOptimize(r);
  }
  if (r != causal::order::after) st.SkipWithError("map: compare(K, R) was not after");
}

template <class F>
void bm_raise_ours(benchmark::State& st, const insert_case<F>* c) {
  F t = c->raise_start;
  std::uint64_t e = c->raise_epoch0;
  std::size_t i = 0;
  causal::axis last{};
  for (auto _ : st) {
    last = c->raise_axes[i];
    t.insert_or_raise(last, ++e);
    if (++i == c->n) i = 0;
    escape(t);
  }
  if (t.size() != c->n || t.epoch_of(last) != e) st.SkipWithError("ours: raise went wrong");
}

template <class F>
void bm_raise_map(benchmark::State& st, const insert_case<F>* c) {
  map_clock t = c->mraise_start;
  std::uint64_t e = c->raise_epoch0;
  std::size_t i = 0;
  std::uint64_t last = 0;
  for (auto _ : st) {
    last = c->raise_axes[i].raw();
    map_insert_or_raise(t, last, ++e);
    if (++i == c->n) i = 0;
    escape(t);
  }
  if (t.size() != c->n || t[last] != e) st.SkipWithError("map: raise went wrong");
}

template <class F>
void bm_insert_ours(benchmark::State& st, const insert_case<F>* c) {
  F t;
  for (auto _ : st) {
    t = c->insert_start;
    t.insert_or_raise(c->insert_axis, c->insert_epoch);
    escape(t);
  }
  if (to_map(t) != c->inserted) st.SkipWithError("ours: insert result differs from the map's");
}

template <class F>
void bm_insert_map(benchmark::State& st, const insert_case<F>* c) {
  map_clock t;
  for (auto _ : st) {
    t = c->minsert_start;
    map_insert_or_raise(t, c->insert_axis.raw(), c->insert_epoch);
    escape(t);
  }
  if (t != c->inserted) st.SkipWithError("map: insert result differs");
}

template <class F>
void bm_insert_restore_ours(benchmark::State& st, const insert_case<F>* c) {
  F t;
  for (auto _ : st) {
    t = c->insert_start;
    escape(t);
  }
}

template <class F>
void bm_insert_restore_map(benchmark::State& st, const insert_case<F>* c) {
  map_clock t = c->inserted;
  for (auto _ : st) {
    t = c->minsert_start;
    escape(t);
  }
}

//===-- registration --------------------------------------------------------===//

double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }
double max_of(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }

/// Owns the cases for the whole run and collects the check verdict.
struct case_store {
  std::vector<std::shared_ptr<const void>> owned;
  bool ok = true;
};

/// Registers `<op>/<case>/<n>/ours` and `.../map` back to back.
template <class Case, class Ours, class Map>
void register_pair(const std::string& op, const char* case_name, std::size_t n, const Case* c,
                   Ours ours, Map map) {
  const std::string stem = op + "/" + case_name + "/" + std::to_string(n) + "/";
  const std::string ours_name = stem + "ours";
  const std::string map_name = stem + "map";
  for (benchmark::internal::Benchmark* b :
       {benchmark::RegisterBenchmark(ours_name.c_str(), ours, c),
        benchmark::RegisterBenchmark(map_name.c_str(), map, c)}) {
    b->Unit(benchmark::kNanosecond)
        ->ComputeStatistics("min", min_of)
        ->ComputeStatistics("max", max_of);
  }
}

template <class F>
void register_pair_case(case_store& store, shape s, std::size_t n) {
  const char* case_name = s == shape::same ? "same" : "diff";
  std::shared_ptr<pair_case<F>> c = make_pair_case<F>(s, n);
  store.ok &= check_pair_case(*c, std::string(case_name) + "/" + std::to_string(n));
  const pair_case<F>* p = c.get();
  store.owned.push_back(c);
  register_pair("merge", case_name, n, p, bm_merge_ours<F>, bm_merge_map<F>);
  register_pair("merge_restore", case_name, n, p, bm_merge_restore_ours<F>,
                bm_merge_restore_map<F>);
  register_pair("merge_pure", case_name, n, p, bm_merge_pure_ours<F>, bm_merge_pure_map<F>);
  register_pair("dominates", case_name, n, p, bm_dominates_ours<F>, bm_dominates_map<F>);
  register_pair("compare", case_name, n, p, bm_compare_ours<F>, bm_compare_map<F>);
}

template <class F>
void register_insert_case(case_store& store, std::size_t n) {
  std::shared_ptr<insert_case<F>> c = make_insert_case<F>(n);
  store.ok &= check_insert_case(*c, "insert/" + std::to_string(n));
  const insert_case<F>* p = c.get();
  store.owned.push_back(c);
  register_pair("insert_or_raise", "same", n, p, bm_raise_ours<F>, bm_raise_map<F>);
  register_pair("insert_or_raise", "diff", n, p, bm_insert_ours<F>, bm_insert_map<F>);
  register_pair("insert_restore", "diff", n, p, bm_insert_restore_ours<F>,
                bm_insert_restore_map<F>);
}

/// Registers every op at `n` entries. `Same` holds n entries (the `same`
/// cases and both insert_or_raise cases, whose result has n entries);
/// `Diff` holds the union of the different-axes case (2n for n <= 6, 1.5n
/// beyond).
template <class Same, class Diff>
void register_size(case_store& store, std::size_t n) {
  register_pair_case<Same>(store, shape::same, n);
  register_pair_case<Diff>(store, shape::diff, n);
  register_insert_case<Same>(store, n);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  case_store store;
  register_size<causal::frontier, causal::frontier>(store, 1);
  register_size<causal::frontier, causal::frontier>(store, 4);
  register_size<causal::frontier, causal::frontier>(store, 6);
  register_size<causal::frontier, causal::basic_frontier<32>>(store, 12);
  register_size<causal::basic_frontier<16>, causal::basic_frontier<32>>(store, 16);
  if (!store.ok) {
    std::fprintf(stderr, "frontier_bench: input checks failed; not timing anything\n");
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
