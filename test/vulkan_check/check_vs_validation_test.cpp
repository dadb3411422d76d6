// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// check_vs_validation: the hazard checker (<causal/check/checker.hpp>)
// against the Khronos synchronization validation layer, the last proof
// item of issue 10. Each scenario is one small list of steps (compute
// dispatches, direct or indirect, buffer copies, copies from a buffer into
// an image and back, pipeline barriers with global, buffer and image memory
// barriers, one event's set and wait, command-buffer boundaries, and render
// passes with draws, subpasses and subpass dependencies) that is turned two
// ways: into causal::check's command model, which the checker
// judges, and into real commands recorded on a VkQueue (Mesa lavapipe here)
// under VK_LAYER_KHRONOS_validation with synchronization validation, whose
// SYNC-HAZARD-* messages a debug messenger collects. The test asserts, per
// scenario, that the checker reports a hazard exactly when the layer does,
// that both match the planted verdict, and that the kinds agree (checker
// kind -> the layer's READ-AFTER-WRITE / WRITE-AFTER-READ /
// WRITE-AFTER-WRITE; the checker's dirty-invalidate, write/invalidate and
// event kinds have no counterpart and count only towards the verdict). Any
// other validation error fails the test: it would mean the Vulkan half is
// wrong.
//
// Planted hazards are mostly write-then-read and read-then-write. This
// layer version (1.3.239) does report write-after-write between a copy and
// a dispatch or between two copies, but not between two dispatches that
// write one storage buffer (with no barrier, or with an execution-only
// one), which the checker does report; that scenario is marked
// `layer_blind` (with the reason, printed) and only the checker's verdict
// is asserted for it, plus that the layer still reports nothing: a layer
// that sees the hazard fails the test with a message saying the marker can
// go. Three render-pass scenarios below are marked the same way.
//
// A scenario may plant invalid usage instead (`validation_error`): a
// wait_events whose srcStageMask is not its set_event's stageMask. The
// checker must refuse that command and the layer report that VUID (as an
// error, not a SYNC-HAZARD), and neither may report a hazard.
//
// The layer agrees with the checker on logically earlier and later stages
// (a source COMPUTE_SHADER covers an indirect dispatch's DRAW_INDIRECT read,
// a destination DRAW_INDIRECT covers a later COMPUTE_SHADER write, TRANSFER
// covers neither): the four indirect-dispatch scenarios. Two more fix the
// graphics order EARLY_FRAGMENT_TESTS < FRAGMENT_SHADER through barrier
// chaining, which the layer judges even on a compute-only stream.
//
// BY_REGION: a barrier step may carry VK_DEPENDENCY_BY_REGION_BIT (the
// model's `command.by_region`). Outside a render pass, where all of these
// run, it changes nothing, since it only concerns framebuffer-space stages
// inside one: a BY_REGION barrier orders and flushes like a plain one (two
// clean scenarios) and hides no hazard (a BY_REGION barrier to the wrong
// stage is still a read-after-write on both sides).
//
// Vulkan's rules, not stricter ones: a global invalidate before the copy's
// write is flushed, followed by a flush and invalidate that do cover the
// later read, is clean for the layer and for the default checker (the one
// used here). The checker's stricter dirty-invalidate rule is opt-in
// (checker_options::warnings); that scenario (`breaks_stricter_rule`) also
// asserts that the rule, when asked for, flags it as a warning only.
//
// Images. Scenarios may use the image I (the color attachment T is
// below): 16x8 R32_UINT, optimal tiling, one mip level and array layer, in
// device memory, as many bytes as a buffer (model resource id 5, after the
// five buffers; its range is mip level 0 x array layer 0). copy_to_image
// (vkCmdCopyBufferToImage) is a TRANSFER read of its buffer and TRANSFER
// write of I, copy_from_image (vkCmdCopyImageToBuffer) the reverse. An
// image barrier names its image, access masks and old and new layout; old
// != new is a layout transition (the model's memory_barrier with
// `transition` on the image's range), old == new an ordinary memory
// barrier. The recorder tracks I's and T's layouts: every image barrier
// must name its image's as its old layout, the copies use I in it, and
// every scenario with I starts with a transition from UNDEFINED, which nothing before it
// can race (no hazard on either side). Both sides agree that an upload,
// transition and readback synchronised with the right masks is clean, that
// an image barrier with old == new flushes like a buffer barrier, that a
// transition with srcAccessMask 0 right after a copy into I is a
// write-after-write (the copy's write was never made available), and that
// a transition whose source stages do not reach an earlier copy's read of
// I is a write-after-read.
//
// Where the layer is wrong (`layer_wrong`, naming the hazard it reports and
// why the specification disagrees), only the checker is held to the planted
// verdict; the layer must still report that hazard, and the disagreement is
// printed, so that a newer layer that is fixed fails the test with a
// message saying the marker can go. One scenario has it: a copy into I,
// then a TRANSFER->TRANSFER global barrier with srcAccessMask TRANSFER_WRITE
// and dstAccessMask 0 (a flush alone), then a TRANSFER->TRANSFER transition
// with srcAccessMask 0. The two barriers chain, so the flush's availability
// operation happens before the transition, and the specification's "Image
// Layout Transitions" section makes available memory visible to a layout
// transition without more: no hazard, and the checker reports none. Layer
// 1.3.239 reports SYNC-HAZARD-WRITE-AFTER-WRITE against the copy
// ("write_barriers: 0"): it remembers of a write only the accesses barriers
// made it visible to, so a flush with an empty dstAccessMask leaves no
// trace and the transition's own srcAccessMask must name the write
// (reported as Vulkan-ValidationLayers issue 6508). The same happens with
// an image barrier with old == new layout as the flush.
//
// Render passes. A begin_render_pass step gets its own VkRenderPass: one
// subpass or two, each with the one color attachment T (a second image,
// model resource id 6: 16x8 R32_UINT like I, with its own view and a
// framebuffer per render pass) in COLOR_ATTACHMENT_OPTIMAL, the step's
// subpass dependencies (EXTERNAL is the model's subpass_external;
// VK_DEPENDENCY_BY_REGION_BIT its by_region), and a graphics pipeline per
// subpass. A draw is one triangle covering T (cover.vert, no vertex input)
// whose fragment shader (copy_words.frag) reads the storage buffer `in`
// and writes `out` -- FRAGMENT_SHADER SHADER_READ / SHADER_WRITE of the
// descriptor ranges, as the layer records them -- and writes T at
// COLOR_ATTACHMENT_OUTPUT. Each fragment reads the word of the mirrored
// pixel, so a draw that reads what an earlier draw wrote takes words that
// other fragments (other framebuffer regions) wrote.
// T's layout: every render-pass scenario starts with an explicit
// transition of T from UNDEFINED to COLOR_ATTACHMENT_OPTIMAL (TOP_OF_PIPE
// -> COLOR_ATTACHMENT_OUTPUT, 0 -> COLOR_ATTACHMENT_WRITE), modelled like
// I's, and the attachment description's initial and final layouts are
// COLOR_ATTACHMENT_OPTIMAL: the render pass makes no automatic layout
// transition, which the model could not express, and so has no implicit
// external dependency either. T's load op is CLEAR and its store op STORE,
// both COLOR_ATTACHMENT_WRITEs at COLOR_ATTACHMENT_OUTPUT for the layer.
// The render pass orders the load before the first subpass's draws and
// the store after the last subpass's; the model has no load or store op and orders two actions of one subpass only
// by barriers, so they are folded into the draw's own write of T (the same
// access at the same stage of one command). Every subpass of a scenario
// has a draw, and two draws of one subpass are separated by a barrier that
// orders their writes of T (the layer orders them by rasterization order,
// which the model does not know). A pipeline barrier inside a render pass
// is allowed only under a self-dependency of its subpass that covers it,
// and with framebuffer-space stages on both sides that self-dependency
// (and so the barrier, whose flags must equal it) must be BY_REGION; it
// carries only a global memory barrier.
//
// What the render-pass scenarios show:
//  - Logically later stages, memory still named: a COMPUTE_SHADER ->
//    VERTEX_SHADER barrier SHADER_WRITE -> SHADER_READ on B, before a
//    render pass whose draw's fragment shader reads B, orders the fragment
//    shader (VERTEX_SHADER covers it as a destination) but makes B visible
//    only to the vertex shader: READ-AFTER-WRITE on both sides (the layer:
//    "write_barriers: SYNC_VERTEX_SHADER_..."), none with FRAGMENT_SHADER.
//    The same through the render pass's own EXTERNAL -> 0 dependency.
//  - A fragment shader's storage write, read by a later dispatch: clean
//    with a FRAGMENT_SHADER -> COMPUTE_SHADER barrier after the render
//    pass, or with a 0 -> EXTERNAL dependency of those masks;
//    READ-AFTER-WRITE on both sides with neither.
//  - Two subpasses, subpass 0's fragment shader writing B and subpass 1's
//    reading it, with a 0 -> 1 FRAGMENT_SHADER -> FRAGMENT_SHADER
//    SHADER_WRITE -> SHADER_READ dependency (and a BY_REGION 0 -> 1
//    COLOR_ATTACHMENT_OUTPUT dependency for their writes of T, which are
//    framebuffer-local): clean on both sides.
//  - Where the layer is blind (`layer_blind`; the checker follows the
//    specification). The same two subpasses with the storage dependency
//    BY_REGION, and one subpass whose two draws (B written, then read) are
//    separated by a BY_REGION barrier under a BY_REGION self-dependency:
//    a framebuffer-local dependency orders only same-region work, and a
//    storage buffer that other fragments wrote is not covered, so the
//    checker reports READ-AFTER-WRITE; layer 1.3.239 reports nothing,
//    since its synchronization validation never reads dependencyFlags (a
//    subpass dependency's or a barrier's) and orders by-region dependencies
//    as full ones. And two subpasses that both write T with no dependency
//    for T (only the storage one): the checker reports WRITE-AFTER-WRITE on
//    T; the layer applies rasterization order to a color attachment write
//    after any earlier one, whichever subpass it came from, while the
//    specification guarantees rasterization order only within a subpass.
//
// No scenario uses the HOST stage: this layer does not track host accesses
// to mapped memory, so it could not agree or disagree.
//
// The stage and access bits of the command model are Vulkan 1.0's, so the
// masks of a step go to both sides unchanged (static_asserts below).
//
// Skips (exit 77) with the reason when there is no Vulkan loader, driver or
// device (one with a graphics and compute queue and fragmentStoresAndAtomics),
// or no validation layer. Sets XDG_RUNTIME_DIR when unset (lavapipe
// wants it) and VK_LAYER_ENABLES so the layer also checks hazards between
// submissions (VALIDATION_CHECK_ENABLE_SYNCHRONIZATION_VALIDATION_QUEUE_SUBMIT
// cannot be enabled through VkValidationFeaturesEXT in this layer version).
//
// Thread safety: single-threaded; the messenger's log is mutex-guarded
//                since drivers may call back from their own threads.
// See also:      test/vulkan_check/meson.build, copy_words.comp,
//                cover.vert, copy_words.frag,
//                test/unit/check_checker_test.cpp.

#include "catch.hpp"
#include "catch_session.hpp"
#include "skip.hpp"
#include "vulkan_layer_tsan.hpp"

#include <causal/check/checker.hpp>
#include <causal/check/command_model.hpp>
#include <causal/check/stream_text.hpp>

#include <vulkan/vulkan.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

namespace ck = causal::check;

// The command model passes Vulkan's bit values through.
static_assert(ck::bit(ck::stage::top_of_pipe) == VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT);
static_assert(ck::bit(ck::stage::draw_indirect) == VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT);
static_assert(ck::bit(ck::stage::vertex_shader) == VK_PIPELINE_STAGE_VERTEX_SHADER_BIT);
static_assert(ck::bit(ck::stage::early_fragment_tests) == VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT);
static_assert(ck::bit(ck::stage::fragment_shader) == VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT);
static_assert(ck::bit(ck::stage::color_attachment_output) == VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT);
static_assert(ck::bit(ck::stage::compute_shader) == VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
static_assert(ck::bit(ck::stage::transfer) == VK_PIPELINE_STAGE_TRANSFER_BIT);
static_assert(ck::bit(ck::stage::bottom_of_pipe) == VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT);
static_assert(ck::all_commands_bit == VK_PIPELINE_STAGE_ALL_COMMANDS_BIT);
static_assert(ck::bit(ck::access_type::indirect_command_read) == VK_ACCESS_INDIRECT_COMMAND_READ_BIT);
static_assert(ck::bit(ck::access_type::shader_read) == VK_ACCESS_SHADER_READ_BIT);
static_assert(ck::bit(ck::access_type::shader_write) == VK_ACCESS_SHADER_WRITE_BIT);
static_assert(ck::bit(ck::access_type::transfer_read) == VK_ACCESS_TRANSFER_READ_BIT);
static_assert(ck::bit(ck::access_type::transfer_write) == VK_ACCESS_TRANSFER_WRITE_BIT);
static_assert(ck::bit(ck::access_type::color_attachment_write) == VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT);
static_assert(ck::subpass_external == VK_SUBPASS_EXTERNAL);

//===-- scenarios -----------------------------------------------------------===//

constexpr std::uint32_t buffer_count = 5;   // A, B, C, D, E
constexpr std::uint32_t buffer_bytes = 512;
constexpr std::uint32_t half = buffer_bytes / 2;
enum : std::uint32_t { A, B, C, D, E };
/// Every buffer starts as {2, 1, 1, 0, ...} (written by the host before
/// any submission), so any of them can hold an indirect dispatch's group
/// counts: 2 x 64 invocations cover the 128 words of a buffer, and the
/// copies and dispatches of a scenario keep the words small.
constexpr std::uint32_t indirect_args_bytes = 12;

/// The one image, I: a 16x8 R32_UINT texel grid (one mip level, one array
/// layer), as many bytes as a buffer, so a whole buffer is copied into it
/// or out of it in one region. Its model resource id follows the buffers'.
constexpr std::uint32_t image_id = buffer_count;
constexpr std::uint32_t image_width = 16;
constexpr std::uint32_t image_height = 8;
static_assert(image_width * image_height * sizeof(std::uint32_t) == buffer_bytes);
/// The color attachment, T: like I (16x8 R32_UINT), the one attachment of
/// every render pass, each draw's fragment shader writing its pixel.
constexpr std::uint32_t attachment_id = image_id + 1;
constexpr const char* resource_names[] = {"A", "B", "C", "D", "E", "I", "T"};

/// Bytes [offset, offset+size) of buffer `buffer`.
struct span {
  std::uint32_t buffer = 0;
  std::uint32_t offset = 0;
  std::uint32_t size = buffer_bytes;
};

struct buffer_barrier {
  ck::access_mask src_access = 0;
  ck::access_mask dst_access = 0;
  span where;
};

/// An image memory barrier on all of `image` (I or T): a layout transition
/// when `old_layout` != `new_layout`, otherwise an ordinary memory barrier.
struct image_barrier {
  ck::access_mask src_access = 0;
  ck::access_mask dst_access = 0;
  vk::ImageLayout old_layout = vk::ImageLayout::eUndefined;
  vk::ImageLayout new_layout = vk::ImageLayout::eUndefined;
  std::uint32_t image = image_id;
  [[nodiscard]] bool transition() const { return old_layout != new_layout; }
};

enum class op {
  dispatch,
  dispatch_indirect,
  copy,
  copy_to_image,
  copy_from_image,
  barrier,
  set_event,
  wait_events,
  next_command_buffer,
  begin_render_pass,
  draw,
  next_subpass,
  end_render_pass
};

/// One step. dispatch: copy_words reads `in`, writes `out` (COMPUTE_SHADER).
/// dispatch_indirect: the same, its group counts read from `args`
/// (INDIRECT_COMMAND_READ at DRAW_INDIRECT).
/// copy: vkCmdCopyBuffer `in` -> `out` (TRANSFER). copy_to_image:
/// vkCmdCopyBufferToImage, the whole buffer `in` into all of I (a TRANSFER
/// read of `in`, a TRANSFER write of I). copy_from_image:
/// vkCmdCopyImageToBuffer, all of I into the whole buffer `out` (a TRANSFER
/// read of I, a TRANSFER write of `out`). Both use I in the layout its
/// latest image barrier left it in. barrier: a pipeline barrier, with a
/// global memory barrier when `global`, any buffer and image barriers, and
/// VK_DEPENDENCY_BY_REGION_BIT when `by_region`. set_event: vkCmdSetEvent
/// of the scenario's one event with stageMask `src_stages`. wait_events:
/// vkCmdWaitEvents on it with `src_stages`, `dst_stages` and the memory
/// barriers of a barrier step. next_command_buffer: end this command buffer
/// and submit the rest in the next one (the model's `submit`).
/// begin_render_pass: vkCmdBeginRenderPass of a render pass made for this
/// step: `subpass_count` subpasses, each with T as its one color
/// attachment, and `dependencies`; draw: one triangle covering T, whose
/// fragment shader reads `in` and writes `out` (FRAGMENT_SHADER) and writes
/// T (COLOR_ATTACHMENT_OUTPUT); next_subpass, end_render_pass: as named.
/// A barrier inside a render pass needs a self-dependency of its subpass
/// that covers it, and may carry only a global memory barrier.
struct step {
  op kind = op::dispatch;
  span in{};
  span out{};
  span args{};
  ck::stage_mask src_stages = 0;
  ck::stage_mask dst_stages = 0;
  bool by_region = false;
  bool global = false;
  ck::access_mask global_src = 0;
  ck::access_mask global_dst = 0;
  std::vector<buffer_barrier> buffers{};
  std::vector<image_barrier> images{};
  std::uint32_t subpass_count = 0;
  std::vector<ck::subpass_dependency> dependencies{};
};

step dispatch(span in, span out) { return {.kind = op::dispatch, .in = in, .out = out}; }
step dispatch_indirect(span args, span in, span out) {
  return {.kind = op::dispatch_indirect, .in = in, .out = out, .args = {args.buffer, args.offset, indirect_args_bytes}};
}
step copy(span in, span out) { return {.kind = op::copy, .in = in, .out = out}; }
step copy_to_image(span in) { return {.kind = op::copy_to_image, .in = in}; }
step copy_from_image(span out) { return {.kind = op::copy_from_image, .out = out}; }
step barrier(ck::stage_mask src, ck::stage_mask dst) {
  return {.kind = op::barrier, .src_stages = src, .dst_stages = dst};
}
step by_region_barrier(ck::stage_mask src, ck::stage_mask dst) {
  return {.kind = op::barrier, .src_stages = src, .dst_stages = dst, .by_region = true};
}
step with_global(step s, ck::access_mask src, ck::access_mask dst) {
  s.global = true;
  s.global_src = src;
  s.global_dst = dst;
  return s;
}
step with_buffer(step s, ck::access_mask src, ck::access_mask dst, span where) {
  s.buffers.push_back({src, dst, where});
  return s;
}
step with_image(step s, ck::access_mask src, ck::access_mask dst, vk::ImageLayout old_layout,
                vk::ImageLayout new_layout) {
  s.images.push_back({src, dst, old_layout, new_layout});
  return s;
}
step set_event(ck::stage_mask stages) { return {.kind = op::set_event, .src_stages = stages}; }
step wait_events(ck::stage_mask src, ck::stage_mask dst) {
  return {.kind = op::wait_events, .src_stages = src, .dst_stages = dst};
}
step next_command_buffer() { return {.kind = op::next_command_buffer}; }
step begin_render_pass(std::uint32_t subpasses, std::vector<ck::subpass_dependency> dependencies = {}) {
  return {.kind = op::begin_render_pass, .subpass_count = subpasses, .dependencies = std::move(dependencies)};
}
step draw(span in, span out) { return {.kind = op::draw, .in = in, .out = out}; }
step next_subpass() { return {.kind = op::next_subpass}; }
step end_render_pass() { return {.kind = op::end_render_pass}; }

constexpr ck::stage_mask top_of_pipe = ck::bit(ck::stage::top_of_pipe);
constexpr ck::stage_mask draw_indirect = ck::bit(ck::stage::draw_indirect);
constexpr ck::stage_mask compute = ck::bit(ck::stage::compute_shader);
constexpr ck::stage_mask fragment_shader = ck::bit(ck::stage::fragment_shader);
constexpr ck::stage_mask early_fragment_tests = ck::bit(ck::stage::early_fragment_tests);
constexpr ck::stage_mask transfer = ck::bit(ck::stage::transfer);
constexpr ck::stage_mask vertex_shader = ck::bit(ck::stage::vertex_shader);
constexpr ck::stage_mask color_output = ck::bit(ck::stage::color_attachment_output);
constexpr ck::access_mask shader_read = ck::bit(ck::access_type::shader_read);
constexpr ck::access_mask shader_write = ck::bit(ck::access_type::shader_write);
constexpr ck::access_mask transfer_read = ck::bit(ck::access_type::transfer_read);
constexpr ck::access_mask transfer_write = ck::bit(ck::access_type::transfer_write);
constexpr ck::access_mask color_write = ck::bit(ck::access_type::color_attachment_write);
constexpr vk::ImageLayout undefined = vk::ImageLayout::eUndefined;
constexpr vk::ImageLayout transfer_src = vk::ImageLayout::eTransferSrcOptimal;
constexpr vk::ImageLayout transfer_dst = vk::ImageLayout::eTransferDstOptimal;
constexpr vk::ImageLayout color_attachment = vk::ImageLayout::eColorAttachmentOptimal;

/// T's first use: a transition from UNDEFINED to COLOR_ATTACHMENT_OPTIMAL
/// made visible to the render pass's color writes (its load op, the
/// draws), so that each render pass starts in the layout its attachment
/// description names and makes no transition of its own.
step attachment_transition() {
  step s = barrier(top_of_pipe, color_output);
  s.images.push_back({0, color_write, undefined, color_attachment, attachment_id});
  return s;
}

/// A verdict this layer version gets wrong, by the specification: the
/// layer reports `reported` (a SYNC-HAZARD-* name) where the checker,
/// following the specification for the reason given, reports otherwise.
struct layer_disagreement {
  const char* reported = nullptr;
  const char* reason = nullptr;
};

struct scenario {
  const char* name;
  std::vector<step> steps;
  bool hazard;               ///< the planted verdict
  /// Set where this layer version does not report the planted hazard: why
  /// (printed). Only the checker's verdict is asserted.
  const char* layer_blind = nullptr;
  /// Invalid usage both sides must refuse: the checker refuses a command,
  /// and the layer reports an error (not a hazard) whose text holds this.
  const char* validation_error = nullptr;
  /// Set (`reported` not null) where this layer version is wrong: the
  /// checker must give the planted verdict and the layer must still report
  /// `reported`, so that a layer that is fixed fails the test and the
  /// marker goes.
  layer_disagreement layer_wrong{};
  /// The stream breaks the checker's opt-in rule that is stricter than
  /// Vulkan's (an invalidate before the flush, checker_options::warnings):
  /// with warnings on the checker must say so, as a warning only.
  bool breaks_stricter_rule = false;
};

std::vector<scenario> scenarios() {
  const span a{A}, b{B}, c{C}, d{D}, e{E};
  const char* const by_region_blind =
      "this layer version ignores VK_DEPENDENCY_BY_REGION_BIT (its barriers and subpass dependencies never read "
      "dependencyFlags), so a framebuffer-local dependency orders the fragment shaders' storage accesses for it as a "
      "full one; by the specification it orders only same-region work, and the read of B takes words other "
      "fragments (other regions) wrote";
  return {
      {"dispatch writes B, dispatch reads B, no barrier",
       {dispatch(a, b), dispatch(b, c)}, true},
      {"dispatch writes B, COMPUTE->COMPUTE barrier SHADER_WRITE->SHADER_READ on B, dispatch reads B",
       {dispatch(a, b), with_buffer(barrier(compute, compute), shader_write, shader_read, b), dispatch(b, c)},
       false},
      {"copy writes B, execution-only TRANSFER->COMPUTE barrier, dispatch reads B",
       {copy(a, b), barrier(transfer, compute), dispatch(b, c)}, true},
      {"copy writes B, TRANSFER->COMPUTE barrier TRANSFER_WRITE->SHADER_READ (global), dispatch reads B",
       {copy(a, b), with_global(barrier(transfer, compute), transfer_write, shader_read), dispatch(b, c)}, false},
      {"copy writes B, TRANSFER->COMPUTE buffer barrier with the wrong source access, dispatch reads B",
       {copy(a, b), with_buffer(barrier(transfer, compute), transfer_read, shader_read, b), dispatch(b, c)},
       true},
      {"dispatch writes B, barrier to the wrong stage (COMPUTE->TRANSFER), dispatch reads B",
       {dispatch(a, b), with_global(barrier(compute, transfer), shader_write, transfer_read), dispatch(b, c)},
       true},
      {"dispatch writes B, copy writes B, no barrier",
       {dispatch(a, b), copy(a, b)}, true},
      {"copy writes B, execution-only TRANSFER->TRANSFER barrier, copy writes B",
       {copy(a, b), barrier(transfer, transfer), copy(c, b)}, true},
      {"copy writes B, TRANSFER->TRANSFER barrier TRANSFER_WRITE->TRANSFER_WRITE on B, copy writes B",
       {copy(a, b), with_buffer(barrier(transfer, transfer), transfer_write, transfer_write, b), copy(c, b)},
       false},
      // The layer is blind here (see the file comment): only the checker's
      // verdict is asserted.
      {"dispatch writes B, dispatch writes B, no barrier",
       {dispatch(a, b), dispatch(c, b)}, true,
       "this layer version does not report write-after-write between two dispatches writing one storage buffer"},
      {"dispatch reads B, copy writes B, no barrier",
       {dispatch(b, c), copy(a, b)}, true},
      {"dispatch reads B, execution-only COMPUTE->TRANSFER barrier, copy writes B",
       {dispatch(b, c), barrier(compute, transfer), copy(a, b)}, false},
      {"dispatch writes B[0:256], dispatch reads B[256:512], no barrier",
       {dispatch(a, span{B, 0, half}), dispatch(span{B, half, half}, span{C, 0, half})}, false},
      {"dispatch writes B[0:256], dispatch reads B[128:384], no barrier",
       {dispatch(a, span{B, 0, half}), dispatch(span{B, half / 2, half}, span{C, 0, half})}, true},
      {"dispatch writes B, next command buffer, dispatch reads B, no barrier",
       {dispatch(a, b), next_command_buffer(), dispatch(b, c)}, true},
      {"dispatch writes B, next command buffer, COMPUTE->COMPUTE barrier SHADER_WRITE->SHADER_READ, dispatch reads B",
       {dispatch(a, b), next_command_buffer(), with_global(barrier(compute, compute), shader_write, shader_read),
        dispatch(b, c)},
       false},
      {"copy writes B, barrier TRANSFER->COMPUTE TRANSFER_WRITE->SHADER_READ on D only, dispatch reads B",
       {copy(a, b), with_buffer(barrier(transfer, compute), transfer_write, shader_read, d), dispatch(b, c)}, true},
      // Logically earlier and later stages (issue 22, item 1): COMPUTE_SHADER
      // as a source covers DRAW_INDIRECT, DRAW_INDIRECT as a destination
      // covers COMPUTE_SHADER; TRANSFER is in neither's pipeline.
      {"indirect dispatch reads args in E, execution-only COMPUTE->TRANSFER barrier, copy writes E",
       {dispatch_indirect(e, a, c), barrier(compute, transfer), copy(b, e)}, false},
      {"indirect dispatch reads args in E, execution-only DRAW_INDIRECT->DRAW_INDIRECT barrier, dispatch writes E",
       {dispatch_indirect(e, a, c), barrier(draw_indirect, draw_indirect), dispatch(b, e)}, false},
      {"indirect dispatch reads args in E, execution-only TRANSFER->COMPUTE barrier, dispatch writes E",
       {dispatch_indirect(e, a, c), barrier(transfer, compute), dispatch(b, e)}, true},
      {"indirect dispatch reads args in E, execution-only DRAW_INDIRECT->DRAW_INDIRECT barrier, copy writes E",
       {dispatch_indirect(e, a, c), barrier(draw_indirect, draw_indirect), copy(b, e)}, true},
      // Graphics order EARLY_FRAGMENT_TESTS < FRAGMENT_SHADER, seen through
      // chaining: a destination FRAGMENT_SHADER (and later) meets a source
      // FRAGMENT_SHADER (and earlier) but not a source EARLY_FRAGMENT_TESTS.
      {"dispatch reads B, barriers COMPUTE->EARLY_FRAGMENT_TESTS and FRAGMENT_SHADER->TRANSFER (chained), copy writes B",
       {dispatch(b, c), barrier(compute, early_fragment_tests), barrier(fragment_shader, transfer), copy(a, b)}, false},
      {"dispatch reads B, barriers COMPUTE->FRAGMENT_SHADER and EARLY_FRAGMENT_TESTS->TRANSFER (not chained), copy "
       "writes B",
       {dispatch(b, c), barrier(compute, fragment_shader), barrier(early_fragment_tests, transfer), copy(a, b)}, true},
      // Events (issue 22, item 4): a split barrier orders like a barrier; a
      // wait whose srcStageMask is not the OR of the sets' stage masks is
      // a validation error on both sides (VUID-vkCmdWaitEvents-srcStageMask-01158).
      {"dispatch writes B, set_event COMPUTE, wait_events COMPUTE->COMPUTE SHADER_WRITE->SHADER_READ on B, "
       "dispatch reads B",
       {dispatch(a, b), set_event(compute),
        with_buffer(wait_events(compute, compute), shader_write, shader_read, b), dispatch(b, c)},
       false},
      {"dispatch writes B, set_event COMPUTE, execution-only wait_events COMPUTE->COMPUTE, dispatch reads B",
       {dispatch(a, b), set_event(compute), wait_events(compute, compute), dispatch(b, c)}, true},
      {"set_event COMPUTE, wait_events with src TRANSFER: not the set's stage mask",
       {set_event(compute), wait_events(transfer, compute)}, false, nullptr, "VUID-vkCmdWaitEvents-srcStageMask"},
      // BY_REGION outside a render pass changes nothing: it only concerns
      // framebuffer-space stages inside one.
      {"dispatch writes B, BY_REGION COMPUTE->COMPUTE barrier SHADER_WRITE->SHADER_READ on B, dispatch reads B",
       {dispatch(a, b), with_buffer(by_region_barrier(compute, compute), shader_write, shader_read, b),
        dispatch(b, c)},
       false},
      {"dispatch reads B, BY_REGION execution-only COMPUTE->TRANSFER barrier, copy writes B",
       {dispatch(b, c), by_region_barrier(compute, transfer), copy(a, b)}, false},
      {"dispatch writes B, BY_REGION barrier to the wrong stage (COMPUTE->TRANSFER), dispatch reads B",
       {dispatch(a, b), with_global(by_region_barrier(compute, transfer), shader_write, transfer_read),
        dispatch(b, c)},
       true},
      // Vulkan's rules, not stricter ones: an invalidate before the write
      // is flushed is allowed, since a later flush and invalidate still
      // make the write visible to the read.
      {"copy writes B, TRANSFER->COMPUTE barrier 0->SHADER_READ (global: an invalidate before any flush), "
       "TRANSFER->COMPUTE barrier TRANSFER_WRITE->SHADER_READ on B, dispatch reads B",
       {copy(a, b), with_global(barrier(transfer, compute), 0, shader_read),
        with_buffer(barrier(transfer, compute), transfer_write, shader_read, b), dispatch(b, c)},
       false, nullptr, nullptr, {}, /*breaks_stricter_rule=*/true},
      // Image I and its layout transitions. The first use of I is a
      // transition from UNDEFINED, which nothing before it can race.
      {"transition I UNDEFINED->TRANSFER_DST, copy A->I, TRANSFER->TRANSFER transition TRANSFER_DST->TRANSFER_SRC "
       "TRANSFER_WRITE->TRANSFER_READ, copy I->B",
       {with_image(barrier(top_of_pipe, transfer), 0, transfer_write, undefined, transfer_dst), copy_to_image(a),
        with_image(barrier(transfer, transfer), transfer_write, transfer_read, transfer_dst, transfer_src),
        copy_from_image(b)},
       false},
      {"transition I UNDEFINED->TRANSFER_DST, copy A->I, TRANSFER->TRANSFER barrier TRANSFER_WRITE->TRANSFER_WRITE "
       "on I (old == new layout: no transition), copy C->I",
       {with_image(barrier(top_of_pipe, transfer), 0, transfer_write, undefined, transfer_dst), copy_to_image(a),
        with_image(barrier(transfer, transfer), transfer_write, transfer_write, transfer_dst, transfer_dst),
        copy_to_image(c)},
       false},
      // Ends at the transition: a read after it would also be reported
      // by the checker against the copy's write (never flushed, so never
      // retired by the transition), by the layer against the transition.
      {"transition I UNDEFINED->TRANSFER_DST, copy A->I, TRANSFER->TRANSFER transition TRANSFER_DST->TRANSFER_SRC "
       "with srcAccess 0 (the copy's write not flushed)",
       {with_image(barrier(top_of_pipe, transfer), 0, transfer_write, undefined, transfer_dst), copy_to_image(a),
        with_image(barrier(transfer, transfer), 0, transfer_read, transfer_dst, transfer_src)},
       true},
      // The racing transition must follow the first one (through the
      // TRANSFER->COMPUTE barrier) so that the read is all it races.
      {"transition I UNDEFINED->TRANSFER_SRC, execution-only TRANSFER->COMPUTE barrier, copy I->B, COMPUTE->TRANSFER "
       "transition TRANSFER_SRC->TRANSFER_DST (no dependency on the copy's read)",
       {with_image(barrier(top_of_pipe, transfer), 0, transfer_read, undefined, transfer_src),
        barrier(transfer, compute), copy_from_image(b),
        with_image(barrier(compute, transfer), 0, transfer_write, transfer_src, transfer_dst)},
       true},
      // The layer is wrong here (see the file comment): the checker's
      // verdict is asserted, and the layer's false report is required and
      // printed, so that a fixed layer fails the test.
      {"transition I UNDEFINED->TRANSFER_DST, copy A->I, TRANSFER->TRANSFER barrier TRANSFER_WRITE->0 (global: the "
       "flush), TRANSFER->TRANSFER transition TRANSFER_DST->TRANSFER_SRC with srcAccess 0, copy I->B",
       {with_image(barrier(top_of_pipe, transfer), 0, transfer_write, undefined, transfer_dst), copy_to_image(a),
        with_global(barrier(transfer, transfer), transfer_write, 0),
        with_image(barrier(transfer, transfer), 0, transfer_read, transfer_dst, transfer_src), copy_from_image(b)},
       false, nullptr, nullptr,
       {"SYNC-HAZARD-WRITE-AFTER-WRITE",
        "the transition's barrier chains with the flushing barrier (TRANSFER->TRANSFER, then TRANSFER->TRANSFER), "
        "so the copy's write is available before the transition, and by the specification's \"Image Layout "
        "Transitions\" available memory is visible to a transition; the layer keeps only the accesses a write was "
        "made visible to (write_barriers: 0 after dstAccessMask 0), so it wants the write in the transition's own "
        "srcAccessMask (Vulkan-ValidationLayers issue 6508)"}},
      // Render passes. Each starts with T's transition to
      // COLOR_ATTACHMENT_OPTIMAL, the layout the render pass keeps it in.
      // A destination VERTEX_SHADER blocks the fragment shader too, but
      // its access scope is the vertex shader's alone: the fragment
      // shader's read is not made visible.
      {"dispatch writes B, COMPUTE->VERTEX_SHADER barrier SHADER_WRITE->SHADER_READ on B, render pass: the draw's "
       "fragment shader reads B",
       {attachment_transition(), dispatch(a, b),
        with_buffer(barrier(compute, vertex_shader), shader_write, shader_read, b), begin_render_pass(1), draw(b, c),
        end_render_pass()},
       true},
      {"dispatch writes B, COMPUTE->FRAGMENT_SHADER barrier SHADER_WRITE->SHADER_READ on B, render pass: the draw's "
       "fragment shader reads B",
       {attachment_transition(), dispatch(a, b),
        with_buffer(barrier(compute, fragment_shader), shader_write, shader_read, b), begin_render_pass(1), draw(b, c),
        end_render_pass()},
       false},
      // The same orders through the render pass's own dependency from
      // EXTERNAL, and the wrong destination stage there is the same hazard.
      {"dispatch writes B, render pass with dependency EXTERNAL->0 COMPUTE->FRAGMENT_SHADER SHADER_WRITE->SHADER_READ: "
       "the draw's fragment shader reads B",
       {attachment_transition(), dispatch(a, b),
        begin_render_pass(1, {{ck::subpass_external, 0, compute, fragment_shader, shader_write, shader_read, false}}),
        draw(b, c), end_render_pass()},
       false},
      {"dispatch writes B, render pass with dependency EXTERNAL->0 COMPUTE->VERTEX_SHADER SHADER_WRITE->SHADER_READ: "
       "the draw's fragment shader reads B",
       {attachment_transition(), dispatch(a, b),
        begin_render_pass(1, {{ck::subpass_external, 0, compute, vertex_shader, shader_write, shader_read, false}}),
        draw(b, c), end_render_pass()},
       true},
      // A fragment shader's storage write, read after the render pass.
      {"render pass: the draw's fragment shader writes B; FRAGMENT_SHADER->COMPUTE barrier SHADER_WRITE->SHADER_READ "
       "on B, dispatch reads B",
       {attachment_transition(), begin_render_pass(1), draw(a, b), end_render_pass(),
        with_buffer(barrier(fragment_shader, compute), shader_write, shader_read, b), dispatch(b, c)},
       false},
      {"render pass: the draw's fragment shader writes B; no barrier, dispatch reads B",
       {attachment_transition(), begin_render_pass(1), draw(a, b), end_render_pass(), dispatch(b, c)}, true},
      {"render pass with dependency 0->EXTERNAL FRAGMENT_SHADER->COMPUTE SHADER_WRITE->SHADER_READ: the draw's "
       "fragment shader writes B; dispatch reads B",
       {attachment_transition(),
        begin_render_pass(1, {{0, ck::subpass_external, fragment_shader, compute, shader_write, shader_read, false}}),
        draw(a, b), end_render_pass(), dispatch(b, c)},
       false},
      // Two subpasses: subpass 0's fragment shader writes B, subpass 1's
      // reads it, through a dependency 0 -> 1 FRAGMENT_SHADER ->
      // FRAGMENT_SHADER. (Both draws write T: a BY_REGION dependency 0 -> 1
      // COLOR_ATTACHMENT_OUTPUT -> COLOR_ATTACHMENT_OUTPUT orders that,
      // which is framebuffer-local, in both.)
      {"two subpasses: subpass 0's fragment shader writes B, dependency 0->1 FRAGMENT_SHADER->FRAGMENT_SHADER "
       "SHADER_WRITE->SHADER_READ, subpass 1's fragment shader reads B",
       {attachment_transition(),
        begin_render_pass(2, {{0, 1, fragment_shader, fragment_shader, shader_write, shader_read, false},
                              {0, 1, color_output, color_output, color_write, color_write, true}}),
        draw(a, b), next_subpass(), draw(b, c), end_render_pass()},
       false},
      // Without the color dependency the two subpasses' writes of T race.
      {"two subpasses, dependency 0->1 FRAGMENT_SHADER->FRAGMENT_SHADER SHADER_WRITE->SHADER_READ only: both draws "
       "write T",
       {attachment_transition(),
        begin_render_pass(2, {{0, 1, fragment_shader, fragment_shader, shader_write, shader_read, false}}), draw(a, b),
        next_subpass(), draw(b, c), end_render_pass()},
       true,
       "the layer orders a color attachment write after an earlier one by rasterization order whichever subpass "
       "that was in; the specification guarantees rasterization order only within a subpass, and subpasses with no "
       "dependency between them may overlap"},
      {"two subpasses: subpass 0's fragment shader writes B, BY_REGION dependency 0->1 "
       "FRAGMENT_SHADER->FRAGMENT_SHADER SHADER_WRITE->SHADER_READ, subpass 1's fragment shader reads B",
       {attachment_transition(),
        begin_render_pass(2, {{0, 1, fragment_shader, fragment_shader, shader_write, shader_read, true},
                              {0, 1, color_output, color_output, color_write, color_write, true}}),
        draw(a, b), next_subpass(), draw(b, c), end_render_pass()},
       true, by_region_blind},
      // A barrier inside a subpass: its self-dependency (FRAGMENT_SHADER and
      // COLOR_ATTACHMENT_OUTPUT on both sides, framebuffer-space stages)
      // must be BY_REGION, and so must the barrier.
      {"one subpass, BY_REGION self-dependency: draw writes B, BY_REGION barrier "
       "FRAGMENT_SHADER|COLOR_ATTACHMENT_OUTPUT -> the same, SHADER_WRITE|COLOR_ATTACHMENT_WRITE -> "
       "SHADER_READ|COLOR_ATTACHMENT_WRITE (global), draw reads B",
       {attachment_transition(),
        begin_render_pass(1, {{0, 0, fragment_shader | color_output, fragment_shader | color_output,
                               shader_write | color_write, shader_read | color_write, true}}),
        draw(a, b),
        with_global(by_region_barrier(fragment_shader | color_output, fragment_shader | color_output),
                    shader_write | color_write, shader_read | color_write),
        draw(b, c), end_render_pass()},
       true, by_region_blind},
  };
}

//===-- the model side ------------------------------------------------------===//

ck::memory_range range_of(span s) {
  ck::memory_range m;
  m.resource = s.buffer;
  m.x0 = s.offset;
  m.x1 = std::uint64_t{s.offset} + s.size;
  return m;
}

/// All of image `id` (I or T): mip level 0, array layer 0.
constexpr ck::memory_range whole_image(std::uint32_t id) { return {id, 0, 1, 0, 1}; }
constexpr ck::memory_range image_range = whole_image(image_id);

/// The model's memory barriers of a barrier or wait_events step.
std::vector<ck::memory_barrier> memory_barriers_of(const step& st) {
  std::vector<ck::memory_barrier> out;
  if (st.global) out.push_back({st.global_src, st.global_dst, ck::global_memory, false});
  for (const buffer_barrier& bb : st.buffers) out.push_back({bb.src_access, bb.dst_access, range_of(bb.where), false});
  for (const image_barrier& ib : st.images) {
    out.push_back({ib.src_access, ib.dst_access, whole_image(ib.image), ib.transition()});
  }
  return out;
}

ck::stream to_stream(const scenario& sc) {
  ck::stream s;
  s.queues = {"q"};
  s.resources.assign(std::begin(resource_names), std::end(resource_names));
  s.events = {"event"};
  int n = 0;
  for (const step& st : sc.steps) {
    ck::command c;
    c.queue = 0;
    c.label = "s" + std::to_string(n++);
    switch (st.kind) {
      case op::dispatch:
        c.kind = ck::command_kind::action;
        c.label += "_dispatch";
        c.accesses = {{ck::stage::compute_shader, ck::access_type::shader_read, range_of(st.in)},
                      {ck::stage::compute_shader, ck::access_type::shader_write, range_of(st.out)}};
        break;
      case op::dispatch_indirect:
        c.kind = ck::command_kind::action;
        c.label += "_dispatch_indirect";
        c.accesses = {{ck::stage::draw_indirect, ck::access_type::indirect_command_read, range_of(st.args)},
                      {ck::stage::compute_shader, ck::access_type::shader_read, range_of(st.in)},
                      {ck::stage::compute_shader, ck::access_type::shader_write, range_of(st.out)}};
        break;
      case op::copy:
        c.kind = ck::command_kind::action;
        c.label += "_copy";
        c.accesses = {{ck::stage::transfer, ck::access_type::transfer_read, range_of(st.in)},
                      {ck::stage::transfer, ck::access_type::transfer_write, range_of(st.out)}};
        break;
      case op::copy_to_image:
        c.kind = ck::command_kind::action;
        c.label += "_copy_to_image";
        c.accesses = {{ck::stage::transfer, ck::access_type::transfer_read, range_of(st.in)},
                      {ck::stage::transfer, ck::access_type::transfer_write, image_range}};
        break;
      case op::copy_from_image:
        c.kind = ck::command_kind::action;
        c.label += "_copy_from_image";
        c.accesses = {{ck::stage::transfer, ck::access_type::transfer_read, image_range},
                      {ck::stage::transfer, ck::access_type::transfer_write, range_of(st.out)}};
        break;
      case op::barrier:
        c.kind = ck::command_kind::pipeline_barrier;
        c.label += "_barrier";
        c.src_stages = st.src_stages;
        c.dst_stages = st.dst_stages;
        c.by_region = st.by_region;
        c.barriers = memory_barriers_of(st);
        break;
      case op::set_event:
        c.kind = ck::command_kind::set_event;
        c.label += "_set_event";
        c.events = {0};
        c.src_stages = st.src_stages;
        break;
      case op::wait_events:
        c.kind = ck::command_kind::wait_events;
        c.label += "_wait_events";
        c.events = {0};
        c.src_stages = st.src_stages;
        c.dst_stages = st.dst_stages;
        c.barriers = memory_barriers_of(st);
        break;
      case op::next_command_buffer:
        c.kind = ck::command_kind::submit;
        c.label += "_submit";
        break;
      case op::begin_render_pass:
        c.kind = ck::command_kind::begin_render_pass;
        c.label += "_begin_render_pass";
        c.subpass_count = st.subpass_count;
        c.dependencies = st.dependencies;
        break;
      case op::draw:
        // T's load op (CLEAR) and store op (STORE) are what the layer
        // records as COLOR_ATTACHMENT_WRITEs at COLOR_ATTACHMENT_OUTPUT,
        // ordered before and after the draws of the subpass by the render
        // pass itself. The model has no load or store op, and two actions
        // of a subpass are ordered only by barriers, so they are folded
        // into the draw's own write of T: the same access at the same
        // stage. Every subpass of a scenario has a draw, and two draws of
        // one subpass are separated by a barrier that orders their writes
        // of T (as rasterization order does for the layer).
        c.kind = ck::command_kind::action;
        c.label += "_draw";
        c.accesses = {{ck::stage::fragment_shader, ck::access_type::shader_read, range_of(st.in)},
                      {ck::stage::fragment_shader, ck::access_type::shader_write, range_of(st.out)},
                      {ck::stage::color_attachment_output, ck::access_type::color_attachment_write,
                       whole_image(attachment_id)}};
        break;
      case op::next_subpass:
        c.kind = ck::command_kind::next_subpass;
        c.label += "_next_subpass";
        break;
      case op::end_render_pass:
        c.kind = ck::command_kind::end_render_pass;
        c.label += "_end_render_pass";
        break;
    }
    s.commands.push_back(std::move(c));
  }
  return s;
}

/// The layer's name for a checker hazard kind ("" when it has none).
std::string layer_name(ck::hazard_kind k) {
  switch (k) {
    case ck::hazard_kind::read_after_write_race:
    case ck::hazard_kind::read_without_visibility:
      return "SYNC-HAZARD-READ-AFTER-WRITE";
    case ck::hazard_kind::write_after_read_race:
      return "SYNC-HAZARD-WRITE-AFTER-READ";
    case ck::hazard_kind::write_after_write_race:
    case ck::hazard_kind::write_without_visibility:
      return "SYNC-HAZARD-WRITE-AFTER-WRITE";
    default:
      return "";
  }
}

struct checker_verdict {
  std::vector<ck::hazard> hazards;
  std::string report;
  std::vector<std::string> refused;  ///< the checker's errors for commands it refused
  std::vector<ck::hazard> warnings;  ///< the stricter rules' findings (checker_options::warnings)
};

checker_verdict run_checker(const ck::stream& s, const ck::checker_options& options = {}) {
  ck::checker k(options);
  checker_verdict v;
  ck::stream accepted = s;  // hazards number the accepted commands
  accepted.commands.clear();
  for (const ck::command& c : s.commands) {
    if (const causal::status st = k.append(c); !st) {
      v.refused.push_back(c.label + ": " + std::string(st.error_value().message()));
      v.report += "refused " + v.refused.back() + "\n";
    } else {
      accepted.commands.push_back(c);
    }
  }
  REQUIRE(k.finish().ok());
  v.hazards = k.hazards();
  v.warnings = k.warnings();
  for (const ck::hazard& h : v.hazards) v.report += ck::to_text(accepted, h) + "\n";
  return v;
}

//===-- the Vulkan side -----------------------------------------------------===//

/// What the debug messenger saw (errors only; warnings are printed).
struct message_log {
  std::mutex mutex;
  std::vector<std::string> sync_hazards;  // message id names, SYNC-HAZARD-*
  std::vector<std::string> other_errors;
  std::string text;
};

message_log& messages() {
  static message_log log;
  return log;
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  const std::string id = data->pMessageIdName != nullptr ? data->pMessageIdName : "";
  const std::string text = data->pMessage != nullptr ? data->pMessage : "";
  if ((severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) != 0) {
    message_log& log = messages();
    const std::lock_guard<std::mutex> lock(log.mutex);
    if (id.rfind("SYNC-HAZARD", 0) == 0) {
      log.sync_hazards.push_back(id);
    } else {
      log.other_errors.push_back(id + ": " + text);
    }
    log.text += id + ": " + text + "\n";
  } else if ((severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) != 0) {
    std::fprintf(stderr, "validation warning: %s\n", text.c_str());
  }
  return VK_FALSE;
}

struct layer_verdict {
  std::vector<std::string> sync_hazards;
  std::vector<std::string> other_errors;
  std::string text;
};

layer_verdict take_messages() {
  message_log& log = messages();
  const std::lock_guard<std::mutex> lock(log.mutex);
  layer_verdict v{std::move(log.sync_hazards), std::move(log.other_errors), std::move(log.text)};
  log.sync_hazards.clear();
  log.other_errors.clear();
  log.text.clear();
  return v;
}

constexpr std::uint32_t copy_words_spirv[] = {
#include "copy_words_comp.spv.inc"
};
constexpr std::uint32_t cover_vert_spirv[] = {
#include "cover_vert.spv.inc"
};
constexpr std::uint32_t copy_words_frag_spirv[] = {
#include "copy_words_frag.spv.inc"
};

void prepare_environment() {
  if (std::getenv("XDG_RUNTIME_DIR") == nullptr) {
    static char dir[] = "/tmp/causal-vkcheck-XXXXXX";
    if (::mkdtemp(dir) != nullptr) ::setenv("XDG_RUNTIME_DIR", dir, 0);
  }
  const std::string wanted[] = {"VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT",
                                "VALIDATION_CHECK_ENABLE_SYNCHRONIZATION_VALIDATION_QUEUE_SUBMIT"};
  const char* old = std::getenv("VK_LAYER_ENABLES");
  std::string enables = old != nullptr ? old : "";
  for (const std::string& w : wanted) {
    if (enables.find(w) == std::string::npos) enables += (enables.empty() ? "" : ":") + w;
  }
  ::setenv("VK_LAYER_ENABLES", enables.c_str(), 1);
}

/// Instance (validation layer, synchronization validation, messenger), the
/// first device with a graphics and compute queue and fragment-shader
/// stores, the copy_words compute pipeline, the draws' shaders and
/// pipeline layout, and a command pool.
class context {
 public:
  /// nullptr, with `why` set, when this machine cannot run the test.
  static std::unique_ptr<context> create(std::string& why) {
    prepare_environment();
    auto c = std::unique_ptr<context>(new context());
    if (!c->init_instance(why)) return nullptr;
    c->init_device();
    return c;
  }

  context(const context&) = delete;
  context& operator=(const context&) = delete;

  ~context() {
    if (device) {
      device.waitIdle();
      device.destroyCommandPool(pool);
      device.destroyPipeline(pipeline);
      device.destroyPipelineLayout(layout);
      device.destroyPipelineLayout(graphics_layout);
      device.destroyDescriptorSetLayout(set_layout);
      device.destroyShaderModule(module);
      device.destroyShaderModule(vertex_module);
      device.destroyShaderModule(fragment_module);
      device.destroy();
    }
    if (messenger_ != VK_NULL_HANDLE) destroy_messenger_(static_cast<VkInstance>(instance), messenger_, nullptr);
    if (instance) instance.destroy();
  }

  vk::Instance instance;
  vk::PhysicalDevice physical;
  vk::Device device;
  vk::Queue queue;
  std::uint32_t family = 0;
  std::string device_name;
  vk::ShaderModule module;
  vk::DescriptorSetLayout set_layout;
  vk::PipelineLayout layout;
  vk::Pipeline pipeline;
  vk::ShaderModule vertex_module;
  vk::ShaderModule fragment_module;
  vk::PipelineLayout graphics_layout;  ///< set_layout, no push constants
  vk::CommandPool pool;

  /// The draws' pipeline for subpass `subpass` of `pass`: cover.vert (no
  /// vertex input) and copy_words.frag, viewport and scissor the whole
  /// attachment, T's one color blend state without blending.
  [[nodiscard]] vk::Pipeline graphics_pipeline(vk::RenderPass pass, std::uint32_t subpass) const {
    const vk::PipelineShaderStageCreateInfo stages[] = {
        {{}, vk::ShaderStageFlagBits::eVertex, vertex_module, "main"},
        {{}, vk::ShaderStageFlagBits::eFragment, fragment_module, "main"}};
    const vk::PipelineVertexInputStateCreateInfo vertex_input{};
    const vk::PipelineInputAssemblyStateCreateInfo assembly({}, vk::PrimitiveTopology::eTriangleList);
    const vk::Viewport viewport(0.0f, 0.0f, float{image_width}, float{image_height}, 0.0f, 1.0f);
    const vk::Rect2D scissor({0, 0}, {image_width, image_height});
    const vk::PipelineViewportStateCreateInfo viewport_state({}, viewport, scissor);
    vk::PipelineRasterizationStateCreateInfo raster;
    raster.setPolygonMode(vk::PolygonMode::eFill)
        .setCullMode(vk::CullModeFlagBits::eNone)
        .setFrontFace(vk::FrontFace::eCounterClockwise)
        .setLineWidth(1.0f);
    const vk::PipelineMultisampleStateCreateInfo multisample({}, vk::SampleCountFlagBits::e1);
    vk::PipelineColorBlendAttachmentState blend;
    blend.setColorWriteMask(vk::ColorComponentFlagBits::eR);
    const vk::PipelineColorBlendStateCreateInfo blend_state({}, VK_FALSE, vk::LogicOp::eCopy, blend);
    vk::GraphicsPipelineCreateInfo info;
    info.setStages(stages)
        .setPVertexInputState(&vertex_input)
        .setPInputAssemblyState(&assembly)
        .setPViewportState(&viewport_state)
        .setPRasterizationState(&raster)
        .setPMultisampleState(&multisample)
        .setPColorBlendState(&blend_state)
        .setLayout(graphics_layout)
        .setRenderPass(pass)
        .setSubpass(subpass);
    return device.createGraphicsPipeline({}, info).value;
  }

 private:
  context() = default;

  bool init_instance(std::string& why) {
    std::uint32_t count = 0;
    if (vkEnumerateInstanceLayerProperties(&count, nullptr) != VK_SUCCESS) {
      why = "no Vulkan loader or driver (vkEnumerateInstanceLayerProperties failed)";
      return false;
    }
    std::vector<VkLayerProperties> layers(count);
    (void)vkEnumerateInstanceLayerProperties(&count, layers.data());
    const bool have_layer = std::any_of(layers.begin(), layers.end(), [](const VkLayerProperties& l) {
      return std::strcmp(l.layerName, "VK_LAYER_KHRONOS_validation") == 0;
    });
    if (!have_layer) {
      why = "VK_LAYER_KHRONOS_validation is not installed (apt-get install vulkan-validationlayers)";
      return false;
    }
    const char* layer_names[] = {"VK_LAYER_KHRONOS_validation"};
    const char* extension_names[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    const VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    const VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT, nullptr, 1, enables, 0,
                                           nullptr};
    VkDebugUtilsMessengerCreateInfoEXT messenger_info{
        VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        &features,
        0,
        VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
        &on_message,
        nullptr};
    const VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO, nullptr, "causal-check-vs-validation", 1,
                                "causal", 1, VK_API_VERSION_1_1};
    const VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, &messenger_info, 0, &app, 1,
                                    layer_names, 1, extension_names};
    VkInstance raw = VK_NULL_HANDLE;
    if (const VkResult r = vkCreateInstance(&info, nullptr, &raw); r != VK_SUCCESS) {
      why = "vkCreateInstance with the validation layer failed (no Vulkan driver?), VkResult " + std::to_string(r);
      return false;
    }
    instance = vk::Instance(raw);
    auto create_messenger = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(raw, "vkCreateDebugUtilsMessengerEXT"));
    destroy_messenger_ = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(raw, "vkDestroyDebugUtilsMessengerEXT"));
    messenger_info.pNext = nullptr;
    if (create_messenger == nullptr || destroy_messenger_ == nullptr ||
        create_messenger(raw, &messenger_info, nullptr, &messenger_) != VK_SUCCESS) {
      why = "cannot create the debug messenger (VK_EXT_debug_utils)";
      return false;
    }
    std::uint32_t device_count = 0;
    if (vkEnumeratePhysicalDevices(raw, &device_count, nullptr) != VK_SUCCESS || device_count == 0) {
      why = "no Vulkan physical device";
      return false;
    }
    for (vk::PhysicalDevice pd : instance.enumeratePhysicalDevices()) {
      if (pd.getFeatures().fragmentStoresAndAtomics == VK_FALSE) continue;
      const auto families = pd.getQueueFamilyProperties();
      const vk::QueueFlags wanted = vk::QueueFlagBits::eGraphics | vk::QueueFlagBits::eCompute;
      for (std::uint32_t i = 0; i < families.size(); ++i) {
        if ((families[i].queueFlags & wanted) == wanted) {
          physical = pd;
          family = i;
          break;
        }
      }
      if (physical) break;
    }
    if (!physical) {
      why = "no Vulkan device with a graphics and compute queue and fragmentStoresAndAtomics";
      return false;
    }
    device_name = physical.getProperties().deviceName.data();
    return true;
  }

  void init_device() {
    const float priority = 1.0f;
    const vk::DeviceQueueCreateInfo queue_info({}, family, 1, &priority);
    vk::PhysicalDeviceFeatures features;
    features.fragmentStoresAndAtomics = VK_TRUE;  // the draws' fragment shader writes a storage buffer
    device = physical.createDevice(vk::DeviceCreateInfo({}, queue_info, {}, {}, &features));
    queue = device.getQueue(family, 0);
    module = device.createShaderModule(
        vk::ShaderModuleCreateInfo({}, sizeof(copy_words_spirv), copy_words_spirv));
    vertex_module = device.createShaderModule(
        vk::ShaderModuleCreateInfo({}, sizeof(cover_vert_spirv), cover_vert_spirv));
    fragment_module = device.createShaderModule(
        vk::ShaderModuleCreateInfo({}, sizeof(copy_words_frag_spirv), copy_words_frag_spirv));
    const vk::ShaderStageFlags users = vk::ShaderStageFlagBits::eCompute | vk::ShaderStageFlagBits::eFragment;
    const vk::DescriptorSetLayoutBinding bindings[] = {{0, vk::DescriptorType::eStorageBuffer, 1, users},
                                                       {1, vk::DescriptorType::eStorageBuffer, 1, users}};
    set_layout = device.createDescriptorSetLayout(vk::DescriptorSetLayoutCreateInfo({}, bindings));
    const vk::PushConstantRange push(vk::ShaderStageFlagBits::eCompute, 0, sizeof(std::uint32_t));
    layout = device.createPipelineLayout(vk::PipelineLayoutCreateInfo({}, set_layout, push));
    graphics_layout = device.createPipelineLayout(vk::PipelineLayoutCreateInfo({}, set_layout));
    const vk::PipelineShaderStageCreateInfo stage({}, vk::ShaderStageFlagBits::eCompute, module, "main");
    pipeline = device.createComputePipeline({}, vk::ComputePipelineCreateInfo({}, stage, layout)).value;
    pool = device.createCommandPool(vk::CommandPoolCreateInfo({}, family));
  }

  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger_ = nullptr;
};

context*& global_context() {
  static context* c = nullptr;
  return c;
}

/// The first memory type allowed by `allowed_types` (a memoryTypeBits)
/// with all of `wanted`; memoryTypeCount when there is none.
std::uint32_t memory_type(const vk::PhysicalDeviceMemoryProperties& props, std::uint32_t allowed_types,
                          vk::MemoryPropertyFlags wanted) {
  std::uint32_t type = 0;
  while (type < props.memoryTypeCount &&
         ((allowed_types & (1u << type)) == 0 || (props.memoryTypes[type].propertyFlags & wanted) != wanted)) {
    ++type;
  }
  return type;
}

/// Fresh buffers and image per scenario, so no access state (and no image
/// layout) carries over.
class resource_set {
 public:
  explicit resource_set(context& cx) : device_(cx.device) {
    const auto props = cx.physical.getMemoryProperties();
    for (std::uint32_t i = 0; i < buffer_count; ++i) {
      buffers_[i] = device_.createBuffer(vk::BufferCreateInfo(
          {}, buffer_bytes,
          vk::BufferUsageFlagBits::eStorageBuffer | vk::BufferUsageFlagBits::eTransferSrc |
              vk::BufferUsageFlagBits::eTransferDst | vk::BufferUsageFlagBits::eIndirectBuffer));
      const auto req = device_.getBufferMemoryRequirements(buffers_[i]);
      // Host-visible and coherent: the host writes the first contents
      // before any submission (no flush, and nothing the layer tracks).
      const std::uint32_t type =
          memory_type(props, req.memoryTypeBits,
                      vk::MemoryPropertyFlagBits::eHostVisible | vk::MemoryPropertyFlagBits::eHostCoherent);
      REQUIRE(type < props.memoryTypeCount);
      buffer_memory_[i] = device_.allocateMemory(vk::MemoryAllocateInfo(req.size, type));
      device_.bindBufferMemory(buffers_[i], buffer_memory_[i], 0);
      void* mapped = device_.mapMemory(buffer_memory_[i], 0, buffer_bytes);
      std::uint32_t words[buffer_bytes / 4] = {2, 1, 1};
      std::memcpy(mapped, words, sizeof(words));
      device_.unmapMemory(buffer_memory_[i]);
    }
    // Only copies touch I, so it needs no usage beyond TRANSFER_SRC/DST;
    // T is only a color attachment.
    const vk::ImageUsageFlags usage[] = {vk::ImageUsageFlagBits::eTransferSrc | vk::ImageUsageFlagBits::eTransferDst,
                                         vk::ImageUsageFlagBits::eColorAttachment};
    for (std::uint32_t i = 0; i < 2; ++i) {
      images_[i] = device_.createImage(vk::ImageCreateInfo(
          {}, vk::ImageType::e2D, vk::Format::eR32Uint, vk::Extent3D(image_width, image_height, 1), 1, 1,
          vk::SampleCountFlagBits::e1, vk::ImageTiling::eOptimal, usage[i], vk::SharingMode::eExclusive, {},
          vk::ImageLayout::eUndefined));
      const auto req = device_.getImageMemoryRequirements(images_[i]);
      std::uint32_t type = memory_type(props, req.memoryTypeBits, vk::MemoryPropertyFlagBits::eDeviceLocal);
      if (type == props.memoryTypeCount) type = memory_type(props, req.memoryTypeBits, {});
      REQUIRE(type < props.memoryTypeCount);
      image_memory_[i] = device_.allocateMemory(vk::MemoryAllocateInfo(req.size, type));
      device_.bindImageMemory(images_[i], image_memory_[i], 0);
    }
    attachment_view_ = device_.createImageView(
        vk::ImageViewCreateInfo({}, images_[1], vk::ImageViewType::e2D, vk::Format::eR32Uint, {},
                                vk::ImageSubresourceRange(vk::ImageAspectFlagBits::eColor, 0, 1, 0, 1)));
  }
  resource_set(const resource_set&) = delete;
  resource_set& operator=(const resource_set&) = delete;
  ~resource_set() {
    for (std::uint32_t i = 0; i < buffer_count; ++i) {
      device_.destroyBuffer(buffers_[i]);
      device_.freeMemory(buffer_memory_[i]);
    }
    device_.destroyImageView(attachment_view_);
    for (std::uint32_t i = 0; i < 2; ++i) {
      device_.destroyImage(images_[i]);
      device_.freeMemory(image_memory_[i]);
    }
  }
  [[nodiscard]] vk::Buffer operator[](std::uint32_t i) const { return buffers_[i]; }
  /// I (image_id) or T (attachment_id).
  [[nodiscard]] vk::Image image(std::uint32_t id) const { return images_[id - image_id]; }
  [[nodiscard]] vk::ImageView attachment_view() const { return attachment_view_; }

 private:
  vk::Device device_;
  vk::Buffer buffers_[buffer_count]{};
  vk::DeviceMemory buffer_memory_[buffer_count]{};
  vk::Image images_[2]{};  // I, T
  vk::DeviceMemory image_memory_[2]{};
  vk::ImageView attachment_view_;
};

/// A render pass step's objects: the render pass, its framebuffer (T's
/// view) and a pipeline per subpass.
struct render_pass_objects {
  vk::RenderPass pass;
  vk::Framebuffer framebuffer;
  std::vector<vk::Pipeline> pipelines;
};

/// One subpass per `st.subpass_count`, each with T as its color attachment
/// 0 in COLOR_ATTACHMENT_OPTIMAL, T's load op CLEAR and store op STORE,
/// its initial and final layout COLOR_ATTACHMENT_OPTIMAL (no automatic
/// layout transition, so no implicit external dependency either), and the
/// step's dependencies.
render_pass_objects make_render_pass(const context& cx, const resource_set& res, const step& st) {
  const vk::AttachmentDescription attachment({}, vk::Format::eR32Uint, vk::SampleCountFlagBits::e1,
                                             vk::AttachmentLoadOp::eClear, vk::AttachmentStoreOp::eStore,
                                             vk::AttachmentLoadOp::eDontCare, vk::AttachmentStoreOp::eDontCare,
                                             color_attachment, color_attachment);
  const vk::AttachmentReference color(0, color_attachment);
  const std::vector<vk::SubpassDescription> subpasses(
      st.subpass_count, vk::SubpassDescription({}, vk::PipelineBindPoint::eGraphics, {}, color));
  std::vector<vk::SubpassDependency> dependencies;
  for (const ck::subpass_dependency& d : st.dependencies) {
    dependencies.emplace_back(d.src, d.dst, static_cast<vk::PipelineStageFlags>(d.src_stages),
                              static_cast<vk::PipelineStageFlags>(d.dst_stages),
                              static_cast<vk::AccessFlags>(d.src_access), static_cast<vk::AccessFlags>(d.dst_access),
                              d.by_region ? vk::DependencyFlags(vk::DependencyFlagBits::eByRegion)
                                          : vk::DependencyFlags{});
  }
  render_pass_objects o;
  o.pass = cx.device.createRenderPass(vk::RenderPassCreateInfo({}, attachment, subpasses, dependencies));
  const vk::ImageView view = res.attachment_view();
  o.framebuffer =
      cx.device.createFramebuffer(vk::FramebufferCreateInfo({}, o.pass, view, image_width, image_height, 1));
  for (std::uint32_t i = 0; i < st.subpass_count; ++i) o.pipelines.push_back(cx.graphics_pipeline(o.pass, i));
  return o;
}

/// Records the steps, submits each command buffer in order (one queue
/// submission each, the last with a fence), waits, and returns what the
/// layer said.
layer_verdict run_on_vulkan(context& cx, const scenario& sc) {
  (void)take_messages();
  const resource_set buf(cx);
  const std::uint32_t shaders = static_cast<std::uint32_t>(
      std::count_if(sc.steps.begin(), sc.steps.end(), [](const step& s) {
        return s.kind == op::dispatch || s.kind == op::dispatch_indirect || s.kind == op::draw;
      }));
  const vk::DescriptorPoolSize pool_size(vk::DescriptorType::eStorageBuffer, 2 * std::max(shaders, 1u));
  const vk::DescriptorPool descriptors =
      cx.device.createDescriptorPool(vk::DescriptorPoolCreateInfo({}, std::max(shaders, 1u), pool_size));
  const vk::DeviceSize alignment = cx.physical.getProperties().limits.minStorageBufferOffsetAlignment;
  const vk::Event event = cx.device.createEvent(vk::EventCreateInfo());

  // I's and T's layouts as the steps so far leave them: each image barrier
  // must name its image's as its old layout, the copies use I in it, and a
  // render pass wants T in COLOR_ATTACHMENT_OPTIMAL.
  vk::ImageLayout layouts[2] = {vk::ImageLayout::eUndefined, vk::ImageLayout::eUndefined};
  vk::ImageLayout& image_layout = layouts[0];
  vk::ImageLayout& attachment_layout = layouts[1];
  std::vector<render_pass_objects> render_passes;  // the last one is the open one, if any
  bool in_render_pass = false;
  std::uint32_t subpass = 0;

  // A descriptor set for a dispatch's or draw's `in` and `out`.
  auto descriptor_set = [&](const step& st) {
    REQUIRE(st.in.offset % alignment == 0);
    REQUIRE(st.out.offset % alignment == 0);
    const vk::DescriptorSet set =
        cx.device.allocateDescriptorSets(vk::DescriptorSetAllocateInfo(descriptors, cx.set_layout)).front();
    const vk::DescriptorBufferInfo in(buf[st.in.buffer], st.in.offset, st.in.size);
    const vk::DescriptorBufferInfo out(buf[st.out.buffer], st.out.offset, st.out.size);
    const vk::WriteDescriptorSet writes[] = {{set, 0, 0, 1, vk::DescriptorType::eStorageBuffer, nullptr, &in},
                                             {set, 1, 0, 1, vk::DescriptorType::eStorageBuffer, nullptr, &out}};
    cx.device.updateDescriptorSets(writes, {});
    return set;
  };
  const vk::ImageSubresourceRange all_of_image(vk::ImageAspectFlagBits::eColor, 0, 1, 0, 1);
  const vk::BufferImageCopy whole_image(0, 0, 0, vk::ImageSubresourceLayers(vk::ImageAspectFlagBits::eColor, 0, 0, 1),
                                        vk::Offset3D(0, 0, 0), vk::Extent3D(image_width, image_height, 1));

  std::vector<vk::CommandBuffer> cbs;
  auto begin = [&] {
    cbs.push_back(
        cx.device.allocateCommandBuffers(vk::CommandBufferAllocateInfo(cx.pool, vk::CommandBufferLevel::ePrimary, 1))
            .front());
    cbs.back().begin(vk::CommandBufferBeginInfo(vk::CommandBufferUsageFlagBits::eOneTimeSubmit));
  };
  begin();
  for (const step& st : sc.steps) {
    vk::CommandBuffer cb = cbs.back();
    switch (st.kind) {
      case op::dispatch:
      case op::dispatch_indirect: {
        REQUIRE_FALSE(in_render_pass);
        const vk::DescriptorSet set = descriptor_set(st);
        const std::uint32_t words = std::min(st.in.size, st.out.size) / 4;
        cb.bindPipeline(vk::PipelineBindPoint::eCompute, cx.pipeline);
        cb.bindDescriptorSets(vk::PipelineBindPoint::eCompute, cx.layout, 0, set, {});
        cb.pushConstants(cx.layout, vk::ShaderStageFlagBits::eCompute, 0, sizeof(words), &words);
        if (st.kind == op::dispatch_indirect) {
          cb.dispatchIndirect(buf[st.args.buffer], st.args.offset);
        } else {
          cb.dispatch((words + 63) / 64, 1, 1);
        }
        break;
      }
      case op::copy: {
        REQUIRE(st.in.size == st.out.size);
        cb.copyBuffer(buf[st.in.buffer], buf[st.out.buffer], vk::BufferCopy(st.in.offset, st.out.offset, st.in.size));
        break;
      }
      case op::copy_to_image:
        REQUIRE((st.in.offset == 0 && st.in.size == buffer_bytes));
        cb.copyBufferToImage(buf[st.in.buffer], buf.image(image_id), image_layout, whole_image);
        break;
      case op::copy_from_image:
        REQUIRE((st.out.offset == 0 && st.out.size == buffer_bytes));
        cb.copyImageToBuffer(buf.image(image_id), image_layout, buf[st.out.buffer], whole_image);
        break;
      case op::barrier:
      case op::wait_events: {
        std::vector<vk::MemoryBarrier> global;
        if (st.global) {
          global.emplace_back(static_cast<vk::AccessFlags>(st.global_src), static_cast<vk::AccessFlags>(st.global_dst));
        }
        std::vector<vk::BufferMemoryBarrier> buffers;
        for (const buffer_barrier& bb : st.buffers) {
          buffers.emplace_back(static_cast<vk::AccessFlags>(bb.src_access), static_cast<vk::AccessFlags>(bb.dst_access),
                               VK_QUEUE_FAMILY_IGNORED, VK_QUEUE_FAMILY_IGNORED, buf[bb.where.buffer],
                               bb.where.offset, bb.where.size);
        }
        std::vector<vk::ImageMemoryBarrier> images;
        for (const image_barrier& ib : st.images) {
          vk::ImageLayout& layout = layouts[ib.image - image_id];
          REQUIRE(ib.old_layout == layout);
          images.emplace_back(static_cast<vk::AccessFlags>(ib.src_access), static_cast<vk::AccessFlags>(ib.dst_access),
                              ib.old_layout, ib.new_layout, VK_QUEUE_FAMILY_IGNORED, VK_QUEUE_FAMILY_IGNORED,
                              buf.image(ib.image), all_of_image);
          layout = ib.new_layout;
        }
        // Inside a render pass only a global memory barrier (under a
        // self-dependency of the subpass that covers it).
        if (in_render_pass) REQUIRE((buffers.empty() && images.empty() && st.kind == op::barrier));
        const auto src = static_cast<vk::PipelineStageFlags>(st.src_stages);
        const auto dst = static_cast<vk::PipelineStageFlags>(st.dst_stages);
        if (st.kind == op::barrier) {
          const vk::DependencyFlags flags = st.by_region ? vk::DependencyFlagBits::eByRegion : vk::DependencyFlags{};
          cb.pipelineBarrier(src, dst, flags, global, buffers, images);
        } else {
          REQUIRE_FALSE(st.by_region);  // vkCmdWaitEvents takes no dependency flags
          cb.waitEvents(event, src, dst, global, buffers, images);
        }
        break;
      }
      case op::set_event:
        cb.setEvent(event, static_cast<vk::PipelineStageFlags>(st.src_stages));
        break;
      case op::next_command_buffer:
        REQUIRE_FALSE(in_render_pass);
        cb.end();
        begin();
        break;
      case op::begin_render_pass: {
        REQUIRE_FALSE(in_render_pass);
        REQUIRE(attachment_layout == color_attachment);
        render_passes.push_back(make_render_pass(cx, buf, st));
        const vk::ClearValue clear(vk::ClearColorValue(std::array<std::uint32_t, 4>{0, 0, 0, 0}));
        cb.beginRenderPass(vk::RenderPassBeginInfo(render_passes.back().pass, render_passes.back().framebuffer,
                                                   vk::Rect2D({0, 0}, {image_width, image_height}), clear),
                           vk::SubpassContents::eInline);
        in_render_pass = true;
        subpass = 0;
        break;
      }
      case op::draw: {
        REQUIRE(in_render_pass);
        const vk::DescriptorSet set = descriptor_set(st);
        cb.bindPipeline(vk::PipelineBindPoint::eGraphics, render_passes.back().pipelines[subpass]);
        cb.bindDescriptorSets(vk::PipelineBindPoint::eGraphics, cx.graphics_layout, 0, set, {});
        cb.draw(3, 1, 0, 0);
        break;
      }
      case op::next_subpass:
        REQUIRE(in_render_pass);
        cb.nextSubpass(vk::SubpassContents::eInline);
        ++subpass;
        break;
      case op::end_render_pass:
        REQUIRE(in_render_pass);
        cb.endRenderPass();
        in_render_pass = false;
        break;
    }
  }
  REQUIRE_FALSE(in_render_pass);
  cbs.back().end();

  const vk::Fence fence = cx.device.createFence({});
  for (std::size_t i = 0; i < cbs.size(); ++i) {
    cx.queue.submit(vk::SubmitInfo({}, {}, cbs[i]), i + 1 == cbs.size() ? fence : vk::Fence{});
  }
  const vk::Result waited = cx.device.waitForFences(fence, VK_TRUE, 20'000'000'000ull);
  CHECK(waited == vk::Result::eSuccess);
  cx.queue.waitIdle();
  cx.device.destroyFence(fence);
  cx.device.freeCommandBuffers(cx.pool, cbs);
  for (const render_pass_objects& o : render_passes) {
    for (const vk::Pipeline p : o.pipelines) cx.device.destroyPipeline(p);
    cx.device.destroyFramebuffer(o.framebuffer);
    cx.device.destroyRenderPass(o.pass);
  }
  cx.device.destroyDescriptorPool(descriptors);
  cx.device.destroyEvent(event);
  return take_messages();
}

std::set<std::string> distinct(const std::vector<std::string>& v) { return {v.begin(), v.end()}; }

}  // namespace

// LeakSanitizer (ASan builds): this validation layer version keeps its
// per-command-buffer state alive after vkFreeCommandBuffers and
// vkDestroyDevice (cyclic references: every leaked block is allocated, and
// only reachable, inside libVkLayer_khronos_validation.so). Our own handles
// are all destroyed; the layer's object tracker would report any we missed
// as an error, which main() turns into a failure. Unused without LSan.
extern "C" const char* __lsan_default_suppressions() { return "leak:libVkLayer_khronos_validation.so\n"; }

TEST_CASE("check_vs_validation: the checker and the synchronization validation layer agree",
          "[check][vulkan]") {
  context& cx = *global_context();
  for (const scenario& sc : scenarios()) {
    const ck::stream s = to_stream(sc);
    const checker_verdict mine = run_checker(s);
    const layer_verdict layer = run_on_vulkan(cx, sc);

    std::set<std::string> expected_names;
    for (const ck::hazard& h : mine.hazards) {
      if (const std::string n = layer_name(h.kind); !n.empty()) expected_names.insert(n);
    }

    INFO("scenario: " << sc.name);
    INFO("stream:\n" << ck::to_text(s));
    INFO("checker:\n" << (mine.report.empty() ? "(no hazards)\n" : mine.report));
    INFO("layer:\n" << (layer.text.empty() ? "(no messages)\n" : layer.text));
    if (sc.validation_error != nullptr) {
      // Planted invalid usage: the checker refuses it, the layer reports it
      // (and nothing else), and neither reports a hazard.
      CHECK(mine.refused.size() == 1);
      CHECK_FALSE(layer.other_errors.empty());
      for (const std::string& e : layer.other_errors) CHECK(e.find(sc.validation_error) != std::string::npos);
      CHECK(mine.hazards.empty());
      CHECK(layer.sync_hazards.empty());
      continue;
    }
    CHECK(mine.refused.empty());
    // The Vulkan half must be valid usage apart from the planted hazards.
    CHECK(layer.other_errors.empty());
    // The planted verdict holds on both sides ...
    CHECK(mine.hazards.empty() == !sc.hazard);
    if (sc.layer_blind != nullptr) {
      // The layer must still miss it, so that a layer that sees it fails
      // the test and the marker goes.
      if (!layer.sync_hazards.empty() && distinct(layer.sync_hazards) == expected_names) {
        FAIL_CHECK("the layer now reports the hazard of \"" << sc.name << "\": its layer_blind marker can go");
      } else {
        CHECK(layer.sync_hazards.empty());
        std::fprintf(stderr, "note: the layer misses the hazard of \"%s\", as expected: %s\n", sc.name,
                     sc.layer_blind);
      }
      continue;
    }
    if (sc.breaks_stricter_rule) {
      // The default checker follows Vulkan; asked for the stricter rule,
      // it flags this stream, as a warning and never as a hazard.
      ck::checker_options strict;
      strict.warnings = true;
      const checker_verdict strict_verdict = run_checker(s, strict);
      CHECK(strict_verdict.hazards.size() == mine.hazards.size());
      CHECK(std::any_of(strict_verdict.warnings.begin(), strict_verdict.warnings.end(),
                        [](const ck::hazard& w) { return w.kind == ck::hazard_kind::dirty_invalidate; }));
    }
    if (sc.layer_wrong.reported != nullptr) {
      const std::set<std::string> said = distinct(layer.sync_hazards);
      if (said == expected_names) {
        FAIL_CHECK("the layer now agrees with the checker on \"" << sc.name
                                                                   << "\": its layer_wrong marker can go");
      } else {
        CHECK(said == std::set<std::string>{sc.layer_wrong.reported});
        std::fprintf(stderr, "note: recorded disagreement on \"%s\": the layer reports %s, the checker %s; %s\n",
                     sc.name, sc.layer_wrong.reported, sc.hazard ? "a hazard" : "none", sc.layer_wrong.reason);
      }
      continue;
    }
    CHECK(layer.sync_hazards.empty() == !sc.hazard);
    // ... and they agree on it and on the kinds.
    CHECK(mine.hazards.empty() == layer.sync_hazards.empty());
    CHECK(expected_names == distinct(layer.sync_hazards));
  }
}

int main(int argc, char* argv[]) {
  std::string why;
  std::unique_ptr<context> cx;
  try {
    cx = context::create(why);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FAILED: Vulkan setup threw: %s\n", e.what());
    return 1;
  }
  if (!cx) causal::test::skip_binary(why.c_str());
  std::fprintf(stderr, "check_vs_validation on %s, with synchronization validation\n", cx->device_name.c_str());
  global_context() = cx.get();
  const int rc = causal::test::run_catch_session(argc, argv);
  global_context() = nullptr;
  cx.reset();
  const layer_verdict left = take_messages();
  if (!left.other_errors.empty() || !left.sync_hazards.empty()) {
    std::fprintf(stderr, "FAILED: validation messages outside any scenario:\n%s", left.text.c_str());
    return rc == 0 ? 1 : rc;
  }
  return rc;
}
