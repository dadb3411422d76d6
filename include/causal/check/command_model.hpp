// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// command_model: the hazard checker's own small model of a recorded GPU
// command stream: pipeline stages and their masks, access types, memory
// ranges, and the commands of Vulkan's synchronization model
// (action commands, pipeline barriers, events, render passes with subpass
// dependencies, semaphores, submission markers, and the end of a
// resource's life). No Vulkan header is used;
// the stage and access bit values match Vulkan 1.0's so a recorder can pass
// them through unchanged.
//
// Stages. extract_stages(mask) expands a stage mask into the concrete
// stages it names: each single stage bit yields that stage; ALL_GRAPHICS
// adds DRAW_INDIRECT .. COLOR_ATTACHMENT_OUTPUT and ALL_COMMANDS adds those
// plus COMPUTE_SHADER and TRANSFER. Neither adds TOP_OF_PIPE or
// BOTTOM_OF_PIPE (as in the reference formulation of Vulkan's dependency
// rules that the checker follows); neither adds HOST. That is a mask's
// *access* scope: Vulkan's access scopes hold only the stages a mask names.
// Its *execution* scope is wider (the specification's "pipeline stage
// order"): a source mask also covers every logically earlier stage and a
// destination mask every logically later one, per pipeline:
//   graphics  TOP < DRAW_INDIRECT < VERTEX_INPUT < VERTEX_SHADER <
//             TESSELLATION_CONTROL < TESSELLATION_EVALUATION < GEOMETRY <
//             EARLY_FRAGMENT_TESTS < FRAGMENT_SHADER < LATE_FRAGMENT_TESTS <
//             COLOR_ATTACHMENT_OUTPUT < BOTTOM
//   compute   TOP < DRAW_INDIRECT < COMPUTE_SHADER < BOTTOM
//   transfer  TOP < TRANSFER < BOTTOM
// A stage in several pipelines (DRAW_INDIRECT) takes the union. So a
// source COMPUTE_SHADER covers DRAW_INDIRECT, a destination DRAW_INDIRECT
// covers COMPUTE_SHADER and every later graphics stage, a source
// BOTTOM_OF_PIPE (a destination TOP_OF_PIPE) covers every stage -- the
// specification's "equivalent to ALL_COMMANDS with no access" -- while
// TRANSFER covers only itself. source_scope_stages / destination_scope_stages
// compute these sets; the checker and the reference use them for every
// execution edge and extract_stages for every flush and invalidate.
//
// The host. HOST (bit 14, after BOTTOM_OF_PIPE; no queue runs it) is the
// stage of host commands: host_access (the host reads or writes mapped
// memory, HOST_READ / HOST_WRITE) and host_wait (vkWaitSemaphores, or a
// fence written as a semaphore signalled once). The host is one timeline in
// stream order, its accesses ordered and coherent with one another. A
// queue's `submit` after host commands follows all of them and makes their
// writes visible to every later command of that queue (Vulkan's host write
// ordering guarantee). A host_wait follows the signal it waits for but makes
// nothing visible: device writes reach the host only through a barrier
// with destination HOST and HOST_READ before the signal, as Vulkan says.
//
// Memory. A range names a resource and a half-open box [x0,x1) x [y0,y1): a
// buffer uses x for bytes (y is the whole axis), an image uses x for mip
// levels and y for array layers. `global_memory` stands for all memory,
// GLOBAL (only in flushes and invalidates: a global memory barrier's or a
// semaphore's access scope). Distinct resources never overlap (aliasing is
// not modelled).
//
// Thread safety: value types; distinct objects may be used concurrently.
// Memory order:  not applicable.
// Blocking/allocation: never blocks; commands own std::vector/std::string
//                members, so building one allocates.
// Size:          not a hot-path type.
// Configuration: none.
// See also:      <causal/check/checker.hpp>, docs/hazard_checker.md.
#pragma once

#include <causal/config.hpp>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

CAUSAL_BEGIN_NAMESPACE
namespace check {

//===-- stages --------------------------------------------------------------===//

/// The pipeline stages of the model, in Vulkan's bit order.
enum class stage : std::uint8_t {
  top_of_pipe,
  draw_indirect,
  vertex_input,
  vertex_shader,
  tessellation_control_shader,
  tessellation_evaluation_shader,
  geometry_shader,
  fragment_shader,
  early_fragment_tests,
  late_fragment_tests,
  color_attachment_output,
  compute_shader,
  transfer,
  bottom_of_pipe,
  host,  ///< the host's reads and writes of device memory (not a pipeline stage)
};

/// The device pipeline stages (TOP_OF_PIPE .. BOTTOM_OF_PIPE): what a queue's
/// clocks track. HOST is after them and is no queue's stage.
inline constexpr std::size_t stage_count = 14;
/// Every stage with a name, HOST included.
inline constexpr std::size_t named_stage_count = 15;

/// A VkPipelineStageFlags-compatible mask (bit i = stage i; the two
/// pseudo-stages below use Vulkan's bit values).
using stage_mask = std::uint32_t;

inline constexpr stage_mask all_graphics_bit = 0x8000u;
inline constexpr stage_mask all_commands_bit = 0x10000u;
inline constexpr stage_mask host_stage_bit = 0x4000u;
inline constexpr stage_mask valid_stage_bits = 0x3fffu | host_stage_bit | all_graphics_bit | all_commands_bit;

[[nodiscard]] constexpr stage_mask bit(stage s) noexcept {
  return stage_mask{1} << static_cast<unsigned>(s);
}

/// A set of concrete stages (bit i = stage i), the result of extract_stages.
using stage_set = std::uint16_t;

inline constexpr stage_set all_stages_set = 0x3fff;

/// The concrete stages of `mask`, with ALL_GRAPHICS and ALL_COMMANDS expanded
/// (neither includes HOST: Vulkan's ALL_COMMANDS is what a queue runs).
[[nodiscard]] constexpr stage_set extract_stages(stage_mask mask) noexcept {
  stage_set out = static_cast<stage_set>(mask & (0x3fffu | host_stage_bit));
  if ((mask & all_graphics_bit) != 0) out |= 0x07fe;  // DRAW_INDIRECT..COLOR_ATTACHMENT_OUTPUT
  if ((mask & all_commands_bit) != 0) out |= 0x1ffe;  // ... plus COMPUTE_SHADER, TRANSFER
  return out;
}

[[nodiscard]] constexpr bool contains(stage_set set, stage s) noexcept {
  return (set >> static_cast<unsigned>(s) & 1u) != 0;
}

namespace detail {

/// Per stage: the stages logically earlier (`earlier`) and later (`later`)
/// than it in some pipeline it belongs to; see the header comment.
struct logical_stage_order {
  std::array<stage_set, stage_count> earlier{};
  std::array<stage_set, stage_count> later{};
};

template <std::size_t N>
constexpr void add_pipeline_order(logical_stage_order& order, const std::array<stage, N>& pipeline) noexcept {
  for (std::size_t i = 0; i < N; ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      const auto before = static_cast<std::size_t>(pipeline[j]);
      const auto after = static_cast<std::size_t>(pipeline[i]);
      order.earlier[after] = static_cast<stage_set>(order.earlier[after] | (1u << before));
      order.later[before] = static_cast<stage_set>(order.later[before] | (1u << after));
    }
  }
}

constexpr logical_stage_order make_logical_stage_order() noexcept {
  logical_stage_order order;
  add_pipeline_order(order, std::array<stage, 12>{
                                stage::top_of_pipe, stage::draw_indirect, stage::vertex_input,
                                stage::vertex_shader, stage::tessellation_control_shader,
                                stage::tessellation_evaluation_shader, stage::geometry_shader,
                                stage::early_fragment_tests, stage::fragment_shader,
                                stage::late_fragment_tests, stage::color_attachment_output,
                                stage::bottom_of_pipe});
  add_pipeline_order(order, std::array<stage, 4>{stage::top_of_pipe, stage::draw_indirect,
                                                 stage::compute_shader, stage::bottom_of_pipe});
  add_pipeline_order(order, std::array<stage, 3>{stage::top_of_pipe, stage::transfer, stage::bottom_of_pipe});
  return order;
}

inline constexpr logical_stage_order logical_order = make_logical_stage_order();

}  // namespace detail

/// The first synchronization (execution) scope of a source stage mask: the
/// stages it names plus every logically earlier stage.
[[nodiscard]] constexpr stage_set source_scope_stages(stage_mask mask) noexcept {
  const stage_set named = extract_stages(mask);
  stage_set out = named;
  for (std::size_t s = 0; s < stage_count; ++s) {
    if ((named >> s & 1u) != 0) out = static_cast<stage_set>(out | detail::logical_order.earlier[s]);
  }
  return out;
}

/// The second synchronization (execution) scope of a destination stage
/// mask: the stages it names plus every logically later stage.
[[nodiscard]] constexpr stage_set destination_scope_stages(stage_mask mask) noexcept {
  const stage_set named = extract_stages(mask);
  stage_set out = named;
  for (std::size_t s = 0; s < stage_count; ++s) {
    if ((named >> s & 1u) != 0) out = static_cast<stage_set>(out | detail::logical_order.later[s]);
  }
  return out;
}

/// Framebuffer-space stages: where BY_REGION dependencies apply.
inline constexpr stage_set framebuffer_stages =
    (1u << 7) | (1u << 8) | (1u << 9) | (1u << 10);

inline constexpr std::array<std::string_view, named_stage_count> stage_names = {
    "TOP_OF_PIPE",
    "DRAW_INDIRECT",
    "VERTEX_INPUT",
    "VERTEX_SHADER",
    "TESSELLATION_CONTROL_SHADER",
    "TESSELLATION_EVALUATION_SHADER",
    "GEOMETRY_SHADER",
    "FRAGMENT_SHADER",
    "EARLY_FRAGMENT_TESTS",
    "LATE_FRAGMENT_TESTS",
    "COLOR_ATTACHMENT_OUTPUT",
    "COMPUTE_SHADER",
    "TRANSFER",
    "BOTTOM_OF_PIPE",
    "HOST",
};

[[nodiscard]] constexpr std::string_view to_string(stage s) noexcept {
  return stage_names[static_cast<std::size_t>(s)];
}

//===-- access types --------------------------------------------------------===//

/// Access types, in VkAccessFlagBits order (MEMORY_* omitted: MEMORY_READ /
/// MEMORY_WRITE exist only as mask shorthands). HOST_READ and HOST_WRITE
/// happen only at the HOST stage, in host commands.
enum class access_type : std::uint8_t {
  indirect_command_read,
  index_read,
  vertex_attribute_read,
  uniform_read,
  input_attachment_read,
  shader_read,
  shader_write,
  color_attachment_read,
  color_attachment_write,
  depth_stencil_attachment_read,
  depth_stencil_attachment_write,
  transfer_read,
  transfer_write,
  host_read,
  host_write,
};

inline constexpr std::size_t access_type_count = 15;

/// A mask of access types (bit i = access_type i).
using access_mask = std::uint32_t;

inline constexpr access_mask all_write_access = (1u << 6) | (1u << 8) | (1u << 10) | (1u << 12) | (1u << 14);
inline constexpr access_mask all_read_access = 0x7fffu & ~all_write_access;
inline constexpr access_mask all_access = 0x7fffu;
inline constexpr access_mask host_access_types = (1u << 13) | (1u << 14);

[[nodiscard]] constexpr access_mask bit(access_type a) noexcept {
  return access_mask{1} << static_cast<unsigned>(a);
}
[[nodiscard]] constexpr bool is_write(access_type a) noexcept {
  return (all_write_access & bit(a)) != 0;
}

inline constexpr std::array<std::string_view, access_type_count> access_names = {
    "INDIRECT_COMMAND_READ",
    "INDEX_READ",
    "VERTEX_ATTRIBUTE_READ",
    "UNIFORM_READ",
    "INPUT_ATTACHMENT_READ",
    "SHADER_READ",
    "SHADER_WRITE",
    "COLOR_ATTACHMENT_READ",
    "COLOR_ATTACHMENT_WRITE",
    "DEPTH_STENCIL_ATTACHMENT_READ",
    "DEPTH_STENCIL_ATTACHMENT_WRITE",
    "TRANSFER_READ",
    "TRANSFER_WRITE",
    "HOST_READ",
    "HOST_WRITE",
};

[[nodiscard]] constexpr std::string_view to_string(access_type a) noexcept {
  return access_names[static_cast<std::size_t>(a)];
}

//===-- memory --------------------------------------------------------------===//

inline constexpr std::uint32_t global_resource = std::numeric_limits<std::uint32_t>::max();
inline constexpr std::uint64_t whole = std::numeric_limits<std::uint64_t>::max();

/// A resource and a half-open box of it; see the header comment.
struct memory_range {
  std::uint32_t resource = global_resource;
  std::uint64_t x0 = 0, x1 = whole;
  std::uint64_t y0 = 0, y1 = whole;

  [[nodiscard]] constexpr bool is_global() const noexcept { return resource == global_resource; }
  [[nodiscard]] constexpr bool empty() const noexcept { return x0 >= x1 || y0 >= y1; }
  friend constexpr bool operator==(const memory_range&, const memory_range&) noexcept = default;
};

inline constexpr memory_range global_memory{};

/// The intersection of two ranges (possibly empty). With GLOBAL on one side
/// it is the other side.
[[nodiscard]] constexpr memory_range overlap(const memory_range& a, const memory_range& b) noexcept {
  if (a.is_global()) return b;
  if (b.is_global()) return a;
  memory_range r{a.resource, a.x0 > b.x0 ? a.x0 : b.x0, a.x1 < b.x1 ? a.x1 : b.x1,
                 a.y0 > b.y0 ? a.y0 : b.y0, a.y1 < b.y1 ? a.y1 : b.y1};
  if (a.resource != b.resource || r.empty()) return memory_range{a.resource, 0, 0, 0, 0};
  return r;
}

[[nodiscard]] constexpr bool overlaps(const memory_range& a, const memory_range& b) noexcept {
  return !overlap(a, b).empty();
}

/// Whether `big` covers `small`: `big` is GLOBAL or contains `small`.
[[nodiscard]] constexpr bool is_subset(const memory_range& small, const memory_range& big) noexcept {
  if (big.is_global()) return true;
  if (small.is_global()) return false;
  return small.resource == big.resource && big.x0 <= small.x0 && small.x1 <= big.x1 &&
         big.y0 <= small.y0 && small.y1 <= big.y1;
}

//===-- commands ------------------------------------------------------------===//

enum class command_kind : std::uint8_t {
  action,             ///< draw, dispatch, copy, clear, fill, update ...
  pipeline_barrier,
  set_event,
  reset_event,
  wait_events,
  begin_render_pass,
  next_subpass,
  end_render_pass,
  signal_semaphore,   ///< at a submission boundary: follows everything before it
  wait_semaphore,     ///< at a submission boundary: blocks `dst_stages` after it
  submit,             ///< a command-buffer boundary (grouping only)
  free_resource,      ///< the end of `resource`'s life (vkDestroyBuffer / vkDestroyImage): no queue
  host_access,        ///< the host reads / writes mapped memory (accesses at HOST): no queue
  host_wait,          ///< the host waits for a semaphore value (vkWaitSemaphores, a fence): no queue
};

[[nodiscard]] constexpr std::string_view to_string(command_kind k) noexcept {
  switch (k) {
    case command_kind::action: return "action";
    case command_kind::pipeline_barrier: return "barrier";
    case command_kind::set_event: return "set_event";
    case command_kind::reset_event: return "reset_event";
    case command_kind::wait_events: return "wait_events";
    case command_kind::begin_render_pass: return "begin_render_pass";
    case command_kind::next_subpass: return "next_subpass";
    case command_kind::end_render_pass: return "end_render_pass";
    case command_kind::signal_semaphore: return "signal";
    case command_kind::wait_semaphore: return "wait";
    case command_kind::submit: return "submit";
    case command_kind::free_resource: return "free";
    case command_kind::host_access: return "host";
    case command_kind::host_wait: return "host_wait";
  }
  return "unknown";
}

/// One READ or WRITE of an action command: the access that command c makes
/// at `stage`, of type `access`, to the range `mem`.
struct memory_access {
  check::stage stage = stage::top_of_pipe;
  access_type access = access_type::shader_read;
  memory_range mem{};
  [[nodiscard]] bool write() const noexcept { return is_write(access); }
};

/// Attachment accesses (input, color, depth/stencil): what a
/// framebuffer-local (BY_REGION) dependency orders, pixel by pixel.
inline constexpr access_mask attachment_access = (1u << 4) | (1u << 7) | (1u << 8) | (1u << 9) | (1u << 10);

/// True when a framebuffer-local dependency can order `a`: an attachment
/// access at a framebuffer-space stage. A fragment shader's storage
/// buffer or image access is not: another fragment (region) may touch it.
[[nodiscard]] constexpr bool framebuffer_local(const memory_access& a) noexcept {
  return contains(framebuffer_stages, a.stage) && (bit(a.access) & attachment_access) != 0;
}

/// A global, buffer or image memory barrier. `transition` marks an image
/// layout transition (oldLayout != newLayout).
struct memory_barrier {
  access_mask src_access = 0;
  access_mask dst_access = 0;
  memory_range mem = global_memory;
  bool transition = false;
};

inline constexpr std::uint32_t subpass_external = std::numeric_limits<std::uint32_t>::max();

/// A VkSubpassDependency; `src`/`dst` are subpass indices or
/// subpass_external.
struct subpass_dependency {
  std::uint32_t src = subpass_external;
  std::uint32_t dst = subpass_external;
  stage_mask src_stages = 0;
  stage_mask dst_stages = 0;
  access_mask src_access = 0;
  access_mask dst_access = 0;
  bool by_region = false;
};

/// One recorded command. Which members matter depends on `kind`:
///   action             accesses
///   pipeline_barrier   src_stages, dst_stages, by_region, barriers
///   set/reset_event    events[0], src_stages (the stageMask)
///   wait_events        events, src_stages, dst_stages, barriers
///   begin_render_pass  subpass_count, dependencies
///   signal_semaphore   semaphore, value
///   wait_semaphore     semaphore, value, dst_stages
///   free_resource      resource (queue unused)
///   host_access        accesses, all at HOST with HOST_READ / HOST_WRITE (queue unused)
///   host_wait          semaphore, value (queue unused)
struct command {
  command_kind kind = command_kind::action;
  std::uint32_t queue = 0;
  std::string label;
  std::vector<memory_access> accesses;
  stage_mask src_stages = 0;
  stage_mask dst_stages = 0;
  bool by_region = false;
  std::vector<memory_barrier> barriers;
  std::vector<std::uint32_t> events;
  std::uint32_t subpass_count = 0;
  std::vector<subpass_dependency> dependencies;
  std::uint32_t semaphore = 0;
  std::uint64_t value = 0;
  std::uint32_t resource = global_resource;
};

/// A whole recorded stream: the commands of every queue, interleaved in an
/// order in which they could execute (each semaphore wait after the signal
/// it waits for), plus the names used in reports.
struct stream {
  std::vector<std::string> queues;
  std::vector<std::string> resources;
  std::vector<std::string> events;
  std::vector<std::string> semaphores;
  std::vector<command> commands;
};

}  // namespace check
CAUSAL_END_NAMESPACE
