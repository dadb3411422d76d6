// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// reference: the execution dependency graph built literally, every
// explicit edge of Vulkan's execution and memory dependency rules (with
// the interpretations listed in <causal/check/checker.hpp>), and its
// transitive closure by brute force. It exists to be obviously right, not
// fast: tests compare the vector-clock checker's every verdict with it and
// the benchmark measures what the clocks save.
//
// Nodes: 14 per action command (its stages); per sync command 14 SRC-stage
// nodes, SRC, PRE_TRANS, POST_TRANS, DST, 14 DST-stage nodes and one node
// per flush, transition and invalidate; per subpass 14 SRC and 14 DST
// stage nodes; per subpass dependency src, flush, node, invalidate, dst;
// one node per host command, chained in stream order (a submit after host
// commands is laid out as the checker records it: a barrier from HOST).
// Closure: a bitset of predecessors per node, filled in topological order.
//
// Thread safety: const members may be called concurrently.
// Memory order:  not applicable.
// Blocking/allocation: allocates O(nodes^2 / 8) bytes; never blocks.
// Size:          about 34 nodes per command: keep streams to a few hundred
//                commands.
// Configuration: none.
// See also:      <causal/check/checker.hpp>.
#pragma once

#include <causal/check/checker.hpp>
#include <causal/check/command_model.hpp>
#include <causal/config.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

CAUSAL_BEGIN_NAMESPACE
namespace check {

/// The brute-force model of one (already validated) stream.
class reference_graph {
 public:
  explicit reference_graph(const stream& s) : s_(s) {
    // A submit after host commands is the submission's memory dependency on
    // them (the checker's model): a barrier from HOST to every later
    // command of its queue, flushing host writes and invalidating for all,
    // whose SRC also follows the host's commands (edges()).
    eff_ = s.commands;
    bool host_seen = false;
    for (command& c : eff_) {
      if (c.kind == command_kind::host_access || c.kind == command_kind::host_wait) host_seen = true;
      if (c.kind != command_kind::submit || !host_seen) continue;
      c.kind = command_kind::pipeline_barrier;
      c.src_stages = host_stage_bit;
      c.dst_stages = all_commands_bit;
      c.barriers = {{bit(access_type::host_write), all_access, global_memory, false}};
      host_submits_.push_back(static_cast<std::uint32_t>(&c - eff_.data()));
    }
    layout();
    for (std::size_t r = 0; r < 2; ++r) {
      edges(r);
      close(r);
    }
    find_hazards();
  }

  [[nodiscard]] bool happens_before(point a, point b, relation rel = relation::strict) const {
    const std::uint32_t na = node_of(a), nb = node_of(b);
    if (na == none || nb == none) return false;
    return before(static_cast<std::size_t>(rel), na, nb);
  }

  /// Every hazard by Vulkan's rules, sorted.
  [[nodiscard]] const std::vector<hazard>& hazards() const noexcept { return hazards_; }
  /// Every finding of the stricter rules (is_warning), sorted.
  [[nodiscard]] const std::vector<hazard>& warnings() const noexcept { return warnings_; }
  [[nodiscard]] std::size_t node_count() const noexcept { return n_; }
  [[nodiscard]] std::size_t edge_count() const noexcept { return edge_total_; }

 private:
  static constexpr std::uint32_t none = 0xffffffffu;
  static constexpr std::size_t S = stage_count;

  struct item {  // a flush, transition or invalidate
    enum class type : std::uint8_t { flush, transition, invalidate } t;
    std::uint32_t node = 0;
    std::uint32_t command = 0;   // reported command
    std::uint32_t order = 0;     // stream order of the item
    std::uint32_t owner = 0;     // owning sync command or dependency (unique id)
    stage_set stages = 0;
    access_mask accs = 0;
    memory_range mem{};
    std::uint32_t fb_rp = none;
  };

  // The queue index of host commands: no queue's (they are in no queue scope).
  static constexpr std::uint32_t host_queue = 0xfffffffeu;
  static bool is_host(command_kind k) {
    return k == command_kind::host_access || k == command_kind::host_wait;
  }

  struct cmd_layout {
    std::uint32_t base = none;  // action: stage nodes; sync: SRCX nodes; host: its one node
    std::uint32_t queue = 0;
    std::uint32_t qpos = 0;      // position in its queue
    std::uint32_t rp = none;     // render pass instance when inside
    std::uint32_t subpass = none;
    bool sync = false;
  };

  struct rp_layout {
    std::uint32_t begin = 0, end = 0;  // commands
    std::uint32_t queue = 0;
    std::vector<std::uint32_t> sp_base;  // per subpass: SRCX at +0, DSTX at +14
    std::vector<std::uint32_t> sp_begin_cmd;
    struct dep {
      subpass_dependency d;
      std::uint32_t base = 0;  // src, flush, node, inv, dst
      std::uint32_t made_at = 0;
    };
    std::vector<dep> deps;
  };

  static bool is_sync(command_kind k) {
    return k == command_kind::pipeline_barrier || k == command_kind::set_event ||
           k == command_kind::reset_event || k == command_kind::wait_events ||
           k == command_kind::signal_semaphore || k == command_kind::wait_semaphore;
  }
  static bool has_dst(command_kind k) {
    return k == command_kind::pipeline_barrier || k == command_kind::wait_events ||
           k == command_kind::wait_semaphore;
  }
  std::uint32_t alloc(std::uint32_t k) {
    const std::uint32_t b = n_;
    n_ += k;
    return b;
  }
  // sync node offsets
  static constexpr std::uint32_t SRCX = 0, DSTX = 14, SRC = 28, PRE = 29, POST = 30, DST = 31;

  void layout() {
    const auto& cs = eff_;
    lay_.resize(cs.size());
    std::vector<std::uint32_t> qpos(s_.queues.size() + 1, 0);
    std::vector<std::uint32_t> open_rp;
    std::uint32_t order = 0;
    for (std::uint32_t i = 0; i < cs.size(); ++i) {
      const command& c = cs[i];
      if (c.kind == command_kind::free_resource) {  // no queue, no nodes
        cmd_order_.push_back(order);
        continue;
      }
      if (is_host(c.kind)) {  // one node on the host's timeline
        lay_[i].queue = host_queue;
        lay_[i].base = alloc(1);
        cmd_order_.push_back(order);
        continue;
      }
      if (open_rp.size() <= c.queue) open_rp.resize(c.queue + 1, none);
      if (qpos.size() <= c.queue) qpos.resize(c.queue + 1, 0);
      cmd_layout& l = lay_[i];
      l.queue = c.queue;
      l.qpos = qpos[c.queue]++;
      if (open_rp[c.queue] != none) {
        l.rp = open_rp[c.queue];
        l.subpass = static_cast<std::uint32_t>(rps_[l.rp].sp_begin_cmd.size() - 1);
      }
      if (c.kind == command_kind::action) {
        l.base = alloc(S);
      } else if (is_sync(c.kind)) {
        l.sync = true;
        l.base = alloc(32);
        const stage_set src = extract_stages(c.src_stages);
        const stage_set dst = extract_stages(c.dst_stages);
        const std::uint32_t owner = owner_id_++;
        if (c.kind == command_kind::signal_semaphore) {
          items_.push_back({item::type::flush, alloc(1), i, order++, owner, all_stages_set, all_access,
                            global_memory, none});
        } else if (has_dst(c.kind)) {
          std::vector<memory_barrier> mbs = c.barriers;
          if (c.kind == command_kind::wait_semaphore) mbs.assign(1, memory_barrier{0, all_access, global_memory, false});
          const std::uint32_t fb = (c.by_region && l.rp != none) ? l.rp : none;
          for (const memory_barrier& mb : mbs) {
            if (mb.src_access != 0 && src != 0) {
              items_.push_back({item::type::flush, alloc(1), i, order++, owner, src, mb.src_access, mb.mem, fb});
            }
          }
          for (const memory_barrier& mb : mbs) {
            if (mb.transition) {
              items_.push_back({item::type::transition, alloc(1), i, order++, owner, 0, 0, mb.mem, none});
            }
          }
          for (const memory_barrier& mb : mbs) {
            if (mb.dst_access != 0 && dst != 0) {
              items_.push_back({item::type::invalidate, alloc(1), i, order++, owner, dst, mb.dst_access, mb.mem, fb});
            }
          }
        }
      } else if (c.kind == command_kind::begin_render_pass) {
        rp_layout rp;
        rp.begin = i;
        rp.queue = c.queue;
        for (std::uint32_t k = 0; k < c.subpass_count; ++k) rp.sp_base.push_back(alloc(2 * S));
        rp.sp_begin_cmd.push_back(i);
        for (const subpass_dependency& d : c.dependencies) {
          if (d.src == d.dst) continue;
          rp.deps.push_back({d, alloc(5), 0});
        }
        rps_.push_back(std::move(rp));
        open_rp[c.queue] = static_cast<std::uint32_t>(rps_.size() - 1);
        l.rp = open_rp[c.queue];
        l.subpass = 0;
        dep_items(rps_.back(), 0, i, order);
      } else if (c.kind == command_kind::next_subpass) {
        rp_layout& rp = rps_[open_rp[c.queue]];
        rp.sp_begin_cmd.push_back(i);
        l.subpass = static_cast<std::uint32_t>(rp.sp_begin_cmd.size() - 1);
        dep_items(rp, l.subpass, i, order);
      } else if (c.kind == command_kind::end_render_pass) {
        rp_layout& rp = rps_[open_rp[c.queue]];
        rp.end = i;
        dep_items(rp, subpass_external, i, order);
        open_rp[c.queue] = none;
      }
      cmd_order_.push_back(order);
    }
  }

  void dep_items(rp_layout& rp, std::uint32_t dst, std::uint32_t cmd, std::uint32_t& order) {
    for (auto& dp : rp.deps) {
      if (dp.d.dst != dst) continue;
      dp.made_at = cmd;
      const std::uint32_t owner = owner_id_++;
      const stage_set src = extract_stages(dp.d.src_stages), dsts = extract_stages(dp.d.dst_stages);
      const std::uint32_t fb = (dp.d.by_region && dst != subpass_external)
                                   ? static_cast<std::uint32_t>(&rp - rps_.data())
                                   : none;
      if (dp.d.src_access != 0 && src != 0) {
        items_.push_back({item::type::flush, dp.base + 1, cmd, order++, owner, src, dp.d.src_access, global_memory, fb});
      }
      if (dp.d.dst_access != 0 && dsts != 0) {
        items_.push_back({item::type::invalidate, dp.base + 3, cmd, order++, owner, dsts, dp.d.dst_access, global_memory, fb});
      }
    }
  }

  void edge(std::size_t r, std::uint32_t a, std::uint32_t b) {
    succ_[r][a].push_back(b);
    ++edge_total_;
  }

  // Nodes X-stage "as a predecessor" of command a, for consumers fed by a.
  std::uint32_t out_node(std::uint32_t a, std::size_t x) const {
    return lay_[a].sync ? lay_[a].base + DSTX + static_cast<std::uint32_t>(x)
                        : lay_[a].base + static_cast<std::uint32_t>(x);
  }
  // Node X-stage "as a successor" of command b, for producers feeding b.
  std::uint32_t in_node(std::uint32_t b, std::size_t x) const {
    return lay_[b].sync ? lay_[b].base + SRCX + static_cast<std::uint32_t>(x)
                        : lay_[b].base + static_cast<std::uint32_t>(x);
  }
  bool node_cmd(std::uint32_t i) const { return lay_[i].base != none; }

  void edges(std::size_t r) {
    succ_[r].assign(n_, {});
    const auto& cs = eff_;
    // The host: its commands in stream order; a host wait follows the first
    // signal reaching its value; a submit after host commands follows them.
    std::uint32_t last_host = none;
    for (std::uint32_t i = 0; i < cs.size(); ++i) {
      if (is_host(cs[i].kind)) {
        if (last_host != none) edge(r, lay_[last_host].base, lay_[i].base);
        if (cs[i].kind == command_kind::host_wait) {
          for (std::uint32_t a = 0; a < i; ++a) {
            const command& y = cs[a];
            if (y.kind == command_kind::signal_semaphore && y.semaphore == cs[i].semaphore && y.value >= cs[i].value) {
              edge(r, lay_[a].base + DST, lay_[i].base);
              break;
            }
          }
        }
        last_host = i;
      } else if (std::binary_search(host_submits_.begin(), host_submits_.end(), i) && last_host != none) {
        edge(r, lay_[last_host].base, lay_[i].base + SRC);
      }
    }
    const std::uint32_t nc = static_cast<std::uint32_t>(cs.size());
    // Does the scope of sync command `b` (its queue, or its subpass) hold `a`?
    auto in_scope_of = [&](std::uint32_t b, std::uint32_t a) {
      if (lay_[a].queue != lay_[b].queue) return false;
      if (lay_[b].rp == none) return true;
      return lay_[a].rp == lay_[b].rp && lay_[a].subpass == lay_[b].subpass;
    };
    for (std::uint32_t i = 0; i < nc; ++i) {
      const command& c = cs[i];
      const cmd_layout& l = lay_[i];
      // Edges follow the execution scopes (logically earlier / later
      // stages included); the memory items of layout() the access scopes.
      const stage_set src = source_scope_stages(c.src_stages);
      const stage_set dst = destination_scope_stages(c.dst_stages);
      if (c.kind == command_kind::action) {
        for (std::size_t x = 1; x + 1 < S; ++x) {
          edge(r, l.base, l.base + static_cast<std::uint32_t>(x));
          edge(r, l.base + static_cast<std::uint32_t>(x), l.base + S - 1);
        }
        continue;
      }
      if (!l.sync) continue;
      const std::uint32_t b = l.base;
      // internal
      if (c.kind == command_kind::pipeline_barrier || c.kind == command_kind::set_event ||
          c.kind == command_kind::reset_event) {
        for (std::size_t x = 0; x < S; ++x) {
          if ((src >> x & 1u) != 0 || x == 0) edge(r, b + SRCX + static_cast<std::uint32_t>(x), b + SRC);
        }
      }
      edge(r, b + SRC, b + PRE);
      edge(r, b + PRE, b + POST);
      edge(r, b + POST, b + DST);
      if (has_dst(c.kind)) {
        for (std::size_t x = 0; x < S; ++x) {
          if ((dst >> x & 1u) != 0 || x == S - 1) edge(r, b + DST, b + DSTX + static_cast<std::uint32_t>(x));
        }
      }
      // BY_REGION only means something inside a render pass: outside, the
      // barrier is an ordinary one.
      const bool own_edges = !(r == 0 && c.by_region && c.kind == command_kind::pipeline_barrier && l.rp != none);
      // A-side
      if (own_edges && (c.kind == command_kind::pipeline_barrier || c.kind == command_kind::set_event ||
                        c.kind == command_kind::reset_event)) {
        for (std::uint32_t a = 0; a < i; ++a) {
          if (!node_cmd(a) || !in_scope_of(i, a)) continue;
          for (std::size_t x = 0; x < S; ++x) {
            if ((src >> x & 1u) != 0) edge(r, out_node(a, x), b + SRCX + static_cast<std::uint32_t>(x));
          }
        }
      }
      // B-side
      if (own_edges && has_dst(c.kind)) {
        for (std::uint32_t a = i + 1; a < nc; ++a) {
          if (!node_cmd(a) || !in_scope_of(i, a)) continue;
          for (std::size_t x = 0; x < S; ++x) {
            if ((dst >> x & 1u) != 0) edge(r, b + DSTX + static_cast<std::uint32_t>(x), in_node(a, x));
          }
        }
      }
      // events: chain
      if (c.kind == command_kind::set_event || c.kind == command_kind::reset_event) {
        for (std::uint32_t a = i + 1; a < nc; ++a) {
          const command& y = cs[a];
          if (y.queue != c.queue) continue;
          if (y.kind != command_kind::set_event && y.kind != command_kind::reset_event &&
              y.kind != command_kind::wait_events) continue;
          if (std::find(y.events.begin(), y.events.end(), c.events[0]) == y.events.end()) continue;
          edge(r, b + SRC, lay_[a].base + SRC);
        }
      }
      // semaphores
      if (c.kind == command_kind::signal_semaphore) {
        for (std::uint32_t a = 0; a < i; ++a) {
          if (!node_cmd(a) || lay_[a].queue != c.queue) continue;
          const std::uint32_t cnt = lay_[a].sync ? 32 : static_cast<std::uint32_t>(S);
          for (std::uint32_t k = 0; k < cnt; ++k) edge(r, lay_[a].base + k, b + SRC);
        }
        // and the command's own memory items hang off SRC
      }
      if (c.kind == command_kind::wait_semaphore) {
        for (std::uint32_t a = 0; a < i; ++a) {
          const command& y = cs[a];
          if (y.kind == command_kind::signal_semaphore && y.semaphore == c.semaphore && y.value >= c.value) {
            edge(r, lay_[a].base + DST, b + SRC);
            break;
          }
        }
      }
    }
    // items
    for (const item& it : items_) {
      if (it.owner >= owner_id_) continue;
      const command& c = cs[it.command];
      if (!is_sync(c.kind)) continue;  // dependency items: wired below
      const std::uint32_t b = lay_[it.command].base;
      switch (it.t) {
        case item::type::flush: edge(r, b + SRC, it.node); edge(r, it.node, b + PRE); break;
        case item::type::transition: edge(r, b + PRE, it.node); edge(r, it.node, b + POST); break;
        case item::type::invalidate: edge(r, b + POST, it.node); edge(r, it.node, b + DST); break;
      }
    }
    // semaphore signals also follow the memory items of earlier commands
    for (std::uint32_t i = 0; i < nc; ++i) {
      if (cs[i].kind != command_kind::signal_semaphore) continue;
      for (const item& it : items_) {
        if (it.command < i && is_sync(cs[it.command].kind) && lay_[it.command].queue == cs[i].queue) {
          edge(r, it.node, lay_[i].base + SRC);
        }
      }
    }
    // render passes
    for (std::size_t p = 0; p < rps_.size(); ++p) {
      const rp_layout& rp = rps_[p];
      for (std::size_t k = 0; k < rp.sp_base.size(); ++k) {
        const std::uint32_t sb = rp.sp_base[k];
        for (std::size_t x = 0; x < S; ++x) edge(r, sb + static_cast<std::uint32_t>(x), static_cast<std::uint32_t>(sb + S + x));
        for (std::uint32_t a = rp.begin + 1; a < rp.end; ++a) {
          if (!node_cmd(a) || lay_[a].queue != rp.queue || lay_[a].subpass != k) continue;
          for (std::size_t x = 0; x < S; ++x) {
            edge(r, sb + static_cast<std::uint32_t>(x), in_node(a, x));
            edge(r, out_node(a, x), static_cast<std::uint32_t>(sb + S + x));
          }
        }
      }
      for (const auto& dp : rp.deps) {
        const subpass_dependency& d = dp.d;
        const std::uint32_t db = dp.base;
        for (std::uint32_t k = 0; k < 4; ++k) edge(r, db + k, db + k + 1);
        if (r == 0 && d.by_region) continue;
        const stage_set src = source_scope_stages(d.src_stages), dst = destination_scope_stages(d.dst_stages);
        for (std::size_t x = 0; x < S; ++x) {
          if ((src >> x & 1u) != 0) {
            if (d.src == subpass_external) {
              for (std::uint32_t a = 0; a < rp.begin; ++a) {
                if (node_cmd(a) && lay_[a].queue == rp.queue) edge(r, out_node(a, x), db);
              }
            } else {
              edge(r, static_cast<std::uint32_t>(rp.sp_base[d.src] + S + x), db);
            }
          }
          if ((dst >> x & 1u) != 0) {
            if (d.dst == subpass_external) {
              for (std::uint32_t a = rp.end + 1; a < nc; ++a) {
                if (node_cmd(a) && lay_[a].queue == rp.queue) edge(r, db + 4, in_node(a, x));
              }
            } else {
              edge(r, db + 4, rp.sp_base[d.dst] + static_cast<std::uint32_t>(x));
            }
          }
        }
      }
    }
  }

  void close(std::size_t r) {
    const std::size_t words = (n_ + 63) / 64;
    pred_[r].assign(n_ * words, 0);
    std::vector<std::uint32_t> indeg(n_, 0);
    for (std::uint32_t a = 0; a < n_; ++a) {
      for (std::uint32_t b : succ_[r][a]) ++indeg[b];
    }
    std::vector<std::uint32_t> ready;
    for (std::uint32_t a = 0; a < n_; ++a) {
      if (indeg[a] == 0) ready.push_back(a);
    }
    std::size_t done = 0;
    while (!ready.empty()) {
      const std::uint32_t a = ready.back();
      ready.pop_back();
      ++done;
      std::uint64_t* pa = &pred_[r][a * words];
      for (std::uint32_t b : succ_[r][a]) {
        std::uint64_t* pb = &pred_[r][b * words];
        for (std::size_t w = 0; w < words; ++w) pb[w] |= pa[w];
        pb[a / 64] |= std::uint64_t{1} << (a % 64);
        if (--indeg[b] == 0) ready.push_back(b);
      }
    }
    cyclic_ = cyclic_ || done != n_;
  }

  bool before(std::size_t r, std::uint32_t a, std::uint32_t b) const {
    const std::size_t words = (n_ + 63) / 64;
    return (pred_[r][b * words + a / 64] >> (a % 64) & 1u) != 0;
  }

  std::uint32_t node_of(point p) const {
    if (p.command >= s_.commands.size()) return none;
    const command_kind k = s_.commands[p.command].kind;
    const cmd_layout& l = lay_[p.command];
    switch (p.where) {
      case point::part::stage:
        return k == command_kind::action ? l.base + static_cast<std::uint32_t>(p.stage) : none;
      case point::part::src:
        return l.sync ? l.base + SRC : none;
      case point::part::dst:
        return has_dst(k) ? l.base + DST : none;
    }
    return none;
  }

  //===-- hazards, pair by pair ---------------------------------------------===//

  struct acc_ref {
    std::uint32_t command, node, order;
    memory_access a;
    std::uint32_t fb;
  };

  void find_hazards() {
    const auto& cs = eff_;
    std::vector<acc_ref> accs;
    for (std::uint32_t i = 0; i < cs.size(); ++i) {
      if (cs[i].kind == command_kind::host_access) {
        for (const memory_access& a : cs[i].accesses) accs.push_back({i, lay_[i].base, cmd_order_[i], a, none});
        continue;
      }
      if (cs[i].kind != command_kind::action) continue;
      for (const memory_access& a : cs[i].accesses) {
        const std::uint32_t fb = framebuffer_local(a) ? lay_[i].rp : none;
        accs.push_back({i, lay_[i].base + static_cast<std::uint32_t>(a.stage), cmd_order_[i], a, fb});
      }
      // inside one command
      const auto& v = cs[i].accesses;
      for (std::size_t p = 0; p < v.size(); ++p) {
        for (std::size_t q = p + 1; q < v.size(); ++q) {
          const memory_access& a = v[p];
          const memory_access& b = v[q];
          if (a.stage == b.stage || (!a.write() && !b.write()) || !overlaps(a.mem, b.mem)) continue;
          const memory_access& w = a.write() ? a : b;
          const memory_access& o = a.write() ? b : a;
          hazards_.push_back(make(o.write() ? hazard_kind::write_after_write_race : hazard_kind::read_after_write_race,
                                  i, i, sbit(w.stage), sbit(o.stage), bit(w.access), bit(o.access), overlap(w.mem, o.mem)));
        }
      }
    }
    auto rel = [](std::uint32_t a, std::uint32_t b) { return (a != none && a == b) ? std::size_t{1} : std::size_t{0}; };
    // Retirement (the checker's rule, <causal/check/checker.hpp>): an
    // access, transition or buffer/image invalidate p is retired by the
    // first later command holding a write or transition w that covers p's
    // range, is compared with p in `<` (not `<_region`), and has nothing to
    // report against p (a read is also retired by a covering later read it
    // precedes). Pairs of p with anything in a command after w are not
    // checked: their verdicts follow from w's.
    std::vector<std::uint32_t> acc_retired(accs.size(), none), item_retired(items_.size(), none);
    auto retire_at = [](std::uint32_t& slot, std::uint32_t command) { slot = std::min(slot, command); };
    // A free ends its resource's life: nothing after it is compared with
    // an access or barrier item of that resource from before it.
    auto freed_after = [&](std::uint32_t resource, std::uint32_t command) {
      for (std::uint32_t f = command + 1; f < cs.size(); ++f) {
        if (cs[f].kind == command_kind::free_resource && cs[f].resource == resource) return f;
      }
      return none;
    };
    for (std::size_t i = 0; i < accs.size(); ++i) retire_at(acc_retired[i], freed_after(accs[i].a.mem.resource, accs[i].command));
    for (std::size_t i = 0; i < items_.size(); ++i) {
      if (!items_[i].mem.is_global()) retire_at(item_retired[i], freed_after(items_[i].mem.resource, items_[i].command));
    }
    for (std::size_t i = 0; i < accs.size(); ++i) {
      const acc_ref& p = accs[i];
      for (const acc_ref& w : accs) {
        if (w.command <= p.command || !is_subset(p.a.mem, w.a.mem) || rel(p.fb, w.fb) != 0) continue;
        if (!before(0, p.node, w.node)) continue;
        if (!w.a.write()) {
          if (!p.a.write()) retire_at(acc_retired[i], w.command);
          continue;
        }
        if (!p.a.write() || host_pair(p, w) ||
            flushed_and_invalidated(0, p.node, p.a.stage, p.a.access, w.node, w.a.stage, w.a.access, p.a.mem)) {
          retire_at(acc_retired[i], w.command);
        }
      }
      for (const item& t : items_) {
        if (t.t != item::type::transition || t.command <= p.command || !is_subset(p.a.mem, t.mem)) continue;
        if (!before(0, p.node, t.node)) continue;
        if (!p.a.write() || flushed_before(0, p.node, p.a.stage, p.a.access, t.node, p.a.mem)) {
          retire_at(acc_retired[i], t.command);
        }
      }
    }
    for (std::size_t i = 0; i < items_.size(); ++i) {
      const item& p = items_[i];
      if (p.t == item::type::flush || p.mem.is_global()) continue;
      for (const acc_ref& w : accs) {
        if (!w.a.write() || w.command <= p.command || !is_subset(p.mem, w.a.mem) || rel(p.fb_rp, w.fb) != 0) continue;
        if (!before(0, p.node, w.node)) continue;
        if (p.t == item::type::invalidate ||
            invalidated_after(0, p.node, w.node, w.a.stage, w.a.access, p.mem)) {
          retire_at(item_retired[i], w.command);
        }
      }
      for (const item& t : items_) {
        if (t.t != item::type::transition || t.command <= p.command || !is_subset(p.mem, t.mem)) continue;
        if (before(0, p.node, t.node)) retire_at(item_retired[i], t.command);
      }
    }
    auto acc_live = [&](std::size_t i, std::uint32_t at) { return acc_retired[i] == none || at <= acc_retired[i]; };
    auto item_live = [&](std::size_t i, std::uint32_t at) { return item_retired[i] == none || at <= item_retired[i]; };
    // access vs access
    for (std::size_t i = 0; i < accs.size(); ++i) {
      for (std::size_t j = 0; j < accs.size(); ++j) {
        const acc_ref& p = accs[i];
        const acc_ref& x = accs[j];
        if (p.command >= x.command || !acc_live(i, x.command)) continue;
        if (!p.a.write() && !x.a.write()) continue;
        if (!overlaps(p.a.mem, x.a.mem)) continue;
        const memory_range ov = overlap(p.a.mem, x.a.mem);
        const std::size_t r = rel(p.fb, x.fb);
        const bool ordered = before(r, p.node, x.node);
        if (p.a.write()) {
          if (!ordered) {
            hazards_.push_back(make(x.a.write() ? hazard_kind::write_after_write_race : hazard_kind::read_after_write_race,
                                    p.command, x.command, sbit(p.a.stage), sbit(x.a.stage), bit(p.a.access),
                                    bit(x.a.access), ov));
          } else if (!host_pair(p, x) &&
                     !flushed_and_invalidated(r, p.node, p.a.stage, p.a.access, x.node, x.a.stage, x.a.access, ov)) {
            hazards_.push_back(make(x.a.write() ? hazard_kind::write_without_visibility : hazard_kind::read_without_visibility,
                                    p.command, x.command, sbit(p.a.stage), sbit(x.a.stage), bit(p.a.access),
                                    bit(x.a.access), ov));
          }
        } else if (!ordered) {
          hazards_.push_back(make(hazard_kind::write_after_read_race, p.command, x.command, sbit(p.a.stage),
                                  sbit(x.a.stage), bit(p.a.access), bit(x.a.access), ov));
        }
      }
    }
    // items against accesses and each other
    for (std::size_t n = 0; n < items_.size(); ++n) {
      const item& it = items_[n];
      if (it.t == item::type::flush) continue;
      for (std::size_t i = 0; i < accs.size(); ++i) {
        const acc_ref& p = accs[i];
        if (!overlaps(p.a.mem, it.mem)) continue;
        const memory_range ov = overlap(p.a.mem, it.mem);
        const bool p_first = p.command < it.command;
        if (p_first ? !acc_live(i, it.command) : !item_live(n, p.command)) continue;
        if (it.t == item::type::transition) {
          if (p_first) {
            if (p.a.write()) {
              if (!before(0, p.node, it.node)) {
                hazards_.push_back(make(hazard_kind::write_after_write_race, p.command, it.command, sbit(p.a.stage), 0,
                                        bit(p.a.access), 0, ov));
              } else if (!flushed_before(0, p.node, p.a.stage, p.a.access, it.node, ov)) {
                hazards_.push_back(make(hazard_kind::write_without_visibility, p.command, it.command, sbit(p.a.stage), 0,
                                        bit(p.a.access), 0, ov));
              }
            } else if (!before(0, p.node, it.node)) {
              hazards_.push_back(make(hazard_kind::write_after_read_race, p.command, it.command, sbit(p.a.stage), 0,
                                      bit(p.a.access), 0, ov));
            }
          } else {
            if (!before(0, it.node, p.node)) {
              hazards_.push_back(make(p.a.write() ? hazard_kind::write_after_write_race : hazard_kind::read_after_write_race,
                                      it.command, p.command, 0, sbit(p.a.stage), 0, bit(p.a.access), ov));
            } else if (!invalidated_after(0, it.node, p.node, p.a.stage, p.a.access, ov)) {
              hazards_.push_back(make(p.a.write() ? hazard_kind::write_without_visibility : hazard_kind::read_without_visibility,
                                      it.command, p.command, 0, sbit(p.a.stage), 0, bit(p.a.access), ov));
            }
          }
        } else {  // invalidate
          if (!p.a.write()) continue;
          const std::size_t r = rel(p.fb, it.fb_rp);
          if (p_first) {
            if (!before(r, p.node, it.node)) {
              if (it.mem.is_global()) continue;
              hazards_.push_back(make(hazard_kind::write_invalidate_race, p.command, it.command, sbit(p.a.stage),
                                      it.stages, bit(p.a.access), it.accs, ov));
            } else if (!flushed_before(r, p.node, p.a.stage, p.a.access, it.node, ov)) {
              hazards_.push_back(make(hazard_kind::dirty_invalidate, p.command, it.command, sbit(p.a.stage), it.stages,
                                      bit(p.a.access), it.accs, ov));
            }
          } else if (!before(r, it.node, p.node) && !it.mem.is_global()) {
            hazards_.push_back(make(hazard_kind::write_invalidate_race, it.command, p.command, it.stages,
                                    sbit(p.a.stage), it.accs, bit(p.a.access), ov));
          }
        }
      }
      // transition vs earlier transition / invalidate, invalidate vs earlier transition
      for (std::size_t m = 0; m < items_.size(); ++m) {
        const item& o = items_[m];
        if (o.order >= it.order || o.t == item::type::flush || !item_live(m, it.command)) continue;
        if (!overlaps(o.mem, it.mem)) continue;
        if (o.t == item::type::invalidate && it.t == item::type::invalidate) continue;
        if ((o.t == item::type::invalidate && o.mem.is_global()) ||
            (it.t == item::type::invalidate && it.mem.is_global())) continue;
        const memory_range ov = overlap(o.mem, it.mem);
        if (!before(0, o.node, it.node)) {
          hazard_kind k = hazard_kind::write_invalidate_race;
          if (o.t == item::type::transition && it.t == item::type::transition) k = hazard_kind::write_after_write_race;
          hazards_.push_back(make(k, o.command, it.command, o.t == item::type::invalidate ? o.stages : 0,
                                  it.t == item::type::invalidate ? it.stages : 0,
                                  o.t == item::type::invalidate ? o.accs : 0,
                                  it.t == item::type::invalidate ? it.accs : 0, ov));
        }
      }
    }
    // events
    for (std::uint32_t i = 0; i < cs.size(); ++i) {
      const command& y = cs[i];
      if (y.kind != command_kind::set_event && y.kind != command_kind::reset_event && y.kind != command_kind::wait_events) continue;
      for (std::uint32_t e : y.events) {
        for (std::uint32_t p = 0; p < i; ++p) {
          const command& x = cs[p];
          if (x.kind != command_kind::set_event && x.kind != command_kind::reset_event && x.kind != command_kind::wait_events) continue;
          if (std::find(x.events.begin(), x.events.end(), e) == x.events.end()) continue;
          if (x.kind == y.kind && x.kind != command_kind::set_event) continue;
          if (!before(0, lay_[p].base + SRC, lay_[i].base + SRC)) {
            hazard h;
            h.kind = hazard_kind::event_race;
            h.first = p;
            h.second = i;
            h.event = e;
            hazards_.push_back(h);
          }
        }
      }
    }
    // The rules stricter than Vulkan's are warnings, apart from hazards.
    for (const hazard& h : hazards_) {
      if (is_warning(h.kind)) warnings_.push_back(h);
    }
    std::erase_if(hazards_, [](const hazard& h) { return is_warning(h.kind); });
    std::sort(hazards_.begin(), hazards_.end());
    std::sort(warnings_.begin(), warnings_.end());
  }

  // The host's accesses are coherent with one another (one timeline).
  static bool host_pair(const acc_ref& a, const acc_ref& b) {
    return a.a.stage == stage::host && b.a.stage == stage::host;
  }

  static stage_set sbit(stage s) { return static_cast<stage_set>(1u << static_cast<unsigned>(s)); }
  static hazard make(hazard_kind k, std::uint32_t a, std::uint32_t b, stage_set sa, stage_set sb, access_mask aa,
                     access_mask ab, memory_range ov) {
    hazard h;
    h.kind = k;
    h.first = a;
    h.second = b;
    h.first_stages = sa;
    h.second_stages = sb;
    h.first_access = aa;
    h.second_access = ab;
    h.range = ov;
    return h;
  }

  bool flush_matches(const item& f, stage s, access_type a, const memory_range& ov) const {
    return f.t == item::type::flush && contains(f.stages, s) && (f.accs & bit(a)) != 0 && is_subset(ov, f.mem);
  }
  bool inv_matches(const item& i, stage s, access_type a, const memory_range& ov) const {
    return i.t == item::type::invalidate && contains(i.stages, s) && (i.accs & bit(a)) != 0 && is_subset(ov, i.mem);
  }
  bool flushed_and_invalidated(std::size_t r, std::uint32_t w, stage ws, access_type wa, std::uint32_t x, stage xs,
                               access_type xa, const memory_range& ov) const {
    for (const item& f : items_) {
      if (!flush_matches(f, ws, wa, ov) || !before(r, w, f.node)) continue;
      for (const item& i : items_) {
        if (inv_matches(i, xs, xa, ov) && before(r, f.node, i.node) && before(r, i.node, x)) return true;
      }
    }
    return false;
  }
  bool flushed_before(std::size_t r, std::uint32_t w, stage ws, access_type wa, std::uint32_t target, const memory_range& ov) const {
    for (const item& f : items_) {
      if (flush_matches(f, ws, wa, ov) && before(r, w, f.node) && before(r, f.node, target)) return true;
    }
    return false;
  }
  bool invalidated_after(std::size_t r, std::uint32_t t, std::uint32_t x, stage xs, access_type xa, const memory_range& ov) const {
    for (const item& i : items_) {
      if (inv_matches(i, xs, xa, ov) && before(r, t, i.node) && before(r, i.node, x)) return true;
    }
    return false;
  }

  const stream& s_;
  std::vector<command> eff_;                 // the stream, host submits as barriers
  std::vector<std::uint32_t> host_submits_;  // which commands those are (sorted)
  std::uint32_t n_ = 0;
  std::uint32_t owner_id_ = 0;
  std::vector<cmd_layout> lay_;
  std::vector<rp_layout> rps_;
  std::vector<item> items_;
  std::vector<std::uint32_t> cmd_order_;
  std::array<std::vector<std::vector<std::uint32_t>>, 2> succ_{};
  std::array<std::vector<std::uint64_t>, 2> pred_{};
  std::vector<hazard> hazards_;
  std::vector<hazard> warnings_;
  std::size_t edge_total_ = 0;
  bool cyclic_ = false;
};

}  // namespace check
CAUSAL_END_NAMESPACE
