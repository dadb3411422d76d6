// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// checker: the synchronization hazard checker of docs/hazard_checker.md. It records
// a command stream (<causal/check/command_model.hpp>) and computes the
// execution dependency orders `<` and `<_region` of Vulkan's
// synchronization chapter (execution and memory dependencies) with vector clocks, then
// reports every hazard of its memory rules (availability and visibility:
// flush before, invalidate after) and every racing event operation. The
// verdict is Vulkan's; a rule stricter than Vulkan's (invalidating memory
// whose writes are not flushed yet) is a named warning, reported apart
// and only when asked for (checker_options::warnings, is_warning).
//
// The clocks. The rules define `<` through explicit edges, O(n^2) of them.
// Every edge that leaves a command ends at a synchronization structure (a
// barrier's source stage, a subpass's DST stage, a subpass dependency, an
// event set, a semaphore signal) that is fed by *every* earlier command of
// one scope: the queue, or the current subpass. So the set of nodes that
// precede any node, cut down to one scope and one stage, is always a prefix
// of that scope in command order, and one number per (scope, stage) says
// which prefix. A clock is therefore a sparse vector of entries, one per
// scope, each holding 14 per-stage positions for action stages (`act`), 14
// for sync commands' DST stages (`sall`: consumed by later sync commands,
// `sfwd`: consumed by later action commands), `every` (everything up to a
// position: semaphore signals; for an event scope, the event chain) and a
// bit per stage for a subpass's SRC nodes (`spsrc`, which answers "does this
// subpass dependency precede me"). Scopes: per queue "all commands",
// per queue "commands outside render passes", each subpass instance, each
// render pass end, each (queue, event) chain.
// This is causal's frontier idea (one epoch per timeline, join = max) with
// the timeline being a (scope, stage) pair; causal::basic_frontier is not
// used because a clock holds 43 numbers per scope and must never evict (an
// evicted entry would turn a real order into a reported race).
//
// Both orders are kept as clocks, `<` (relation 0) and `<_region`
// (relation 1), but the second only once the stream has a by-region
// barrier inside a render pass or a by-region subpass dependency: until
// then the two are equal, relation 1 reads relation 0's clocks, and
// split_regions() copies them at the first such command.
//
// Cost: per action command O(1) amortised (14 stage bumps; a clock join only
// after a sync command changed what flows in); per sync command O(clock
// size x stages). Clock size is the number of scopes in a node's past:
// queues and events, plus every render-pass instance whose subpass nodes
// are still reachable only through its dependencies. Without render passes
// clocks stay small and the whole check is near-linear in the stream
// (bench/check_bench.cpp, bench/RESULTS.md). With history, a render pass
// per frame makes clocks, and the cost per command, grow with the number of
// frames (exact answers about any two commands need that state: those
// passes' stages are reachable through their dependencies but through no
// queue-wide barrier). Without history a closed pass is forgotten once no
// live record of it remains (its scopes leave the clocks later clocks are
// built from), so clocks stay small when a frame's accesses are retired by
// the next frame's. A closed pass whose only live records are its draws'
// accesses (a read of a buffer nothing writes again) is collapsed instead:
// its entry leaves each clock whose queue entry covers it (a later
// queue-wide barrier ordered the pass), since only "did this access
// happen before" is asked about it and the queue entry answers that. Only
// a pass whose barriers or dependencies still own live records, or that
// nothing queue-wide has ordered yet, stays in the clocks. Hazards are
// checked per resource against the records that can still race: a write retires the earlier
// accesses, transitions and invalidates it covers, follows and has nothing
// to report against (retire(); a read retires earlier reads it covers and
// follows), and flushes and invalidates go once no live write is older
// than them. So a resource kept synchronised costs O(1) records and checks
// per access, and records are bounded by the live state; a resource
// touched k times with nothing ordering the touches still costs O(k^2)
// (each pair is a hazard). Visibility is searched in record order from the write and stops at the
// first flush/invalidate pair that works. A GLOBAL invalidate (every
// semaphore wait, every global barrier) is checked against every earlier
// write only for the dirty-invalidate warning (checker_options::warnings);
// by default it costs nothing.
//
// Stage masks: every execution edge uses a mask's execution scope (a
// source mask plus its logically earlier stages, a destination mask plus
// its logically later ones: source_scope_stages / destination_scope_stages
// of <causal/check/command_model.hpp>), every flush and invalidate its
// access scope (only the stages it names), as Vulkan's "pipeline stage
// order" rules say. So a barrier COMPUTE_SHADER -> TRANSFER orders an
// earlier indirect dispatch's DRAW_INDIRECT read before a later copy, and a
// barrier whose destination is VERTEX_SHADER blocks a later draw's fragment
// shader but makes memory visible only to its vertex shader.
//
// The model, where the rules are silent or loose (each choice is mirrored by
// <causal/check/reference.hpp>, which the tests compare against):
//   - Semaphores: a signal follows every node of every earlier command of
//     its queue and flushes all writes (GLOBAL); a wait follows the first
//     earlier signal reaching its value and invalidates GLOBAL for all
//     accesses in its dst stages; it then acts like vkCmdWaitEvents.
//   - Events: set/reset's first scope is vkCmdSetEvent's; event operations
//     on one event in one queue are chained in command order (each set or
//     reset precedes every later set/reset/wait of that event). This covers
//     the rule that a set precedes the waits on it, and keeps event reuse
//     (set, wait, reset, set ...) from being reported as a race, which the
//     literal rules would do for every reuse. Events are not allowed inside
//     render passes. A wait_events must find each of its events set (the
//     latest set/reset of it in its queue is a set_event) and its src
//     stages equal to the OR of those set_events' stage masks; otherwise
//     append refuses it (errc::failed_precondition, errc::invalid_argument):
//     both are Vulkan validation errors, not hazards.
//   - BY_REGION: in `<` a by-region barrier inside a render pass keeps its
//     internal edges but adds none to other commands; a by-region subpass
//     dependency adds none. Outside a render pass BY_REGION changes nothing
//     (Vulkan: it affects only framebuffer-space stages of a render pass).
//     A pair of accesses uses `<_region` when both are framebuffer-local in
//     the same render pass instance (an attachment access at a
//     framebuffer-space stage: framebuffer_local; a fragment shader's
//     storage access is not, since another region may touch it;
//     or the invalidate of a by-region barrier/dependency); `<` otherwise.
//   - Layout transitions write the image between the barrier's flushes and
//     invalidates: earlier writes need a flush (no invalidate), later
//     accesses need an invalidate after the transition; the transition's
//     own writes are flushed implicitly.
//   - Accesses of one command at one stage are coherent with each other
//     (the rules leave a stage's self-coherence open); at different stages
//     they are unordered.
//   - GLOBAL invalidates take no part in the write/invalidate race rule
//     (they still take part in the dirty-invalidate rule): literally they
//     would race every unordered write anywhere, e.g. the color writes of
//     the very subpass a dependency's invalidate enters. Buffer and image
//     invalidates do.
//   - Event races use "op(a) < op(b)", op being a set/reset's SRC node and a
//     wait's SRC node, on four pairs: set/set, set/wait, set/reset and
//     reset/wait.
//   - Free: free_resource(R) drops R's records; nothing after it is
//     compared with an access or barrier item of R from before it (a later
//     use of R is a new resource). The device being done with R is not
//     checked (a free names no fence: nothing says when the host did it).
//   - The host: one timeline (scope) in stream order, its commands ordered
//     and coherent with one another (host_k_: what precedes the next
//     one). A host_wait joins the first signal reaching its value and
//     invalidates nothing; a host access is checked from host_k_. A
//     submit after host commands is recorded as a barrier from HOST to
//     ALL_COMMANDS on its queue whose K also holds host_k_, flushing
//     HOST_WRITE and invalidating every access (GLOBAL): Vulkan's host write
//     ordering guarantee. Device writes become visible to the host only by
//     a barrier with dst HOST and HOST_READ ordered before the host's read
//     (through a signal and a host_wait).
//   - Retirement: a record p is retired by the first later command with a
//     write or transition w covering p's range, compared with p in `<` (not
//     `<_region`), with no hazard against p (a read p also by a covering
//     read it precedes); p is not compared with commands after w. Any
//     later x racing p races w, and x ordered after w with visibility sees
//     p's data too, so only the pair named changes; the one verdict it
//     drops is for x framebuffer-local with w in `<_region` only, where x
//     follows p in every region (docs/hazard_checker.md).
//
// Thread safety: one checker per thread; const members may be called
//                concurrently.
// Memory order:  not applicable.
// Blocking/allocation: never blocks; allocates (clocks, records, report).
// Size:          with history, O(commands + sync commands x stages x clock
//                size) for the clocks (happens_before answers for every
//                command); without, ~100 bytes per command plus the live
//                state. Memory records: O(live accesses) (live_records()).
// Configuration: checker_options (deduplicate alike hazards, cap how many
//                are kept; by default every hazard is kept; the stricter
//                rules' warnings; history: keep the clocks happens_before
//                needs, on by default, off for long streams).
// See also:      <causal/check/reference.hpp>, <causal/check/stream_text.hpp>,
//                <causal/check/dot.hpp>, docs/hazard_checker.md.
#pragma once

#include <causal/check/command_model.hpp>
#include <causal/config.hpp>
#include <causal/result.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <unordered_map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

CAUSAL_BEGIN_NAMESPACE
namespace check {

//===-- points, relations, hazards ------------------------------------------===//

/// Which relation a query asks about: Vulkan's execution dependency order `<`
/// or its framebuffer-local form `<_region`.
enum class relation : std::uint8_t { strict = 0, by_region = 1 };

/// A node of the dependency graph that can be queried: (action, stage), or
/// the SRC / DST node of a sync command (barrier, wait_events, semaphore
/// wait; set/reset/signal have only SRC).
struct point {
  enum class part : std::uint8_t { stage, src, dst };
  std::uint32_t command = 0;
  part where = part::stage;
  check::stage stage = stage::top_of_pipe;
  friend constexpr bool operator==(const point&, const point&) noexcept = default;
};

[[nodiscard]] constexpr point at(std::uint32_t command, stage s) noexcept {
  return {command, point::part::stage, s};
}
[[nodiscard]] constexpr point src_of(std::uint32_t command) noexcept {
  return {command, point::part::src, stage::top_of_pipe};
}
[[nodiscard]] constexpr point dst_of(std::uint32_t command) noexcept {
  return {command, point::part::dst, stage::top_of_pipe};
}

enum class hazard_kind : std::uint8_t {
  read_after_write_race,      ///< write and read with no execution dependency
  write_after_write_race,     ///< two writes with no execution dependency
  write_after_read_race,      ///< read then write with no execution dependency
  read_without_visibility,    ///< write < read, but no flush + invalidate covering it
  write_without_visibility,   ///< write < write (or transition), no flush (+ invalidate)
  dirty_invalidate,           ///< write < invalidate with no flush of the write between (a warning: is_warning)
  write_invalidate_race,      ///< write and invalidate with no execution dependency
  event_race,                 ///< set/wait/reset of one event, unordered
};

/// True for the findings of rules stricter than Vulkan's, which are
/// warnings, not hazards: `dirty_invalidate` (Vulkan allows invalidating
/// memory with unflushed writes; what matters is that a later read is
/// covered by a flush and an invalidate after the write, which
/// read_without_visibility checks).
[[nodiscard]] constexpr bool is_warning(hazard_kind k) noexcept { return k == hazard_kind::dirty_invalidate; }

[[nodiscard]] constexpr std::string_view to_string(hazard_kind k) noexcept {
  switch (k) {
    case hazard_kind::read_after_write_race: return "read-after-write race";
    case hazard_kind::write_after_write_race: return "write-after-write race";
    case hazard_kind::write_after_read_race: return "write-after-read race";
    case hazard_kind::read_without_visibility: return "read without flush+invalidate";
    case hazard_kind::write_without_visibility: return "write without flush+invalidate";
    case hazard_kind::dirty_invalidate: return "invalidate of dirty memory";
    case hazard_kind::write_invalidate_race: return "write/invalidate race";
    case hazard_kind::event_race: return "event race";
  }
  return "unknown";
}

/// One hazard: the earlier (`first`) and later (`second`) command in stream
/// order, the stages and access types involved on each side (a transition
/// has none; an invalidate has its dst stages and access mask), the
/// overlapping range, and for event races the event.
struct hazard {
  hazard_kind kind = hazard_kind::read_after_write_race;
  std::uint32_t first = 0;
  std::uint32_t second = 0;
  stage_set first_stages = 0;
  stage_set second_stages = 0;
  access_mask first_access = 0;
  access_mask second_access = 0;
  memory_range range{};
  std::uint32_t event = 0;
  friend constexpr bool operator==(const hazard&, const hazard&) noexcept = default;
  friend constexpr bool operator<(const hazard& a, const hazard& b) noexcept {
    auto key = [](const hazard& h) {
      return std::array<std::uint64_t, 13>{h.first, h.second, static_cast<std::uint64_t>(h.kind),
                                           h.first_stages, h.second_stages, h.first_access,
                                           h.second_access, h.range.resource, h.range.x0,
                                           h.range.x1, h.range.y0, h.range.y1, h.event};
    };
    return key(a) < key(b);
  }
};

//===-- the clock -----------------------------------------------------------===//

namespace detail {

struct clock_entry {
  // Which of the three position arrays may be non-zero: a join skips the
  // others (an entry of a subpass holds spsrc bits only, one of the
  // queue's "outside render passes" scope only sall/sfwd).
  enum : std::uint8_t { has_act = 1, has_sall = 2, has_sfwd = 4 };
  std::uint32_t scope = 0;
  std::uint32_t every = 0;
  stage_set spsrc = 0;
  std::uint8_t arrays = 0;
  std::array<std::uint32_t, stage_count> act{};
  std::array<std::uint32_t, stage_count> sall{};
  std::array<std::uint32_t, stage_count> sfwd{};
};

/// A sparse vector clock: entries sorted by scope.
class vclock {
 public:
  [[nodiscard]] const clock_entry* find(std::uint32_t scope) const noexcept {
    auto it = std::lower_bound(entries_.begin(), entries_.end(), scope,
                               [](const clock_entry& e, std::uint32_t s) { return e.scope < s; });
    return (it != entries_.end() && it->scope == scope) ? &*it : nullptr;
  }
  clock_entry& at(std::uint32_t scope) {
    auto it = std::lower_bound(entries_.begin(), entries_.end(), scope,
                               [](const clock_entry& e, std::uint32_t s) { return e.scope < s; });
    if (it != entries_.end() && it->scope == scope) return *it;
    clock_entry e;
    e.scope = scope;
    return *entries_.insert(it, e);
  }
  void join(const vclock& o) {
    if (o.entries_.empty() || &o == this) return;
    if (entries_.empty()) {
      entries_ = o.entries_;  // reuses this clock's capacity
      return;
    }
    // Merged in place from the back, no scratch vector: the clocks of one
    // queue mostly share their scopes, so this rarely even grows.
    std::size_t fresh = 0;
    {
      std::size_t i = 0;
      for (const clock_entry& f : o.entries_) {
        while (i < entries_.size() && entries_[i].scope < f.scope) ++i;
        if (i == entries_.size() || entries_[i].scope != f.scope) ++fresh;
      }
    }
    if (fresh == 0) {
      // Every scope of `o` is already here (the common case): raise in
      // place, copying nothing.
      std::size_t i = 0;
      for (const clock_entry& f : o.entries_) {
        while (entries_[i].scope < f.scope) ++i;
        max_into(entries_[i], f);
      }
      return;
    }
    std::size_t i = entries_.size(), j = o.entries_.size();
    entries_.resize(entries_.size() + fresh);
    std::size_t k = entries_.size();
    while (j > 0) {
      const clock_entry& f = o.entries_[j - 1];
      if (i > 0 && entries_[i - 1].scope > f.scope) {
        entries_[--k] = entries_[--i];
      } else if (i > 0 && entries_[i - 1].scope == f.scope) {
        clock_entry& e = entries_[--k];
        e = entries_[--i];
        max_into(e, f);
        --j;
      } else {
        entries_[--k] = f;
        --j;
      }
    }
  }
  static void max_into(clock_entry& e, const clock_entry& f) noexcept {
    e.every = std::max(e.every, f.every);
    e.spsrc = static_cast<stage_set>(e.spsrc | f.spsrc);
    e.arrays = static_cast<std::uint8_t>(e.arrays | f.arrays);
    if ((f.arrays & clock_entry::has_act) != 0) max_positions(e.act, f.act);
    if ((f.arrays & clock_entry::has_sall) != 0) max_positions(e.sall, f.sall);
    if ((f.arrays & clock_entry::has_sfwd) != 0) max_positions(e.sfwd, f.sfwd);
  }
  // Element-wise max, four lanes at a time where the compiler has vector
  // types (the joins are most of the checker's time, and -O2 leaves this
  // loop scalar).
  static void max_positions(std::array<std::uint32_t, stage_count>& e,
                            const std::array<std::uint32_t, stage_count>& f) noexcept {
    std::size_t s = 0;
#if defined(__GNUC__)
    using lanes = std::uint32_t __attribute__((vector_size(16)));
    for (; s + 4 <= stage_count; s += 4) {
      lanes a, b;
      std::memcpy(&a, e.data() + s, sizeof a);
      std::memcpy(&b, f.data() + s, sizeof b);
      const lanes take_b = reinterpret_cast<lanes>(b > a);  // all ones where b is larger
      a = (a & ~take_b) | (b & take_b);
      std::memcpy(e.data() + s, &a, sizeof a);
    }
#endif
    for (; s < stage_count; ++s) e[s] = std::max(e[s], f[s]);
  }
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
  [[nodiscard]] bool empty() const noexcept { return entries_.empty(); }
  void clear() noexcept { entries_.clear(); }  // keeps the capacity
  void swap(vclock& o) noexcept { entries_.swap(o.entries_); }
  template <class Pred>
  void erase_if(Pred&& dead) {
    std::erase_if(entries_, [&](const clock_entry& e) { return dead(e.scope); });
  }
  template <class Pred>
  [[nodiscard]] bool any_scope(Pred&& pred) const {
    return std::any_of(entries_.begin(), entries_.end(), [&](const clock_entry& e) { return pred(e.scope); });
  }
  /// Drops each entry whose act positions its queue's "all commands"
  /// entry in this clock already covers. `qall_of(scope)` names that
  /// queue's scope for an entry that may go, or returns `keep`; it must
  /// be smaller than the entry's own scope (a queue's scope is made before
  /// any render pass on it), so it is found among the entries kept so far.
  template <class QallOf>
  std::size_t drop_covered(QallOf&& qall_of, std::uint32_t keep) {
    std::size_t w = 0;
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      const std::uint32_t qs = qall_of(entries_[i].scope);
      if (qs == keep || !covered(entries_[i], qs, w)) {
        if (w != i) entries_[w] = entries_[i];
        ++w;
      }
    }
    const std::size_t dropped = entries_.size() - w;
    entries_.resize(w);
    return dropped;
  }

 private:
  bool covered(const clock_entry& e, std::uint32_t qs, std::size_t kept) const noexcept {
    const auto end = entries_.begin() + static_cast<std::ptrdiff_t>(kept);
    const auto it = std::lower_bound(entries_.begin(), end, qs,
                                     [](const clock_entry& x, std::uint32_t s) { return x.scope < s; });
    const clock_entry* q = (it != end && it->scope == qs) ? &*it : nullptr;
    for (std::size_t s = 0; s < e.act.size(); ++s) {
      const std::uint32_t by = q == nullptr ? 0 : std::max(q->act[s], q->every);
      if (e.act[s] > by) return false;
    }
    return true;
  }

  std::vector<clock_entry> entries_;
};

inline void raise(std::uint32_t& slot, std::uint32_t v) noexcept {
  if (slot < v) slot = v;
}

}  // namespace detail

//===-- the checker ---------------------------------------------------------===//

/// How a checker keeps the hazards it finds.
struct checker_options {
  /// Keep one hazard per (kind, memory range or event, pair of command
  /// kinds) and count the others like it (hazard_count): n unsynchronised
  /// writes to one buffer are one report with a count, not n(n-1)/2.
  /// Off by default: every hazard is kept, as the reference reports them.
  bool deduplicate = false;
  /// Most hazards kept (after deduplication); the rest are only counted
  /// (dropped_hazards). 0: no cap.
  std::size_t max_hazards = 0;
  /// Also check the rules stricter than Vulkan's (is_warning) and report
  /// what they find in warnings(), apart from the hazards.
  bool warnings = false;
  /// Keep what happens_before needs to answer about any two commands: the
  /// clocks of every command, and every render pass's scopes in later
  /// clocks. Off, the checker keeps only what checking later commands
  /// needs: no per-command clocks, and a closed render pass whose records
  /// are all retired is forgotten by later clocks, so memory follows the
  /// live state (plus a fixed ~100 bytes per command) and a render pass
  /// per frame no longer makes clocks grow with the frame count;
  /// happens_before and valid then answer false. Hazards are the same.
  bool history = true;
};

/// Records a stream command by command (`append`) and answers order
/// queries and reports hazards. Commands are numbered by append order.
class checker {
 public:
  checker() = default;
  explicit checker(const checker_options& options) : options_(options) {}

  /// Records `c`. On bad input returns an error and records nothing (the
  /// checker stays usable; the command is dropped).
  [[nodiscard]] status append(const command& c);

  /// Checks that the stream ended cleanly (no open render pass).
  [[nodiscard]] status finish() const noexcept {
    for (const auto& q : q_) {
      if (q.in_rp) return error(errc::failed_precondition, "stream ends inside a render pass", q.rp_begin);
    }
    return {};
  }

  /// Does `a` happen before `b` in `rel`? False for invalid points, and
  /// for every point without checker_options::history.
  [[nodiscard]] bool happens_before(point a, point b, relation rel = relation::strict) const;

  /// Is `p` a node this checker can answer about?
  [[nodiscard]] bool valid(point p) const noexcept;

  /// Hazards found so far, in the order they were found (with
  /// checker_options::deduplicate, the first of each kind; see
  /// hazard_count).
  [[nodiscard]] const std::vector<hazard>& hazards() const noexcept { return hazards_; }
  /// How many hazards hazards()[i] stands for: 1, or with deduplication
  /// itself plus the later ones like it.
  [[nodiscard]] std::uint64_t hazard_count(std::size_t i) const noexcept {
    return i < hazard_counts_.size() ? hazard_counts_[i] : 1;
  }
  /// Every hazard found, kept or not.
  [[nodiscard]] std::uint64_t hazards_found() const noexcept { return found_; }
  /// With checker_options::warnings: what the stricter rules found, in the
  /// order found (neither deduplicated nor capped).
  [[nodiscard]] const std::vector<hazard>& warnings() const noexcept { return warnings_; }
  /// Hazards found but not kept because of checker_options::max_hazards.
  [[nodiscard]] std::uint64_t dropped_hazards() const noexcept { return dropped_; }

  [[nodiscard]] std::size_t size() const noexcept { return cmds_.size(); }
  [[nodiscard]] command_kind kind(std::uint32_t c) const noexcept { return cmds_[c].kind; }
  [[nodiscard]] std::uint32_t queue_of(std::uint32_t c) const noexcept { return cmds_[c].queue; }
  /// The largest clock (entries) built so far: a cost indicator.
  [[nodiscard]] std::size_t max_clock_entries() const noexcept { return max_clock_; }
  /// Without history: render pass instances forgotten so far (closed, and
  /// no live record needs their scopes). A cost indicator.
  [[nodiscard]] std::size_t forgotten_render_passes() const noexcept { return dead_count_; }
  /// Without history: clock entries of closed render passes dropped because
  /// their queue's entry in the same clock covered them (a pass whose
  /// accesses stay live is collapsed this way instead of forgotten). A
  /// cost indicator.
  [[nodiscard]] std::size_t collapsed_clock_entries() const noexcept { return collapsed_entries_; }
  /// Memory records (accesses, flushes, transitions, invalidates) still
  /// kept for later checks: bounded by the live state, not the stream's
  /// length, when every resource is synchronised (see retire()).
  [[nodiscard]] std::size_t live_records() const noexcept {
    std::size_t n = global_records_.size();
    for (const auto& [res, list] : by_resource_) n += list.size();
    return n;
  }

 private:
  using vclock = detail::vclock;
  static constexpr std::uint32_t none = 0xffffffffu;
  static constexpr std::size_t TOP = 0;
  static constexpr std::size_t BOTTOM = stage_count - 1;

  struct snapshot {
    std::array<std::uint32_t, stage_count> c{};
  };

  struct relation_state {
    std::vector<vclock> pool;
    std::vector<snapshot> snaps;
  };

  struct queue_state {
    std::uint32_t qall = 0, qout = 0;
    std::uint32_t idx = 0;
    // Per relation: what flows into the next command (In) and the union
    // of every earlier command's nodes with their predecessors (out).
    std::array<std::array<vclock, stage_count>, 2> in{}, out{}, in_s{}, out_s{};
    std::array<vclock, 2> evk{};
    std::array<std::uint32_t, 2> in_snap{none, none}, in_s_snap{none, none};
    std::array<std::uint32_t, 2> joined_q{none, none}, joined_s{none, none};
    // render pass
    bool in_rp = false;
    std::uint32_t rp_begin = 0;  // command number of begin_render_pass
    std::uint32_t rp_instance = 0;
    std::uint32_t subpass = 0;
    std::uint32_t subpass_count = 0;
    std::vector<std::uint32_t> sp_scopes;
    std::uint32_t end_scope = 0;
    // A finished subpass, for the dependencies that leave it: its In and
    // out (moved, not copied) and, if it had an action, In[TOP] as that
    // action saw it (`top`). Its actions' predecessors are not fed into
    // out_s: every clock built from out_s also takes the subpass's and the
    // queue's In, which only grow inside a subpass (the queue's In does
    // not change during a render pass), so dep_clock() adds them instead.
    struct subpass_done {
      std::array<vclock, stage_count> in, out;
      vclock top;
      bool acted = false;
    };
    // The render pass's finished subpasses are the first `sp_done`; the
    // slots after them keep their clocks' capacity for later passes.
    std::array<std::vector<subpass_done>, 2> sp_dst{};
    std::uint32_t sp_done = 0;
    std::array<vclock, 2> acted_top_s{};  // In_s[TOP] at the subpass's latest action
    bool acted_s = false;                 // the current subpass has an action
    std::vector<std::uint32_t> deps;  // dependency ids of the open render pass
    // Per relation, the stages of In (and of the subpass's In) changed
    // since each consumer last took them in: out, out_s and evk join only
    // those (their clocks only grow, so a join of an unchanged one adds
    // nothing).
    enum consumer : std::size_t { in_to_out, in_s_to_out, in_s_top_acted, in_to_evk, in_s_to_evk };
    std::array<std::array<stage_set, 5>, 2> unfed{};
    void changed_in(std::size_t r, std::size_t x) {
      const auto b = static_cast<stage_set>(1u << x);
      for (std::size_t c : {in_to_out, in_to_evk}) unfed[r][c] = static_cast<stage_set>(unfed[r][c] | b);
    }
    void changed_in_s(std::size_t r, std::size_t x) {
      const auto b = static_cast<stage_set>(1u << x);
      for (std::size_t c : {in_s_to_out, in_s_top_acted, in_s_to_evk}) unfed[r][c] = static_cast<stage_set>(unfed[r][c] | b);
    }
  };

  // out[Y] gains In[Y] u In[TOP] and out[BOTTOM] every In[Y], for the
  // stages of `in` changed since `out` last took them (`unfed`, cleared).
  static void feed_changed(std::array<vclock, stage_count>& out, const std::array<vclock, stage_count>& in,
                           stage_set& unfed) {
    if (unfed == 0) return;
    for (std::size_t y = 0; y < stage_count; ++y) {
      if ((unfed >> y & 1u) != 0) {
        out[y].join(in[y]);
        out[BOTTOM].join(in[y]);
      }
      if ((unfed >> TOP & 1u) != 0) out[y].join(in[TOP]);
    }
    unfed = 0;
  }

  struct cmd_info {
    command_kind kind = command_kind::action;
    std::uint32_t queue = 0;
    std::uint32_t idx = 0;
    std::uint32_t local = 0;      // Qout or the subpass scope
    std::uint32_t qall = 0;
    bool in_rp = false;
    std::uint32_t rp_instance = none;
    stage_set dst_set = 0;
    std::uint32_t chain = 0, chain_pos = 0;
    std::array<std::uint32_t, 2> snap_q{none, none}, snap_s{none, none};
    std::array<std::uint32_t, 2> k{none, none};  // clock of the SRC node (sync)
    bool by_region = false;
  };

  // An owner of flushes/invalidates: a sync command or a subpass dependency.
  struct owner {
    bool is_dep = false;
    std::uint32_t command = 0;     // the sync command, or the render-pass end/begin for deps
    std::uint32_t target = 0;      // deps: scope of the dst subpass or render pass end
    stage_set dst_set = 0;         // deps: dst stages
    std::array<std::uint32_t, 2> k{none, none};
    std::uint32_t fb_rp = none;    // render pass instance when framebuffer-local
    bool by_region = false;        // deps: no edges at all in `<`
    std::uint32_t rp = none;       // the render pass instance whose scopes answer for it
    std::uint32_t live = 0;        // records naming it
    bool shares_k = false;         // k names a semaphore signal's clock, not its own
  };

  // A render pass instance: its scopes (contiguous ids) and how many live
  // records still need them (records of its commands, of its barriers and
  // dependencies). Closed and unneeded, without history, it is forgotten.
  // Closed with only its actions' accesses live (`live_sync` 0: no flush,
  // invalidate or transition of its barriers or dependencies), only
  // act_member asks about its scopes; an entry of them that its queue's
  // "all commands" entry covers in the same clock answers nothing that
  // entry does not, and is dropped (`collapsing`: drop_covered_passes()).
  struct rp_life {
    std::uint32_t first_scope = 0, scope_count = 0;
    std::uint32_t live = 0, live_sync = 0;
    std::uint32_t qall = 0;
    bool closed = false;
    bool collapsing = false;
  };

  struct dep_info {
    subpass_dependency d;
    std::uint32_t queue = 0;
    std::uint32_t owner = none;
    // From EXTERNAL: its clock, built from the queue's out when the render
    // pass begins and given up when its subpass is entered.
    std::array<vclock, 2> from_external{};
  };

  struct record {
    enum class type : std::uint8_t { write, read, transition, flush, invalidate } t;
    std::uint32_t seq = 0;
    std::uint32_t command = 0;
    stage st = stage::top_of_pipe;
    access_type acc = access_type::shader_read;
    stage_set stages = 0;
    access_mask accs = 0;
    memory_range mem{};
    std::uint32_t owner = none;
    std::uint32_t fb_rp = none;
    bool retired = false;  // an invalidate kept for visibility, out of race checks (retire())
    std::uint32_t rp = none;  // the render pass instance it pins (rp_life)
  };

  // A view: the predecessor set of one node, as clocks plus "self" facts.
  struct view {
    std::array<const vclock*, 4> c{};
    std::size_t n = 0;
    std::size_t r = 0;
    void add(const vclock* k) {
      if (k != nullptr) c[n++] = k;
    }
  };

  //===-- scope helpers ----------------------------------------------------===//

  std::uint32_t new_scope() { return next_scope_++; }

  std::uint32_t intern(relation_state& rs, const vclock& k) {
    rs.pool.push_back(k);
    max_clock_ = std::max(max_clock_, k.size());
    return static_cast<std::uint32_t>(rs.pool.size() - 1);
  }

  std::uint32_t snapshot_of(std::size_t r, const std::array<vclock, stage_count>& in, std::uint32_t& cached) {
    if (cached != none) return cached;
    if (!options_.history) {
      // Only "has In changed since" is asked (record_action); the views
      // of a command's own accesses read the queue's live clocks.
      cached = next_unkept_snapshot_++;
      return cached;
    }
    snapshot s;
    for (std::size_t i = 0; i < stage_count; ++i) s.c[i] = intern(rs_[r], in[i]);
    rs_[r].snaps.push_back(s);
    cached = static_cast<std::uint32_t>(rs_[r].snaps.size() - 1);
    return cached;
  }

  const vclock& clock_at(std::size_t r, std::uint32_t id) const { return rs_[r].pool[id]; }

  // `<_region` differs from `<` only through a by-region barrier inside a
  // render pass or a by-region subpass dependency. Until the stream has
  // one, relation 1's state would be a copy of relation 0's, so only
  // relation 0 is kept (half the clock work) and relation 1 reads it;
  // split_regions() makes the copy when the first one arrives.
  [[nodiscard]] std::size_t relations() const noexcept { return region_split_ ? 2 : 1; }
  [[nodiscard]] std::size_t kept_relation(std::size_t r) const noexcept { return region_split_ ? r : 0; }
  static bool splits_regions(const command& c, const queue_state& q) {
    if (c.kind == command_kind::pipeline_barrier) return c.by_region && q.in_rp;
    if (c.kind != command_kind::begin_render_pass) return false;
    return std::any_of(c.dependencies.begin(), c.dependencies.end(),
                       [](const subpass_dependency& d) { return d.by_region; });
  }
  void split_regions() {
    region_split_ = true;
    rs_[1] = rs_[0];
    for (queue_state& q : q_) {
      q.in[1] = q.in[0];
      q.out[1] = q.out[0];
      q.in_s[1] = q.in_s[0];
      q.out_s[1] = q.out_s[0];
      q.evk[1] = q.evk[0];
      q.in_snap[1] = q.in_snap[0];
      q.in_s_snap[1] = q.in_s_snap[0];
      q.joined_q[1] = q.joined_q[0];
      q.joined_s[1] = q.joined_s[0];
      for (std::uint32_t di : q.deps) deps_[di].from_external[1] = deps_[di].from_external[0];
      q.sp_dst[1] = q.sp_dst[0];
      q.acted_top_s[1] = q.acted_top_s[0];
      q.unfed[1] = q.unfed[0];
    }
    for (cmd_info& ci : cmds_) {
      ci.snap_q[1] = ci.snap_q[0];
      ci.snap_s[1] = ci.snap_s[0];
      ci.k[1] = ci.k[0];
    }
    for (owner& ow : owners_) ow.k[1] = ow.k[0];
    host_k_[1] = host_k_[0];
    for (auto& [scope, ks] : chain_k_) ks[1] = ks[0];
    for (auto& [sem, list] : signals_) {
      for (auto& sig : list) sig.second[1] = sig.second[0];
    }
  }

  //===-- membership -------------------------------------------------------===//

  static bool any_entry(const view& v, std::uint32_t scope, auto&& pred) {
    for (std::size_t i = 0; i < v.n; ++i) {
      if (const detail::clock_entry* e = v.c[i]->find(scope); e != nullptr && pred(*e)) return true;
    }
    return false;
  }

  bool every_covers(const view& v, const cmd_info& ci) const {
    return any_entry(v, ci.qall, [&](const detail::clock_entry& e) { return e.every >= ci.idx; });
  }

  bool act_member(std::uint32_t a, stage x, const view& v) const {
    const cmd_info& ci = cmds_[a];
    const auto s = static_cast<std::size_t>(x);
    if (s >= stage_count) {
      // A host command: the host's timeline holds only `every` positions.
      return any_entry(v, ci.qall, [&](const detail::clock_entry& e) { return e.every >= ci.idx; });
    }
    if (any_entry(v, ci.qall, [&](const detail::clock_entry& e) { return e.act[s] >= ci.idx || e.every >= ci.idx; })) {
      return true;
    }
    return ci.in_rp && any_entry(v, ci.local, [&](const detail::clock_entry& e) { return e.act[s] >= ci.idx; });
  }

  // Is the core (SRC..DST, flushes, transitions, invalidates) of sync
  // command b in the view?
  bool core_member(std::uint32_t b, const view& v) const {
    const cmd_info& ci = cmds_[b];
    if (every_covers(v, ci)) return true;
    switch (ci.kind) {
      case command_kind::set_event:
      case command_kind::reset_event:
        return any_entry(v, ci.chain, [&](const detail::clock_entry& e) { return e.every >= ci.chain_pos; });
      case command_kind::signal_semaphore:
        return false;
      default: break;
    }
    const stage_set live = static_cast<stage_set>(ci.dst_set | (1u << BOTTOM));
    // In `<` a by-region barrier's DST stages feed no later action: the
    // `sfwd` claims of later barriers in its scope do not cover it.
    const stage_set fwd = (v.r == 0 && ci.by_region) ? stage_set{0} : ci.dst_set;
    auto dst_hit = [&](const detail::clock_entry& e) {
      for (std::size_t s = 0; s < stage_count; ++s) {
        if ((fwd >> s & 1u) != 0 && e.sfwd[s] >= ci.idx) return true;
        if ((live >> s & 1u) != 0 && e.sall[s] >= ci.idx) return true;
      }
      return false;
    };
    auto all_hit = [&](const detail::clock_entry& e) {
      for (std::size_t s = 0; s < stage_count; ++s) {
        if ((live >> s & 1u) != 0 && e.sall[s] >= ci.idx) return true;
      }
      return false;
    };
    if (any_entry(v, ci.qall, all_hit)) return true;
    return any_entry(v, ci.local, dst_hit);
  }

  bool owner_member(std::uint32_t o, const view& v) const {
    const owner& ow = owners_[o];
    if (!ow.is_dep) return core_member(ow.command, v);
    if (ow.by_region && v.r == 0) return false;
    return any_entry(v, ow.target, [&](const detail::clock_entry& e) { return (e.spsrc & ow.dst_set) != 0; });
  }

  // `bottom` holds the union when y is BOTTOM_OF_PIPE (only queries ask
  // about it: no access happens there).
  view action_view(std::size_t r, std::uint32_t c, stage y, vclock* bottom = nullptr) const {
    const cmd_info& ci = cmds_[c];
    view v;
    v.r = r;
    r = kept_relation(r);
    const auto ys = static_cast<std::size_t>(y);
    if (y == stage::bottom_of_pipe) {
      // (c, BOTTOM) follows every (c, X): its predecessors are the union.
      if (bottom != nullptr) {
        *bottom = union_in(r, ci);
        v.add(bottom);
      }
      return v;
    }
    v.add(&clock_at(r, rs_[r].snaps[ci.snap_q[r]].c[ys]));
    v.add(&clock_at(r, rs_[r].snaps[ci.snap_q[r]].c[TOP]));
    if (ci.snap_s[r] != none) {
      v.add(&clock_at(r, rs_[r].snaps[ci.snap_s[r]].c[ys]));
      v.add(&clock_at(r, rs_[r].snaps[ci.snap_s[r]].c[TOP]));
    }
    return v;
  }

  // The view of (c, y) while c is being recorded: the snapshot, or without
  // history the queue's live In clocks, which are the same until c's
  // recording ends.
  view own_view(std::size_t r, std::uint32_t c, stage y) const {
    if (options_.history) return action_view(r, c, y);
    const cmd_info& ci = cmds_[c];
    const queue_state& q = q_[ci.queue];
    const auto ys = static_cast<std::size_t>(y);
    view v;
    v.r = r;
    r = kept_relation(r);
    v.add(&q.in[r][ys]);
    v.add(&q.in[r][TOP]);
    if (ci.in_rp) {
      v.add(&q.in_s[r][ys]);
      v.add(&q.in_s[r][TOP]);
    }
    return v;
  }

  // Built per query, not cached: const members may run concurrently.
  vclock union_in(std::size_t r, const cmd_info& ci) const {
    r = kept_relation(r);
    vclock u;
    for (std::size_t s = 0; s < stage_count; ++s) {
      u.join(clock_at(r, rs_[r].snaps[ci.snap_q[r]].c[s]));
      if (ci.snap_s[r] != none) u.join(clock_at(r, rs_[r].snaps[ci.snap_s[r]].c[s]));
    }
    return u;
  }

  // What precedes the host's next command: its own earlier commands and
  // whatever its waits joined in.
  view host_view(std::size_t r) const {
    view v;
    v.r = r;
    v.add(&host_k_[kept_relation(r)]);
    return v;
  }

  view owner_view(std::size_t r, std::uint32_t o) const {
    view v;
    v.r = r;
    v.add(&clock_at(kept_relation(r), owners_[o].k[kept_relation(r)]));
    return v;
  }

  //===-- recording steps --------------------------------------------------===//

  status validate(const command& c) const;
  // A wait (a queue's or the host's) needs an earlier signal reaching its value.
  status signalled(const command& c, const char* message) const {
    const auto it = signals_.find(c.semaphore);
    if (it == signals_.end() || it->second.empty() || it->second.back().first < c.value) {
      return error(errc::failed_precondition, message, c.value);
    }
    return {};
  }
  status validate_wait_events(const command& c) const;
  void record_action(const command& c, std::uint32_t id);
  void record_sync(const command& c, std::uint32_t id, bool host_submit = false);
  void record_host(const command& c);
  // Records command `id`'s accesses (render pass instance `rp`, or none).
  void record_accesses(const command& c, std::uint32_t id, std::uint32_t rp) {
    for (const memory_access& a : c.accesses) {
      record rec{a.write() ? record::type::write : record::type::read};
      rec.seq = seq_++;
      rec.command = id;
      rec.st = a.stage;
      rec.acc = a.access;
      rec.mem = a.mem;
      rec.fb_rp = framebuffer_local(a) ? rp : none;
      add_record(rec);
    }
  }
  void begin_rp(const command& c, std::uint32_t id);
  void enter_subpass(queue_state& q, std::uint32_t j);
  void finish_subpass(queue_state& q);
  void end_rp(queue_state& q);
  // The clock of dependency `di`'s SRC side (one call per relation for a
  // dependency from EXTERNAL: it gives up the clock built at begin_rp).
  vclock dep_clock(std::size_t r, const queue_state& q, std::uint32_t di);
  // `interned`: k is already kept under these ids (a semaphore signal's
  // clock), so the owner shares it instead of keeping a copy.
  std::uint32_t make_owner(bool is_dep, std::uint32_t command, std::uint32_t target, stage_set dst,
                           const std::array<vclock, 2>& k, std::uint32_t fb_rp, bool by_region = false,
                           const std::array<std::uint32_t, 2>* interned = nullptr);

  void on_in_changed(queue_state& q, std::size_t r, bool subpass) {
    if (subpass) {
      q.in_s_snap[r] = none;
    } else {
      q.in_snap[r] = none;
    }
  }

  // hazards
  void check_access(std::uint32_t c, const memory_access& x, std::uint32_t fb_rp);
  void check_invalidate(const record& inv);
  void check_transition(const record& t);
  void check_events(std::uint32_t c, const command& cmd, const vclock& strict_k);
  void retire();
  void prune_global();
  void free_resource(const command& c);
  // A later write (range `by_mem`, framebuffer-local in `by_fb`, viewed
  // through `v`) after read `p`: a write-after-read race unless ordered;
  // ordered, it may retire p.
  void read_then_write(const record& p, const view& v, hazard& h, const memory_range& by_mem, std::uint32_t by_fb) {
    const bool ordered = act_member(p.command, p.st, v);
    if (!ordered) {
      h.kind = hazard_kind::write_after_read_race;
      h.first_stages = static_cast<stage_set>(1u << static_cast<unsigned>(p.st));
      h.first_access = bit(p.acc);
      report(h);
    }
    note_retirer(p, by_mem, by_fb, ordered);
  }
  // Marks `p` for retirement at the end of this command: the later access
  // or transition `by` (range `by_mem`, framebuffer-local in `by_fb`) was
  // found ordered after it with nothing to report (`clean`).
  void note_retirer(const record& p, const memory_range& by_mem, std::uint32_t by_fb, bool clean) {
    if (!clean || !is_subset(p.mem, by_mem) || pick(p.fb_rp, by_fb) != 0) return;
    if (p.t == record::type::flush || (p.t == record::type::invalidate && p.retired)) return;
    retiring_.emplace_back(p.mem.resource, p.seq);
  }
  bool visible(const record& w, std::size_t r, std::uint32_t target_owner_or_none, const view& target_view,
               std::uint32_t target_cmd, stage target_stage, access_type target_acc,
               bool need_invalidate, const memory_range& ov);
  bool writer_before_owner(const record& w, std::size_t r, std::uint32_t o) const;
  static std::size_t pick(std::uint32_t a_rp, std::uint32_t b_rp) {
    return (a_rp != none && a_rp == b_rp) ? 1 : 0;
  }
  void add_record(record rec) {
    if (rec.owner != none) {
      const owner& ow = owners_[rec.owner];
      rec.rp = ow.is_dep ? ow.rp : cmds_[ow.command].rp_instance;
      ++owners_[rec.owner].live;
    } else {
      rec.rp = cmds_[rec.command].rp_instance;
    }
    if (rec.rp != none) {
      ++rp_life_[rec.rp].live;
      if (rec.owner != none) ++rp_life_[rec.rp].live_sync;
    }
    if (rec.mem.is_global()) {
      global_records_.push_back(rec);
    } else {
      by_resource_[rec.mem.resource].push_back(rec);
      ++resource_records_;
    }
  }
  // A record leaves: what it pinned may be forgotten.
  void drop_record(const record& rec) {
    if (rec.owner != none) release_owner(rec.owner);
    if (rec.rp != none) {
      rp_life& life = rp_life_[rec.rp];
      if (rec.owner != none) --life.live_sync;
      if (--life.live == 0 && life.closed) {
        forget_render_pass(rec.rp);
      } else if (life.closed && life.live_sync == 0) {
        start_collapsing(rec.rp);
      }
    }
  }
  // Without history an owner's clocks are freed once no record names it.
  void release_owner(std::uint32_t o) {
    owner& ow = owners_[o];
    if (ow.live > 0) --ow.live;
    if (ow.live != 0 || options_.history || ow.shares_k) return;
    for (std::size_t r = 0; r < relations(); ++r) rs_[r].pool[ow.k[r]] = vclock{};
  }
  void forget_render_pass(std::uint32_t instance) {
    if (options_.history) return;
    const rp_life& life = rp_life_[instance];
    if (dead_.size() < next_scope_) dead_.resize(next_scope_, 0);
    for (std::uint32_t sc = life.first_scope; sc < life.first_scope + life.scope_count; ++sc) dead_[sc] = 1;
    ++dead_count_;
  }
  void drop_dead_scopes(vclock& k) const {
    k.erase_if([&](std::uint32_t scope) { return scope < dead_.size() && dead_[scope] != 0; });
  }
  void start_collapsing(std::uint32_t instance) {
    rp_life& life = rp_life_[instance];
    if (options_.history || life.collapsing) return;
    life.collapsing = true;
    collapsing_ = true;
    collapse_pending_ = true;
  }
  // For a scope of a collapsing render pass, its queue's "all commands"
  // scope; none for any other scope.
  std::uint32_t collapsing_qall(std::uint32_t scope) const noexcept {
    if (scope >= scope_rp_.size() || scope_rp_[scope] == none) return none;
    const rp_life& life = rp_life_[scope_rp_[scope]];
    return life.collapsing ? life.qall : none;
  }
  // Drops from `k` the entries of collapsing render passes that their
  // queue's entry covers (rp_life); an entry left makes the next sweep
  // (purge_scopes) look again.
  void drop_covered_passes(vclock& k) {
    auto qall_of = [this](std::uint32_t scope) { return collapsing_qall(scope); };
    collapsed_entries_ += k.drop_covered(qall_of, none);
    if (!collapse_pending_) {
      collapse_pending_ = k.any_scope([&](std::uint32_t scope) { return qall_of(scope) != none; });
    }
  }
  // Takes forgotten render passes, and the covered entries of collapsing
  // ones, out of every clock that later clocks are built from (the queues'
  // In/out state, event chains, the host's); a clock built from a
  // semaphore signal's is cleaned as it is built.
  void purge_scopes() {
    const bool dead = dead_count_ != purged_dead_count_;
    if (!dead && !collapse_pending_) return;
    purged_dead_count_ = dead_count_;
    const bool collapse = collapse_pending_;
    collapse_pending_ = false;
    auto clean = [&](vclock& k) {
      if (dead) drop_dead_scopes(k);
      if (collapse) drop_covered_passes(k);
    };
    for (queue_state& q : q_) {
      for (std::size_t r = 0; r < relations(); ++r) {
        for (auto* arr : {&q.in[r], &q.out[r], &q.in_s[r], &q.out_s[r]}) {
          for (vclock& k : *arr) clean(k);
        }
        for (std::uint32_t i = 0; i < q.sp_done && i < q.sp_dst[r].size(); ++i) {
          auto& done = q.sp_dst[r][i];
          for (vclock& k : done.in) clean(k);
          for (vclock& k : done.out) clean(k);
          clean(done.top);
        }
        clean(q.acted_top_s[r]);
        for (std::uint32_t di : q.deps) clean(deps_[di].from_external[r]);
        clean(q.evk[r]);
      }
    }
    for (auto& [scope, ks] : chain_k_) {
      for (vclock& k : ks) clean(k);
    }
    for (vclock& k : host_k_) clean(k);
  }
  // Calls f on every global and per-`resource` record after `seq`, in
  // record order, until f returns true; returns whether it did.
  template <class F>
  bool walk_after(std::uint32_t seq, std::uint32_t resource, F&& f) const {
    auto after = [seq](const std::vector<record>& list) {
      return std::upper_bound(list.begin(), list.end(), seq,
                              [](std::uint32_t s, const record& x) { return s < x.seq; });
    };
    auto g = after(global_records_);
    const auto g_end = global_records_.end();
    std::vector<record>::const_iterator l{}, l_end{};
    if (const auto it = by_resource_.find(resource); it != by_resource_.end()) {
      l = after(it->second);
      l_end = it->second.end();
    }
    while (g != g_end || l != l_end) {
      const bool take_global = l == l_end || (g != g_end && g->seq < l->seq);
      const record& x = take_global ? *g++ : *l++;
      if (f(x)) return true;
    }
    return false;
  }
  template <class F>
  void for_overlapping(const memory_range& m, F&& f) const {
    if (m.is_global()) {
      // In resource order, as reports were before the table was hashed.
      std::vector<std::uint32_t> order;
      order.reserve(by_resource_.size());
      for (const auto& entry : by_resource_) order.push_back(entry.first);
      std::sort(order.begin(), order.end());
      for (std::uint32_t res : order) {
        for (const record& r : by_resource_.find(res)->second) f(r);
      }
      return;
    }
    if (auto it = by_resource_.find(m.resource); it != by_resource_.end()) {
      for (const record& r : it->second) {
        if (overlaps(r.mem, m)) f(r);
      }
    }
  }
  void report(const hazard& h) {
    if (is_warning(h.kind)) {
      if (options_.warnings) warnings_.push_back(h);
      return;
    }
    ++found_;
    if (options_.deduplicate) {
      const hazard_key key{h.kind, h.range.resource, h.range.x0, h.range.x1, h.range.y0, h.range.y1, h.event,
                           cmds_[h.first].kind, cmds_[h.second].kind};
      if (const auto it = seen_.find(key); it != seen_.end()) {
        ++hazard_counts_[it->second];
        return;
      }
      if (options_.max_hazards != 0 && hazards_.size() >= options_.max_hazards) {
        ++dropped_;
        return;
      }
      seen_.emplace(key, hazards_.size());
      hazard_counts_.push_back(1);
      hazards_.push_back(h);
      return;
    }
    if (options_.max_hazards != 0 && hazards_.size() >= options_.max_hazards) {
      ++dropped_;
      return;
    }
    hazards_.push_back(h);
  }

  /// What makes two hazards alike for deduplication.
  using hazard_key = std::tuple<hazard_kind, std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t,
                                std::uint64_t, std::uint32_t, command_kind, command_kind>;

  checker_options options_{};
  std::map<hazard_key, std::size_t> seen_;
  std::vector<std::uint64_t> hazard_counts_;
  std::uint64_t found_ = 0;
  std::uint64_t dropped_ = 0;
  std::vector<hazard> warnings_;

  std::vector<cmd_info> cmds_;
  std::vector<queue_state> q_;
  std::array<relation_state, 2> rs_{};
  std::vector<owner> owners_;
  std::vector<dep_info> deps_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> chain_scope_;   // (queue, event)
  std::map<std::uint32_t, std::uint32_t> chain_len_;                              // scope -> ops
  std::map<std::uint32_t, std::array<vclock, 2>> chain_k_;                        // scope -> K of last op + claim
  std::map<std::uint32_t, std::vector<std::pair<std::uint64_t, std::array<std::uint32_t, 2>>>> signals_;  // sem -> (value, K ids)
  std::map<std::uint32_t, std::vector<std::uint32_t>> event_ops_;                // event -> commands
  struct event_signal {
    bool is_set = false;     // the latest set/reset in this queue was a set
    stage_mask stages = 0;   // and this was its stage mask
  };
  std::map<std::pair<std::uint32_t, std::uint32_t>, event_signal> event_signal_;  // (queue, event)
  // Hashed: a lookup per access (a std::map's tree walk was a third of
  // the time with thousands of buffers).
  std::unordered_map<std::uint32_t, std::vector<record>> by_resource_;
  std::vector<record> global_records_;
  std::size_t global_kept_ = 0;  // global_records_.size() after its last pruning
  std::size_t resource_records_ = 0;  // records in by_resource_
  std::vector<std::uint32_t> visible_scratch_;  // visible(): owners of matching flushes
  std::vector<std::pair<std::uint32_t, std::uint32_t>> retiring_;  // (resource, seq), this command
  std::vector<hazard> hazards_;
  std::uint32_t next_scope_ = 1;
  std::uint32_t next_unkept_snapshot_ = 0;  // without history: change markers, not snapshots
  std::vector<rp_life> rp_life_;
  std::vector<char> dead_;  // by scope: a forgotten render pass's (no history)
  std::size_t dead_count_ = 0, purged_dead_count_ = 0;
  std::vector<std::uint32_t> scope_rp_;  // by scope: its render pass instance, or none
  bool collapsing_ = false;        // a render pass is collapsing (rp_life)
  bool collapse_pending_ = false;  // and its entries may be left in the queues' clocks
  std::size_t collapsed_entries_ = 0;
  // Scratch kept for its capacity (record_sync; enter_subpass and end_rp:
  // the dependencies arriving at a subpass or leaving the pass).
  std::array<vclock, 2> sync_k_scratch_{};
  std::vector<std::uint32_t> arriving_scratch_;
  std::vector<std::array<vclock, 2>> dep_k_scratch_;
  bool region_split_ = false;  // relations()
  // The host's timeline: its scope, how many host commands so far, and what
  // precedes its next command (per relation).
  std::uint32_t host_scope_ = 0;
  std::uint32_t host_pos_ = 0;
  std::array<vclock, 2> host_k_{};
  std::uint32_t seq_ = 0;
  std::uint32_t rp_instances_ = 0;
  std::size_t max_clock_ = 0;
};

//===-- validation ----------------------------------------------------------===//

// Vulkan's valid usage of vkCmdWaitEvents, checked against the set/reset
// commands recorded so far: each event must be set when the wait runs (the
// latest set_event/reset_event of that event in this queue is a set: an
// event never set, or reset since, is waited on forever, and a set on
// another queue does not count, since events do not synchronise queues),
// and srcStageMask must be the bitwise OR of those set_events' stage masks
// (VUID-vkCmdWaitEvents-srcStageMask-01158). Both are validation errors,
// not hazards: the command is refused, like a semaphore wait before its
// signal.
inline status checker::validate_wait_events(const command& c) const {
  stage_mask set_stages = 0;
  for (std::uint32_t e : c.events) {
    const auto it = event_signal_.find({c.queue, e});
    if (it == event_signal_.end() || !it->second.is_set) {
      return error(errc::failed_precondition,
                   "wait_events on an event that no earlier set_event of its queue leaves set (it would wait "
                   "forever; a reset clears it, and events do not synchronise queues)",
                   e);
    }
    set_stages |= it->second.stages;
  }
  if (c.src_stages != set_stages) {
    return error(errc::invalid_argument,
                 "wait_events src stages differ from the OR of the stage masks of the set_event commands it "
                 "waits on (VUID-vkCmdWaitEvents-srcStageMask-01158)",
                 c.src_stages);
  }
  return {};
}

inline status checker::validate(const command& c) const {
  // Not a queue's commands: their queue index means nothing.
  if (c.kind == command_kind::free_resource) {
    if (c.resource == global_resource) return error(errc::invalid_argument, "free names one resource, not GLOBAL");
    return {};
  }
  if (c.kind == command_kind::host_access) {
    if (c.accesses.empty()) return error(errc::invalid_argument, "a host command needs at least one access");
    for (const memory_access& a : c.accesses) {
      if (a.stage != stage::host || (bit(a.access) & host_access_types) == 0) {
        return error(errc::invalid_argument, "a host command's accesses are HOST_READ / HOST_WRITE at HOST");
      }
      if (a.mem.is_global() || a.mem.empty()) {
        return error(errc::invalid_argument, "an access needs a non-empty resource range");
      }
    }
    return {};
  }
  if (c.kind == command_kind::host_wait) {
    return signalled(c, "host wait before any signal reaching its value (the stream must be in an executable order)");
  }
  if (c.queue > 4096) return error(errc::out_of_range, "queue index too large", c.queue);
  const bool in_rp = c.queue < q_.size() && q_[c.queue].in_rp;
  auto masks_ok = [](stage_mask m) { return (m & ~valid_stage_bits) == 0; };
  if (!masks_ok(c.src_stages) || !masks_ok(c.dst_stages)) {
    return error(errc::invalid_argument, "unknown stage bit in a stage mask");
  }
  for (const memory_barrier& b : c.barriers) {
    if (((b.src_access | b.dst_access) & ~all_access) != 0) {
      return error(errc::invalid_argument, "unknown access bit in an access mask");
    }
    if (!b.mem.is_global() && b.mem.empty()) return error(errc::invalid_argument, "empty memory range in a barrier");
    if (b.transition && b.mem.is_global()) {
      return error(errc::invalid_argument, "a layout transition needs an image range, not GLOBAL");
    }
  }
  switch (c.kind) {
    case command_kind::action:
      for (const memory_access& a : c.accesses) {
        if (a.stage == stage::top_of_pipe || a.stage == stage::bottom_of_pipe) {
          return error(errc::invalid_argument, "no memory access happens at TOP_OF_PIPE or BOTTOM_OF_PIPE");
        }
        if (a.stage == stage::host || (static_cast<std::size_t>(a.access) < access_type_count &&
                                        (bit(a.access) & host_access_types) != 0)) {
          return error(errc::invalid_argument, "HOST accesses belong to host commands, not to a queue's action");
        }
        if (static_cast<std::size_t>(a.stage) >= stage_count ||
            static_cast<std::size_t>(a.access) >= access_type_count) {
          return error(errc::invalid_argument, "stage or access type out of range");
        }
        if (a.mem.is_global() || a.mem.empty()) {
          return error(errc::invalid_argument, "an access needs a non-empty resource range");
        }
      }
      return {};
    case command_kind::pipeline_barrier:
      if (extract_stages(c.src_stages) == 0 || extract_stages(c.dst_stages) == 0) {
        return error(errc::invalid_argument, "a barrier needs non-empty src and dst stage masks");
      }
      if (in_rp) {
        for (const memory_barrier& b : c.barriers) {
          if (b.transition) return error(errc::invalid_argument, "no layout transitions inside a render pass");
        }
      }
      return {};
    case command_kind::set_event:
    case command_kind::reset_event:
    case command_kind::wait_events:
      if (in_rp) return error(errc::failed_precondition, "event commands are not allowed inside a render pass");
      if (c.events.empty() || (c.kind != command_kind::wait_events && c.events.size() != 1)) {
        return error(errc::invalid_argument, "set/reset name one event, wait names at least one");
      }
      if (c.kind != command_kind::wait_events && extract_stages(c.src_stages) == 0) {
        return error(errc::invalid_argument, "set/reset event needs a non-empty stage mask");
      }
      if (c.kind == command_kind::wait_events && extract_stages(c.dst_stages) == 0) {
        return error(errc::invalid_argument, "wait_events needs a non-empty dst stage mask");
      }
      if (c.kind == command_kind::wait_events) return validate_wait_events(c);
      return {};
    case command_kind::begin_render_pass:
      if (in_rp) return error(errc::failed_precondition, "begin_render_pass inside a render pass");
      if (c.subpass_count == 0 || c.subpass_count > 64) {
        return error(errc::invalid_argument, "a render pass needs 1..64 subpasses", c.subpass_count);
      }
      if (c.dependencies.size() > 256) return error(errc::invalid_argument, "too many subpass dependencies");
      for (const subpass_dependency& d : c.dependencies) {
        if (d.src == subpass_external && d.dst == subpass_external) {
          return error(errc::invalid_argument, "a subpass dependency cannot be EXTERNAL to EXTERNAL");
        }
        if ((d.src != subpass_external && d.src >= c.subpass_count) ||
            (d.dst != subpass_external && d.dst >= c.subpass_count)) {
          return error(errc::out_of_range, "subpass dependency names a subpass that does not exist");
        }
        if (d.src != subpass_external && d.dst != subpass_external && d.src > d.dst) {
          return error(errc::invalid_argument, "subpass dependency goes backwards (src > dst)");
        }
        if (!masks_ok(d.src_stages) || !masks_ok(d.dst_stages) ||
            ((d.src_access | d.dst_access) & ~all_access) != 0) {
          return error(errc::invalid_argument, "unknown bit in a subpass dependency mask");
        }
      }
      return {};
    case command_kind::next_subpass:
      if (!in_rp) return error(errc::failed_precondition, "next_subpass outside a render pass");
      if (q_[c.queue].subpass + 1 >= q_[c.queue].subpass_count) {
        return error(errc::failed_precondition, "next_subpass past the last subpass");
      }
      return {};
    case command_kind::end_render_pass:
      if (!in_rp) return error(errc::failed_precondition, "end_render_pass outside a render pass");
      if (q_[c.queue].subpass + 1 != q_[c.queue].subpass_count) {
        return error(errc::failed_precondition, "end_render_pass before the last subpass");
      }
      return {};
    case command_kind::signal_semaphore: {
      if (in_rp) return error(errc::failed_precondition, "semaphore operations are not allowed inside a render pass");
      if (c.value == 0) return error(errc::invalid_argument, "a semaphore signal value must be > 0");
      if (auto it = signals_.find(c.semaphore); it != signals_.end() && !it->second.empty() &&
                                                it->second.back().first >= c.value) {
        return error(errc::not_increasing, "semaphore signal values must increase", c.value);
      }
      return {};
    }
    case command_kind::wait_semaphore: {
      if (in_rp) return error(errc::failed_precondition, "semaphore operations are not allowed inside a render pass");
      if (extract_stages(c.dst_stages) == 0) return error(errc::invalid_argument, "a semaphore wait needs dst stages");
      return signalled(c, "semaphore wait before any signal reaching its value (the stream must be in an executable "
                          "order)");
    }
    case command_kind::submit:
      if (in_rp) return error(errc::failed_precondition, "submit inside a render pass");
      return {};
    case command_kind::free_resource:
    case command_kind::host_access:
    case command_kind::host_wait: return {};  // checked above
  }
  return error(errc::invalid_argument, "unknown command kind");
}

//===-- append --------------------------------------------------------------===//

inline status checker::append(const command& c) {
  if (status s = validate(c); !s) return s;
  if (c.kind == command_kind::free_resource) {
    free_resource(c);
    return {};
  }
  if (c.kind == command_kind::host_access || c.kind == command_kind::host_wait) {
    record_host(c);
    return {};
  }
  while (q_.size() <= c.queue) {
    queue_state q;
    q.qall = new_scope();
    q.qout = new_scope();
    q_.push_back(std::move(q));
  }
  if (!region_split_ && splits_regions(c, q_[c.queue])) split_regions();
  const auto id = static_cast<std::uint32_t>(cmds_.size());
  const auto first_new_owner = static_cast<std::uint32_t>(owners_.size());
  cmd_info ci;
  ci.kind = c.kind;
  ci.queue = c.queue;
  cmds_.push_back(ci);
  if (c.kind == command_kind::set_event || c.kind == command_kind::reset_event) {
    event_signal_[{c.queue, c.events[0]}] = {c.kind == command_kind::set_event, c.src_stages};
  }
  switch (c.kind) {
    case command_kind::action: record_action(c, id); break;
    case command_kind::begin_render_pass: begin_rp(c, id); break;
    case command_kind::next_subpass:
      finish_subpass(q_[c.queue]);
      enter_subpass(q_[c.queue], q_[c.queue].subpass + 1);
      break;
    case command_kind::end_render_pass: end_rp(q_[c.queue]); break;
    case command_kind::submit:
      // After host commands: the submission's memory dependency on them
      // (Vulkan's host write ordering guarantee), recorded as a barrier
      // from HOST (its K is the host's clock) to every later command of
      // this queue, flushing host writes and invalidating for all.
      if (host_pos_ != 0) {
        command sync;
        sync.kind = command_kind::pipeline_barrier;
        sync.queue = c.queue;
        sync.src_stages = host_stage_bit;
        sync.dst_stages = all_commands_bit;
        sync.barriers = {{bit(access_type::host_write), all_access, global_memory, false}};
        record_sync(sync, id, true);
      }
      break;
    default: record_sync(c, id); break;
  }
  retire();
  // Owners with no record (execution-only barriers) are needed by nothing.
  for (auto o = first_new_owner; o < owners_.size(); ++o) {
    if (owners_[o].live == 0) release_owner(o);
  }
  return {};
}

inline void checker::record_action(const command& c, std::uint32_t id) {
  queue_state& q = q_[c.queue];
  cmd_info& ci = cmds_[id];
  ci.idx = ++q.idx;
  ci.qall = q.qall;
  ci.in_rp = q.in_rp;
  ci.local = q.in_rp ? q.sp_scopes[q.subpass] : q.qout;
  ci.rp_instance = q.in_rp ? q.rp_instance : none;
  for (std::size_t r = 0; r < relations(); ++r) {
    ci.snap_q[r] = snapshot_of(r, q.in[r], q.in_snap[r]);
    if (q.in_rp) ci.snap_s[r] = snapshot_of(r, q.in_s[r], q.in_s_snap[r]);
    // out[Y] gains pred((c, Y)) = In[Y] u In[TOP]; out[BOTTOM] gains all.
    const bool fresh_q = q.joined_q[r] != ci.snap_q[r] || q.joined_s[r] != ci.snap_s[r];
    if (fresh_q) {
      feed_changed(q.out[r], q.in[r], q.unfed[r][queue_state::in_to_out]);
      if (q.in_rp) feed_changed(q.out[r], q.in_s[r], q.unfed[r][queue_state::in_s_to_out]);
      q.joined_q[r] = ci.snap_q[r];
      q.joined_s[r] = ci.snap_s[r];
    }
    if (q.in_rp) {
      stage_set& top_changed = q.unfed[r][queue_state::in_s_top_acted];
      if ((top_changed >> TOP & 1u) != 0) q.acted_top_s[r] = q.in_s[r][TOP];
      top_changed = 0;
    }
    auto claim = [&](std::array<vclock, stage_count>& out, std::uint32_t scope) {
      for (std::size_t y = 0; y < stage_count; ++y) {
        detail::clock_entry& e = out[y].at(scope);
        e.arrays |= detail::clock_entry::has_act;
        detail::raise(e.act[y], ci.idx);
        detail::raise(e.act[TOP], ci.idx);
      }
      detail::clock_entry& b = out[BOTTOM].at(scope);
      for (std::size_t y = 0; y < stage_count; ++y) detail::raise(b.act[y], ci.idx);
    };
    claim(q.out[r], q.qall);
    if (q.in_rp) claim(q.out_s[r], ci.local);
  }
  if (q.in_rp) q.acted_s = true;
  // hazards
  for (const memory_access& a : c.accesses) check_access(id, a, ci.rp_instance);
  // pairs inside the command (different stages are unordered)
  for (std::size_t i = 0; i < c.accesses.size(); ++i) {
    for (std::size_t j = i + 1; j < c.accesses.size(); ++j) {
      const memory_access& a = c.accesses[i];
      const memory_access& b = c.accesses[j];
      if (a.stage == b.stage || (!a.write() && !b.write()) || !overlaps(a.mem, b.mem)) continue;
      const memory_access& w = a.write() ? a : b;
      const memory_access& o = a.write() ? b : a;
      hazard h;
      h.kind = o.write() ? hazard_kind::write_after_write_race : hazard_kind::read_after_write_race;
      h.first = h.second = id;
      h.first_stages = static_cast<stage_set>(1u << static_cast<unsigned>(w.stage));
      h.second_stages = static_cast<stage_set>(1u << static_cast<unsigned>(o.stage));
      h.first_access = bit(w.access);
      h.second_access = bit(o.access);
      h.range = overlap(w.mem, o.mem);
      report(h);
    }
  }
  record_accesses(c, id, ci.rp_instance);
}

inline std::uint32_t checker::make_owner(bool is_dep, std::uint32_t command, std::uint32_t target,
                                         stage_set dst, const std::array<vclock, 2>& k,
                                         std::uint32_t fb_rp, bool by_region,
                                         const std::array<std::uint32_t, 2>* interned) {
  owner o;
  o.by_region = by_region;
  o.is_dep = is_dep;
  o.command = command;
  o.target = target;
  o.dst_set = dst;
  o.fb_rp = fb_rp;
  if (is_dep) o.rp = q_[cmds_[command].queue].rp_instance;
  if (interned != nullptr) {
    o.k = *interned;
    o.shares_k = true;
  } else {
    for (std::size_t r = 0; r < relations(); ++r) o.k[r] = intern(rs_[r], k[r]);
  }
  owners_.push_back(o);
  return static_cast<std::uint32_t>(owners_.size() - 1);
}

inline void checker::record_sync(const command& c, std::uint32_t id, bool host_submit) {
  queue_state& q = q_[c.queue];
  cmd_info& ci = cmds_[id];
  // Execution scopes (edges) take the logically earlier / later stages;
  // access scopes (flushes, invalidates) only the stages the masks name.
  const stage_set src = source_scope_stages(c.src_stages);
  const stage_set dst = destination_scope_stages(c.dst_stages);
  const stage_set src_access_stages = extract_stages(c.src_stages);
  const stage_set dst_access_stages = extract_stages(c.dst_stages);
  const bool inside = q.in_rp;  // only barriers can be inside
  ci.qall = q.qall;
  ci.in_rp = inside;
  ci.local = inside ? q.sp_scopes[q.subpass] : q.qout;
  ci.rp_instance = inside ? q.rp_instance : none;
  // BY_REGION only means something inside a render pass (framebuffer
  // regions exist there): outside, the barrier is an ordinary one.
  ci.by_region = c.by_region && c.kind == command_kind::pipeline_barrier && inside;
  const bool has_dst = c.kind == command_kind::pipeline_barrier || c.kind == command_kind::wait_events ||
                       c.kind == command_kind::wait_semaphore;
  ci.dst_set = has_dst ? dst : 0;

  std::uint32_t chain = 0;
  if (c.kind == command_kind::set_event || c.kind == command_kind::reset_event) {
    auto [it, fresh] = chain_scope_.try_emplace({c.queue, c.events[0]}, 0u);
    if (fresh) it->second = new_scope();
    chain = it->second;
    ci.chain = chain;
    ci.chain_pos = ++chain_len_[chain];
  }

  std::array<vclock, 2>& k = sync_k_scratch_;  // keeps its capacity from command to command
  const std::array<std::uint32_t, 2>* waited_signal = nullptr;  // a semaphore wait's signal clocks
  for (std::size_t r = 0; r < relations(); ++r) {
    k[r].clear();
    const bool edges = !(r == 0 && ci.by_region);  // strict drops a by-region barrier's own edges
    vclock& K = k[r];
    auto& in = q.in[r];
    // What flows into this command's SRC-stage nodes precedes a later
    // semaphore signal even when it reaches nothing else.
    auto take = [&](const std::array<vclock, stage_count>& from, stage_set& unfed) {
      for (std::size_t x = 0; x < stage_count; ++x) {
        if ((unfed >> x & 1u) != 0) q.evk[r].join(from[x]);
      }
      unfed = 0;
    };
    take(in, q.unfed[r][queue_state::in_to_evk]);
    if (inside) take(q.in_s[r], q.unfed[r][queue_state::in_s_to_evk]);
    auto& out = inside ? q.out_s[r] : q.out[r];
    switch (c.kind) {
      case command_kind::pipeline_barrier:
      case command_kind::set_event:
      case command_kind::reset_event:
        for (std::size_t x = 0; x < stage_count; ++x) {
          const bool src_node_live = (src >> x & 1u) != 0 || x == TOP;
          if (!src_node_live) continue;
          K.join(in[x]);
          if (inside) K.join(q.in_s[r][x]);
          if (edges && (src >> x & 1u) != 0) K.join(out[x]);
        }
        if (chain != 0) {
          if (auto it = chain_k_.find(chain); it != chain_k_.end()) K.join(it->second[r]);
        }
        break;
      case command_kind::wait_events:
        for (std::uint32_t e : c.events) {
          if (auto s = chain_scope_.find({c.queue, e}); s != chain_scope_.end()) {
            K.join(chain_k_[s->second][r]);
          }
        }
        break;
      case command_kind::signal_semaphore:
        K.join(q.out[r][BOTTOM]);
        K.join(q.evk[r]);
        if (q.idx > 0) detail::raise(K.at(q.qall).every, q.idx);
        break;
      case command_kind::wait_semaphore: {
        // Signal values increase (validate): the first reaching the wait's
        // value is found by bisection.
        const auto& list = signals_[c.semaphore];
        const auto first = std::lower_bound(list.begin(), list.end(), c.value,
                                            [](const auto& sig, std::uint64_t v) { return sig.first < v; });
        if (first != list.end()) {
          K.join(clock_at(r, first->second[r]));
          waited_signal = &first->second;
        }
        break;
      }
      default: break;
    }
    if (host_submit) K.join(host_k_[r]);
    if (dead_count_ != 0) drop_dead_scopes(K);
    if (collapsing_) drop_covered_passes(K);
    max_clock_ = std::max(max_clock_, K.size());
    if (options_.history) ci.k[r] = intern(rs_[r], K);
  }
  ci.idx = ++q.idx;

  for (std::size_t r = 0; r < relations(); ++r) {
    const bool edges = !(r == 0 && ci.by_region);
    const vclock& K = k[r];
    // A-side: later sync commands consume (b, DST, X) for every X.
    auto feed_out = [&](std::array<vclock, stage_count>& out, std::uint32_t scope) {
      for (std::size_t x = 0; x < stage_count; ++x) {
        if (has_dst && ((dst >> x & 1u) != 0 || x == BOTTOM)) out[x].join(K);
        detail::clock_entry& e = out[x].at(scope);
        e.arrays |= detail::clock_entry::has_sall;
        detail::raise(e.sall[x], ci.idx);
      }
    };
    feed_out(q.out[r], q.qall);
    if (inside) feed_out(q.out_s[r], ci.local);
    if (!has_dst) q.evk[r].join(K);
    // B-side: later commands of the scope receive (b, DST, X) for X in dst.
    if (has_dst && edges) {
      auto& in = inside ? q.in_s[r] : q.in[r];
      for (std::size_t x = 0; x < stage_count; ++x) {
        if ((dst >> x & 1u) == 0) continue;
        in[x].join(K);
        detail::clock_entry& e = in[x].at(ci.local);
        e.arrays |= detail::clock_entry::has_sfwd;
        detail::raise(e.sfwd[x], ci.idx);
        if (inside) {
          q.changed_in_s(r, x);
        } else {
          q.changed_in(r, x);
        }
      }
      on_in_changed(q, r, inside);
    }
  }

  if (chain != 0) {
    std::array<vclock, 2> ck;
    for (std::size_t r = 0; r < relations(); ++r) {
      ck[r] = k[r];
      detail::raise(ck[r].at(chain).every, ci.chain_pos);
    }
    chain_k_[chain] = std::move(ck);
  }
  // A signal's clock also covers the signal itself (`every`); its owner
  // (the GLOBAL flush) shares that clock: the flush's queries only ask
  // about earlier commands, which both answer alike.
  std::array<std::uint32_t, 2> signal_ids{};
  if (c.kind == command_kind::signal_semaphore) {
    for (std::size_t r = 0; r < relations(); ++r) {
      vclock s = k[r];
      detail::raise(s.at(q.qall).every, ci.idx);
      signal_ids[r] = intern(rs_[r], s);
    }
    signals_[c.semaphore].emplace_back(c.value, signal_ids);
  }
  // A wait's clock is its signal's unless cleaning dropped entries of it.
  for (std::size_t r = 0; r < relations() && waited_signal != nullptr; ++r) {
    if (k[r].size() != clock_at(r, (*waited_signal)[r]).size()) waited_signal = nullptr;
  }

  // Memory: flushes, transitions, invalidates.
  const std::uint32_t fb = (ci.by_region && inside) ? q.rp_instance : none;
  if (c.kind == command_kind::set_event || c.kind == command_kind::reset_event ||
      c.kind == command_kind::wait_events) {
    check_events(id, c, k[0]);
  }
  if (c.kind == command_kind::signal_semaphore) {
    const std::uint32_t o = make_owner(false, id, 0, 0, k, none, false, &signal_ids);
    record f{record::type::flush};
    f.seq = seq_++;
    f.command = id;
    f.stages = all_stages_set;
    f.accs = all_access;
    f.owner = o;
    add_record(f);
    return;
  }
  if (!has_dst) return;
  const std::uint32_t o = make_owner(false, id, 0, dst, k, fb, false, waited_signal);
  // A semaphore wait invalidates everything at its destination stages.
  static const std::vector<memory_barrier> wait_invalidates{memory_barrier{0, all_access, global_memory, false}};
  const std::vector<memory_barrier>& mbs = c.kind == command_kind::wait_semaphore ? wait_invalidates : c.barriers;
  for (const memory_barrier& mb : mbs) {
    if (mb.src_access == 0 || src_access_stages == 0) continue;
    record f{record::type::flush};
    f.seq = seq_++;
    f.command = id;
    f.stages = src_access_stages;
    f.accs = mb.src_access;
    f.mem = mb.mem;
    f.owner = o;
    f.fb_rp = fb;
    add_record(f);
  }
  for (const memory_barrier& mb : mbs) {
    if (!mb.transition) continue;
    record t{record::type::transition};
    t.seq = seq_++;
    t.command = id;
    t.mem = mb.mem;
    t.owner = o;
    check_transition(t);
    add_record(t);
  }
  for (const memory_barrier& mb : mbs) {
    if (mb.dst_access == 0 || dst_access_stages == 0) continue;
    record inv{record::type::invalidate};
    inv.seq = seq_++;
    inv.command = id;
    inv.stages = dst_access_stages;
    inv.accs = mb.dst_access;
    inv.mem = mb.mem;
    inv.owner = o;
    inv.fb_rp = fb;
    check_invalidate(inv);
    add_record(inv);
  }
}

//===-- render passes -------------------------------------------------------===//

inline void checker::begin_rp(const command& c, std::uint32_t id) {
  queue_state& q = q_[c.queue];
  q.in_rp = true;
  q.rp_begin = id;
  purge_scopes();
  q.rp_instance = rp_instances_++;
  q.subpass_count = c.subpass_count;
  q.sp_scopes.clear();
  rp_life life;
  life.first_scope = next_scope_;
  life.qall = q.qall;
  for (std::uint32_t i = 0; i < c.subpass_count; ++i) q.sp_scopes.push_back(new_scope());
  q.end_scope = new_scope();
  life.scope_count = next_scope_ - life.first_scope;
  scope_rp_.resize(next_scope_, none);
  for (std::uint32_t sc = life.first_scope; sc < next_scope_; ++sc) scope_rp_[sc] = q.rp_instance;
  rp_life_.push_back(life);
  q.sp_done = 0;
  q.deps.clear();
  for (const subpass_dependency& d : c.dependencies) {
    if (d.src == d.dst) continue;  // self-dependency: barriers inside the subpass do the work
    dep_info di;
    di.d = d;
    di.queue = c.queue;
    if (d.src == subpass_external) {
      // Its first scope is every command before the render pass: the
      // queue's out now (actions in the pass will add to out).
      const stage_set src = source_scope_stages(d.src_stages);
      for (std::size_t r = 0; r < relations(); ++r) {
        if (r == 0 && d.by_region) continue;
        for (std::size_t x = 0; x < stage_count; ++x) {
          if ((src >> x & 1u) != 0) di.from_external[r].join(q.out[r][x]);
        }
      }
    }
    deps_.push_back(std::move(di));
    q.deps.push_back(static_cast<std::uint32_t>(deps_.size() - 1));
  }
  enter_subpass(q, 0);
}

inline checker::vclock checker::dep_clock(std::size_t r, const queue_state& q, std::uint32_t di) {
  const subpass_dependency& d = deps_[di].d;
  vclock k;
  if (r == 0 && d.by_region) return k;
  if (d.src == subpass_external) return std::move(deps_[di].from_external[r]);
  const stage_set src = source_scope_stages(d.src_stages);
  // The subpass's DST nodes: its In and out, and (queue_state::
  // subpass_done) what its actions' nodes follow, pred((a, X)) = In[X] u
  // In[TOP] of the queue and of the subpass, (a, BOTTOM) following all.
  // The queue's In is the render pass's throughout; the subpass's only
  // grew after its last action by what its later barriers also put in out.
  const queue_state::subpass_done& done = q.sp_dst[r][d.src];
  for (std::size_t x = 0; x < stage_count; ++x) {
    if ((src >> x & 1u) == 0) continue;
    k.join(done.in[x]);
    k.join(done.out[x]);
    if (done.acted) k.join(q.in[r][x]);
  }
  if (done.acted && (src & all_stages_set) != 0) {
    k.join(q.in[r][TOP]);
    k.join(done.top);
    if ((src >> BOTTOM & 1u) != 0) {
      for (std::size_t y = 0; y < stage_count; ++y) {
        k.join(q.in[r][y]);
        k.join(done.in[y]);
      }
    }
  }
  return k;
}

inline void checker::enter_subpass(queue_state& q, std::uint32_t j) {
  q.subpass = j;
  q.acted_s = false;
  const std::uint32_t scope = q.sp_scopes[j];
  std::vector<std::uint32_t>& arriving = arriving_scratch_;
  arriving.clear();
  for (std::uint32_t di : q.deps) {
    if (deps_[di].d.dst == j) arriving.push_back(di);
  }
  std::vector<std::array<vclock, 2>>& kd = dep_k_scratch_;
  if (kd.size() < arriving.size()) kd.resize(arriving.size());
  for (std::size_t i = 0; i < arriving.size(); ++i) {
    for (std::size_t r = 0; r < relations(); ++r) kd[i][r] = dep_clock(r, q, arriving[i]);
  }
  // The subpass's clocks start over, in the storage the last one left.
  for (std::size_t r = 0; r < relations(); ++r) {
    for (std::size_t x = 0; x < stage_count; ++x) {
      vclock& in = q.in_s[r][x];
      in.clear();
      for (std::size_t i = 0; i < arriving.size(); ++i) {
        const subpass_dependency& d = deps_[arriving[i]].d;
        if (r == 0 && d.by_region) continue;
        if ((destination_scope_stages(d.dst_stages) >> x & 1u) != 0) in.join(kd[i][r]);
      }
      in.at(scope).spsrc = static_cast<stage_set>(1u << x);
      q.out_s[r][x].clear();
      q.changed_in_s(r, x);
    }
    q.acted_top_s[r].clear();
    q.in_s_snap[r] = none;
    q.joined_s[r] = none;
  }
  for (std::size_t i = 0; i < arriving.size(); ++i) {
    const subpass_dependency& d = deps_[arriving[i]].d;
    const std::uint32_t fb = d.by_region ? q.rp_instance : none;
    const auto here = static_cast<std::uint32_t>(cmds_.size() - 1);
    const std::uint32_t o =
        make_owner(true, here, scope, destination_scope_stages(d.dst_stages), kd[i], fb, d.by_region);
    deps_[arriving[i]].owner = o;
    if (d.src_access != 0 && extract_stages(d.src_stages) != 0) {
      record f{record::type::flush};
      f.seq = seq_++;
      f.command = here;
      f.stages = extract_stages(d.src_stages);
      f.accs = d.src_access;
      f.owner = o;
      f.fb_rp = fb;
      add_record(f);
    }
    if (d.dst_access != 0 && extract_stages(d.dst_stages) != 0) {
      record inv{record::type::invalidate};
      inv.seq = seq_++;
      inv.command = here;
      inv.stages = extract_stages(d.dst_stages);
      inv.accs = d.dst_access;
      inv.owner = o;
      inv.fb_rp = fb;
      check_invalidate(inv);
      add_record(inv);
    }
  }
}

// The subpass's clocks are swapped into sp_dst, not copied: the queue's
// subpass clocks get the storage of a slot an earlier pass used, which
// enter_subpass() clears.
inline void checker::finish_subpass(queue_state& q) {
  for (std::size_t r = 0; r < relations(); ++r) {
    if (q.sp_dst[r].size() <= q.sp_done) q.sp_dst[r].resize(q.sp_done + 1);
    queue_state::subpass_done& done = q.sp_dst[r][q.sp_done];
    for (std::size_t x = 0; x < stage_count; ++x) {
      done.in[x].swap(q.in_s[r][x]);
      done.out[x].swap(q.out_s[r][x]);
    }
    done.acted = q.acted_s;
    done.top.swap(q.acted_top_s[r]);
  }
  ++q.sp_done;
}

inline void checker::end_rp(queue_state& q) {
  finish_subpass(q);
  const auto end_cmd = static_cast<std::uint32_t>(cmds_.size() - 1);
  // Every clock first: dep_clock() reads the queue's In as the render pass
  // saw it, and the loop below adds to it.
  std::vector<std::array<vclock, 2>>& leaving = dep_k_scratch_;
  std::size_t leaving_count = 0;
  for (std::uint32_t di : q.deps) {
    if (deps_[di].d.dst != subpass_external) continue;
    if (leaving.size() <= leaving_count) leaving.resize(leaving_count + 1);
    for (std::size_t r = 0; r < relations(); ++r) leaving[leaving_count][r] = dep_clock(r, q, di);
    ++leaving_count;
  }
  std::size_t next_leaving = 0;
  for (std::uint32_t di : q.deps) {
    const subpass_dependency& d = deps_[di].d;
    if (d.dst != subpass_external) continue;
    const std::array<vclock, 2>& kd = leaving[next_leaving++];
    const stage_set dst = destination_scope_stages(d.dst_stages);
    const stage_set dst_access_stages = extract_stages(d.dst_stages);
    for (std::size_t r = 0; r < relations(); ++r) {
      if (r == 0 && d.by_region) continue;
      for (std::size_t x = 0; x < stage_count; ++x) {
        if ((dst >> x & 1u) == 0) continue;
        q.in[r][x].join(kd[r]);
        q.in[r][x].at(q.end_scope).spsrc |= static_cast<stage_set>(1u << x);
        q.changed_in(r, x);
      }
      q.in_snap[r] = none;
    }
    const std::uint32_t fb = none;  // after the render pass nothing is framebuffer-local
    const std::uint32_t o = make_owner(true, end_cmd, q.end_scope, dst, kd, fb, d.by_region);
    deps_[di].owner = o;
    if (d.src_access != 0 && extract_stages(d.src_stages) != 0) {
      record f{record::type::flush};
      f.seq = seq_++;
      f.command = end_cmd;
      f.stages = extract_stages(d.src_stages);
      f.accs = d.src_access;
      f.owner = o;
      add_record(f);
    }
    if (d.dst_access != 0 && dst_access_stages != 0) {
      record inv{record::type::invalidate};
      inv.seq = seq_++;
      inv.command = end_cmd;
      inv.stages = dst_access_stages;
      inv.accs = d.dst_access;
      inv.owner = o;
      check_invalidate(inv);
      add_record(inv);
    }
  }
  q.in_rp = false;
  for (std::size_t r = 0; r < relations(); ++r) q.joined_s[r] = none;
  rp_life& life = rp_life_[q.rp_instance];
  life.closed = true;
  if (life.live == 0) {
    forget_render_pass(q.rp_instance);
  } else if (life.live_sync == 0) {
    start_collapsing(q.rp_instance);
  }
}

//===-- queries -------------------------------------------------------------===//

inline bool checker::valid(point p) const noexcept {
  if (!options_.history || p.command >= cmds_.size()) return false;
  const command_kind k = cmds_[p.command].kind;
  switch (p.where) {
    case point::part::stage:
      return k == command_kind::action && static_cast<std::size_t>(p.stage) < stage_count;
    case point::part::src:
      return k != command_kind::action && k != command_kind::begin_render_pass &&
             k != command_kind::next_subpass && k != command_kind::end_render_pass &&
             k != command_kind::submit && k != command_kind::free_resource &&
             k != command_kind::host_access && k != command_kind::host_wait;
    case point::part::dst:
      return k == command_kind::pipeline_barrier || k == command_kind::wait_events ||
             k == command_kind::wait_semaphore;
  }
  return false;
}

inline bool checker::happens_before(point a, point b, relation rel) const {
  if (!valid(a) || !valid(b)) return false;
  const auto r = static_cast<std::size_t>(rel);
  if (a.command == b.command) {
    if (a.where == point::part::stage) {
      return (a.stage == stage::top_of_pipe && b.stage != stage::top_of_pipe) ||
             (b.stage == stage::bottom_of_pipe && a.stage != stage::bottom_of_pipe);
    }
    return a.where == point::part::src && b.where == point::part::dst;
  }
  if (a.command > b.command) return false;  // every edge goes forward in stream order
  view v;
  v.r = r;
  vclock bottom;
  if (b.where == point::part::stage) {
    v = action_view(r, b.command, b.stage, &bottom);
  } else {
    v.add(&clock_at(kept_relation(r), cmds_[b.command].k[kept_relation(r)]));
  }
  if (a.where == point::part::stage) return act_member(a.command, a.stage, v);
  return core_member(a.command, v);
}

//===-- hazards -------------------------------------------------------------===//

// Does writer `w` precede the flush position of owner `o`?
inline bool checker::writer_before_owner(const record& w, std::size_t r, std::uint32_t o) const {
  const view ov = owner_view(r, o);
  if (w.t == record::type::transition) {
    return owners_[w.owner].command == owners_[o].command || owner_member(w.owner, ov);
  }
  return act_member(w.command, w.st, ov);
}

// Is there a flush F (and, when `need_invalidate`, an invalidate I) with
// w < F < I < target, matching w's and the target's stage/access and
// covering `ov`? `target_owner` is set when the target is a transition
// (owner's own flushes count; no invalidate needed).
inline bool checker::visible(const record& w, std::size_t r, std::uint32_t target_owner, const view& tv,
                             std::uint32_t target_cmd, stage target_stage, access_type target_acc,
                             bool need_invalidate, const memory_range& ov) {
  (void)target_cmd;
  // Walks the flushes and invalidates after w in stream order and stops at
  // the first pair that works: a flush precedes its own barrier's
  // invalidates and every later owner's in record order, so the matching
  // flushes seen so far are the only ones an invalidate can pair with.
  std::vector<std::uint32_t>& flushed = visible_scratch_;
  flushed.clear();
  const bool transition_writer = w.t == record::type::transition;
  return walk_after(w.seq, ov.resource, [&](const record& x) {
    if (x.t == record::type::flush) {
      if (transition_writer || !contains(x.stages, w.st) || (x.accs & bit(w.acc)) == 0) return false;
      if (!is_subset(ov, x.mem) || !writer_before_owner(w, r, x.owner)) return false;
      if (!need_invalidate) {
        // target is a transition of target_owner: F < T.
        return x.owner == target_owner || owner_member(x.owner, owner_view(r, target_owner));
      }
      flushed.push_back(x.owner);
      return false;
    }
    if (x.t != record::type::invalidate || !need_invalidate) return false;
    if (!contains(x.stages, target_stage) || (x.accs & bit(target_acc)) == 0) return false;
    if (!is_subset(ov, x.mem) || !owner_member(x.owner, tv)) return false;
    if (transition_writer) {
      // The transition's writes are flushed by the transition itself; any
      // invalidate after it (same barrier: always) makes them visible.
      if (owners_[x.owner].command == owners_[w.owner].command && !owners_[x.owner].is_dep) return true;
      return owner_member(w.owner, owner_view(r, x.owner));
    }
    const view iv = owner_view(r, x.owner);
    for (std::uint32_t fo : flushed) {
      if (fo == x.owner || owner_member(fo, iv)) return true;
    }
    return false;
  });
}

inline void checker::check_access(std::uint32_t c, const memory_access& x, std::uint32_t rp) {
  const std::uint32_t x_fb = framebuffer_local(x) ? rp : none;
  const bool host_x = x.stage == stage::host;
  std::array<view, 2> views{host_x ? host_view(0) : own_view(0, c, x.stage), view{}};
  if (host_x) {
    views[1] = host_view(1);
  } else if (region_split_) {
    views[1] = own_view(1, c, x.stage);
  } else {
    views[1] = views[0];  // the same clocks (relations())
    views[1].r = 1;
  }
  for_overlapping(x.mem, [&](const record& p) {
    if (p.command == c) return;
    const std::size_t r = pick(p.fb_rp, x_fb);
    const view& v = views[r];
    const memory_range ov = overlap(p.mem, x.mem);
    hazard h;
    h.first = p.command;
    h.second = c;
    h.second_stages = static_cast<stage_set>(1u << static_cast<unsigned>(x.stage));
    h.second_access = bit(x.access);
    h.range = ov;
    switch (p.t) {
      case record::type::write:
      case record::type::transition: {
        const bool trans = p.t == record::type::transition;
        h.first_stages = trans ? 0 : static_cast<stage_set>(1u << static_cast<unsigned>(p.st));
        h.first_access = trans ? 0 : bit(p.acc);
        const std::size_t rr = trans ? 0 : r;
        const view& vv = views[rr];
        const bool ordered = trans ? owner_member(p.owner, vv) : act_member(p.command, p.st, vv);
        // The host's accesses are coherent with one another (one timeline).
        const bool host_pair = host_x && p.st == stage::host;
        if (!ordered) {
          h.kind = x.write() ? hazard_kind::write_after_write_race : hazard_kind::read_after_write_race;
          report(h);
        } else if (!host_pair && !visible(p, rr, none, vv, c, x.stage, x.access, true, ov)) {
          h.kind = x.write() ? hazard_kind::write_without_visibility : hazard_kind::read_without_visibility;
          report(h);
        } else if (x.write()) {
          note_retirer(p, x.mem, x_fb, true);
        }
        break;
      }
      case record::type::read:
        if (x.write()) {
          read_then_write(p, v, h, x.mem, x_fb);
        } else if (is_subset(p.mem, x.mem) && pick(p.fb_rp, x_fb) == 0) {
          // A read ordered before a later covering read: any write that
          // follows the later one follows it too.
          note_retirer(p, x.mem, x_fb, act_member(p.command, p.st, views[0]));
        }
        break;
      case record::type::invalidate: {
        if (!x.write() || p.retired) break;
        const std::size_t ri = pick(p.fb_rp, x_fb);
        const bool ordered = owner_member(p.owner, views[ri]);
        if (!ordered) {
          h.kind = hazard_kind::write_invalidate_race;
          h.first_stages = p.stages;
          h.first_access = p.accs;
          report(h);
        }
        note_retirer(p, x.mem, x_fb, ordered);
        break;
      }
      case record::type::flush: break;
    }
  });
}

inline void checker::check_invalidate(const record& inv) {
  // Without warnings only the write/invalidate race rule reports here, and
  // GLOBAL invalidates take no part in it: nothing to scan (a GLOBAL
  // invalidate, in every semaphore wait and global barrier, would
  // otherwise scan every earlier write).
  if (!options_.warnings && inv.mem.is_global()) return;
  for_overlapping(inv.mem, [&](const record& p) {
    if (p.t != record::type::write && p.t != record::type::transition) return;
    const memory_range ov = overlap(p.mem, inv.mem);
    hazard h;
    h.first = p.command;
    h.second = inv.command;
    h.second_stages = inv.stages;
    h.second_access = inv.accs;
    h.range = ov;
    if (p.t == record::type::transition) {
      const bool same = !owners_[inv.owner].is_dep && owners_[inv.owner].command == owners_[p.owner].command;
      if (!same && !inv.mem.is_global() && !owner_member(p.owner, owner_view(0, inv.owner))) {
        h.kind = hazard_kind::write_invalidate_race;
        report(h);
      }
      return;
    }
    const std::size_t r = pick(p.fb_rp, inv.fb_rp);
    h.first_stages = static_cast<stage_set>(1u << static_cast<unsigned>(p.st));
    h.first_access = bit(p.acc);
    if (!act_member(p.command, p.st, owner_view(r, inv.owner))) {
      if (!inv.mem.is_global()) {
        h.kind = hazard_kind::write_invalidate_race;
        report(h);
      }
      return;
    }
    // The dirty-invalidate rule is a warning (is_warning): checked only
    // when asked for.
    if (!options_.warnings) return;
    // needs a flush F with w < F < inv (F of the same owner counts)
    bool found = false;
    auto try_list = [&](const std::vector<record>& list) {
      for (const record& f : list) {
        if (found) return;
        if (f.t != record::type::flush || f.seq < p.seq) continue;
        if (!contains(f.stages, p.st) || (f.accs & bit(p.acc)) == 0) continue;
        if (!is_subset(ov, f.mem) || !is_subset(ov, inv.mem)) continue;
        if (!writer_before_owner(p, r, f.owner)) continue;
        if (f.owner == inv.owner || owner_member(f.owner, owner_view(r, inv.owner))) found = true;
      }
    };
    try_list(global_records_);
    if (auto it = by_resource_.find(ov.resource); it != by_resource_.end()) try_list(it->second);
    if (!found) {
      h.kind = hazard_kind::dirty_invalidate;
      report(h);
    }
  });
}

inline void checker::check_transition(const record& t) {
  const view tv = owner_view(0, t.owner);
  for_overlapping(t.mem, [&](const record& p) {
    const memory_range ov = overlap(p.mem, t.mem);
    hazard h;
    h.first = p.command;
    h.second = t.command;
    h.range = ov;
    // Transitions are never framebuffer-local (none inside a render pass).
    switch (p.t) {
      case record::type::write: {
        h.first_stages = static_cast<stage_set>(1u << static_cast<unsigned>(p.st));
        h.first_access = bit(p.acc);
        if (!act_member(p.command, p.st, tv)) {
          h.kind = hazard_kind::write_after_write_race;
          report(h);
        } else if (!visible(p, 0, t.owner, tv, t.command, stage::top_of_pipe, access_type::shader_read, false, ov)) {
          h.kind = hazard_kind::write_without_visibility;
          report(h);
        } else {
          note_retirer(p, t.mem, none, true);
        }
        break;
      }
      case record::type::transition: {
        const bool ordered = p.owner != t.owner && owner_member(p.owner, tv);
        if (!ordered) {
          h.kind = hazard_kind::write_after_write_race;
          report(h);
        }
        note_retirer(p, t.mem, none, ordered);
        break;
      }
      case record::type::read:
        read_then_write(p, tv, h, t.mem, none);
        break;
      case record::type::invalidate: {
        if (p.retired) break;
        const bool ordered = owner_member(p.owner, tv);
        if (!ordered) {
          h.kind = hazard_kind::write_invalidate_race;
          h.first_stages = p.stages;
          h.first_access = p.accs;
          report(h);
        }
        note_retirer(p, t.mem, none, ordered);
        break;
      }
      case record::type::flush: break;
    }
  });
}

// Applies the retirements this command found (note_retirer). A retired
// read, write or transition leaves its resource's list; a retired
// invalidate stays out of race checks but is kept, like every flush, while
// a live write older than it may still need it to become visible. Flushes
// and invalidates older than every live write of their resource go.
// A host command: one position on the host's timeline. A wait joins the
// clock of the first signal reaching its value (and invalidates nothing); an
// access is checked against the records like a device access, seen from the
// host's clock, then recorded at HOST. Either way the host's later commands
// (and submits) follow it.
inline void checker::record_host(const command& c) {
  if (host_scope_ == 0) host_scope_ = new_scope();
  const auto id = static_cast<std::uint32_t>(cmds_.size());
  cmd_info ci;
  ci.kind = c.kind;
  ci.queue = c.queue;
  ci.qall = host_scope_;
  ci.local = host_scope_;
  ci.idx = ++host_pos_;
  cmds_.push_back(ci);
  if (c.kind == command_kind::host_wait) {
    const auto& list = signals_[c.semaphore];
    const auto first = std::lower_bound(list.begin(), list.end(), c.value,
                                        [](const auto& sig, std::uint64_t v) { return sig.first < v; });
    for (std::size_t r = 0; r < relations(); ++r) host_k_[r].join(clock_at(r, first->second[r]));
  } else {
    for (const memory_access& a : c.accesses) check_access(id, a, none);
    record_accesses(c, id, none);
  }
  for (std::size_t r = 0; r < relations(); ++r) {
    if (dead_count_ != 0) drop_dead_scopes(host_k_[r]);
    if (collapsing_) drop_covered_passes(host_k_[r]);
    detail::raise(host_k_[r].at(host_scope_).every, ci.idx);
    max_clock_ = std::max(max_clock_, host_k_[r].size());
  }
  retire();
}

// A freed resource's records go: nothing after the free is compared with
// its earlier life (a later access to the same id is a new resource, as a
// reused Vulkan handle is). What they pinned (a barrier's clocks, a closed
// render pass without history) may be forgotten with them.
inline void checker::free_resource(const command& c) {
  cmd_info ci;
  ci.kind = c.kind;
  ci.queue = c.queue;
  cmds_.push_back(ci);
  const auto it = by_resource_.find(c.resource);
  if (it == by_resource_.end()) return;
  const std::vector<record> list = std::move(it->second);
  by_resource_.erase(it);
  resource_records_ -= list.size();
  for (const record& r : list) drop_record(r);
}

inline void checker::retire() {
  if (retiring_.empty()) {
    prune_global();
    return;
  }
  std::sort(retiring_.begin(), retiring_.end());
  for (std::size_t i = 0; i < retiring_.size();) {
    const std::uint32_t res = retiring_[i].first;
    std::size_t j = i;
    while (j < retiring_.size() && retiring_[j].first == res) ++j;
    const auto it = by_resource_.find(res);
    if (it != by_resource_.end()) {
      std::vector<record>& list = it->second;
      auto marked = [&](std::uint32_t seq) {
        return std::binary_search(retiring_.begin() + static_cast<std::ptrdiff_t>(i),
                                  retiring_.begin() + static_cast<std::ptrdiff_t>(j), std::make_pair(res, seq));
      };
      std::uint32_t oldest_live_write = none;
      for (record& r : list) {
        if (!marked(r.seq)) {
          if (r.t == record::type::write || r.t == record::type::transition) {
            oldest_live_write = std::min(oldest_live_write, r.seq);
          }
          continue;
        }
        r.retired = true;
      }
      std::erase_if(list, [&](const record& r) {
        bool gone = r.retired;
        if (r.t == record::type::flush) gone = r.seq < oldest_live_write;
        if (r.t == record::type::invalidate) gone = r.retired && r.seq < oldest_live_write;
        if (gone) {
          drop_record(r);
          --resource_records_;
        }
        return gone;
      });
      if (list.empty()) by_resource_.erase(it);
    }
    i = j;
  }
  retiring_.clear();
  prune_global();
}

// GLOBAL flushes and invalidates older than every live write are of no use
// any more; looked for once the list has doubled and grown by an eighth of
// the per-resource records, so the scan of those is paid for by the
// records it may drop. (Also after commands that retire nothing: a stream
// of fresh resources that are freed retires nothing but frees everything.)
inline void checker::prune_global() {
  if (global_records_.size() >= 2 * global_kept_ + 8 + resource_records_ / 8) {
    std::uint32_t oldest_live_write = none;
    for (const auto& [res, list] : by_resource_) {
      for (const record& r : list) {
        if (r.t == record::type::write || r.t == record::type::transition) {
          oldest_live_write = std::min(oldest_live_write, r.seq);
        }
      }
    }
    std::erase_if(global_records_, [&](const record& r) {
      const bool gone = r.seq < oldest_live_write;
      if (gone) drop_record(r);
      return gone;
    });
    global_kept_ = global_records_.size();
  }
}

inline void checker::check_events(std::uint32_t c, const command& cmd, const vclock& strict_k) {
  view v;
  v.r = 0;
  v.add(&strict_k);
  for (std::uint32_t e : cmd.events) {
    auto& ops = event_ops_[e];
    for (std::uint32_t p : ops) {
      const command_kind a = cmds_[p].kind;
      const command_kind b = cmd.kind;
      // The racing pairs: set/set, set/wait, set/reset, reset/wait.
      if (a == b && a != command_kind::set_event) continue;
      if (core_member(p, v)) continue;
      hazard h;
      h.kind = hazard_kind::event_race;
      h.first = p;
      h.second = c;
      h.event = e;
      report(h);
    }
    ops.push_back(c);
  }
}

}  // namespace check
CAUSAL_END_NAMESPACE
