// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// 13_inference_split: the flagship pipeline of 10_inference_pipeline --
// tokenizer, encoder, decoder -- split over three MPI ranks, one stage a
// rank, each with its own CPU queue, block pools and trace; the traces are
// merged into one timeline and one DAG of the whole job.
//
//   request r:  rank 0: tokenizer       rank 1: encoder              rank 2: decoder
//               alloca tokens[r]        alloca staging, hidden[r]    alloca staging
//               tokenize --tokens=r-->  fetch tokens[r] (one-sided)
//                                       encode (64 tiles)
//                                       publish hidden --encoded=r--> decode: waits encoded=r
//                                                                     and tokens=r (ELIDED:
//                                                                     implied), fetches both
//               tokenize r+L waits  <--------------------decoded=r--- (exported)
//               decoded=r, then frees   fetch r+L waits decoded=r,
//               tokens[r]               then frees hidden[r]
//
// Buffers are stream-ordered per rank (causal::basic_block_pool, one per
// arena): tokens[r] lives in rank 0's MPI window and hidden[r] in rank 1's,
// where other ranks read them with MPI_Get; staging copies come from local
// pools. A buffer another rank reads is freed by its owner's queue after an
// operation that waited for `decoded` -- the last reader's signal -- so
// each window holds L + 1 requests' buffers however many are in flight,
// and no buffer is overwritten while a remote reader may still need it:
// every output is checked against a host reference.
//
// Submission. Rank 0 submits all requests at once; rank 1 once it has
// heard rank 0's plan (the node's SUBMITTED records for tokens), rank 2
// once it has heard ranks 0's and 1's; nobody waits for a result before
// submitting. The decoder's wait on tokens=r is elided because encoded=r's
// frontier, recorded by rank 1 after it imported tokens=r's, names rank
// 0's operation.
//
// Traces. Each rank records its queue, semaphores, executor and the node's
// update messages (causal::mpi::rank_trace, traced_carrier) and writes
// trace-rank<N>.json into the directory given as argv[1]; the clock offset
// to rank 0 is estimated once at start. adapters/mpi/tools/merge_traces.py
// joins them into job-trace.json (one process per rank, an arrow from each
// update's send to the proxy signal it caused) and job-dag.dot (one
// cluster per rank, edges between ranks); check_inference_split.py runs
// both and checks the results.
//
// Printed: remote waits issued vs elided against the per-edge baseline,
// pool reuse per rank, and the decoder's final knowledge. Exit status 1 if
// a check fails on any rank.
//
// Run: mpiexec -n 3 ./13_inference_split OUT_DIR
#include "../inference_model.hpp"
#include "example_support.hpp"

#include <causal/adapters/cpu/queue.hpp>
#include <causal/adapters/mpi/mpi_carrier.hpp>
#include <causal/adapters/mpi/mpi_session.hpp>
#include <causal/adapters/mpi/node.hpp>
#include <causal/adapters/mpi/progress.hpp>
#include <causal/adapters/mpi/trace.hpp>
#include <causal/causal.hpp>

#include <mpi.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace {

using namespace inference_model;  // the model of 10_inference_pipeline (../inference_model.hpp)

constexpr std::uint64_t requests = 12;
// Requests whose window buffers may be alive at once, beyond the newest.
constexpr std::uint64_t lag = 2;

constexpr std::uint64_t export_tokens = 1;   // rank 0
constexpr std::uint64_t export_encoded = 2;  // rank 1
constexpr std::uint64_t export_decoded = 3;  // rank 2

using carrier_type = causal::mpi::traced_carrier<causal::mpi::mpi_carrier>;
using node_type = causal::mpi::basic_node<carrier_type>;
using queue = causal::cpu::queue;
using pool_type = causal::basic_block_pool<queue::core_type>;

// Each window: a table of block offsets by request, then the pool's arena.
constexpr std::size_t table_bytes = (requests + 1) * sizeof(std::uint64_t);
// Room for L + 1 requests' published buffers: tokens on rank 0, hidden on 1.
constexpr std::size_t tokens_window_quota = (lag + 1) * tokens_bytes;
constexpr std::size_t hidden_window_quota = (lag + 1) * hidden_bytes;
constexpr std::size_t staging_quota = 2 * (tokens_bytes + hidden_bytes);

//===-- moving buffers between ranks --===//

/// Where request r's block starts in `owner`'s window (read from its table).
std::size_t block_of(example::byte_window& w, int owner, std::uint64_t r, causal::status& s) {
  return table_bytes + w.get_value<std::uint64_t>(owner, r * sizeof(std::uint64_t), s);
}

/// Publishes `size` bytes at `data` as request r's block at `offset` of
/// this rank's (`me`) window.
causal::status publish(example::byte_window& w, int me, std::uint64_t r, std::size_t offset, const void* data,
                       std::size_t size) {
  causal::status s = w.put(me, table_bytes + offset, data, size);
  if (s) s = w.put_value<std::uint64_t>(me, r * sizeof(std::uint64_t), offset);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  auto session = causal::mpi::mpi_session::start(&argc, &argv, MPI_THREAD_MULTIPLE);
  if (!session) {
    std::printf("MPI_THREAD_MULTIPLE is needed: %s\n", session.error_value().message().data());
    return 1;
  }
  const std::string out_dir = argc > 1 ? argv[1] : ".";
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 3) {
    if (rank == 0) std::printf("run with mpiexec -n 3 (got %d ranks)\n", size);
    return 1;
  }
  example::claims check(rank);
  bool ok = false;
  {
    const causal::result<std::int64_t> offset = causal::mpi::estimate_clock_offset();
    const std::size_t window_quota = rank == 0 ? tokens_window_quota : hidden_window_quota;
    example::byte_window window(rank == 2 ? 64 : table_bytes + window_quota);
    auto mpi = causal::mpi::mpi_carrier::create();
    if (!offset || !mpi) example::abort_job(rank, "no clock offset or MPI carrier");

    // [snippet:inference_split_trace]
    causal::mpi::rank_trace<> trace(static_cast<std::uint32_t>(rank), 3, *offset);
    carrier_type carrier(*mpi, trace.messages());  // logs every update sent and applied
    node_type node(carrier);
    // [/snippet]
    const causal::axis my_axis = node.allocate_axis(causal::domain::queue).value();

    // Every rank exports its stage's output timeline and follows the others'.
    causal::semaphore out;
    const std::array<const char*, 3> stage_names{"tokenizer", "encoder", "decoder"};
    const std::array<const char*, 3> output_names{"tokens_ready", "encoded", "decoded"};
    const std::array<std::uint64_t, 3> export_ids{export_tokens, export_encoded, export_decoded};
    (void)node.export_semaphore(export_ids[static_cast<std::size_t>(rank)], out);
    trace.name_export(out, export_ids[static_cast<std::size_t>(rank)], output_names[static_cast<std::size_t>(rank)]);
    std::array<causal::semaphore*, 3> from{};
    for (std::uint32_t owner = 0; owner < 3; ++owner) {
      if (owner == static_cast<std::uint32_t>(rank)) continue;
      from[owner] = node.open_proxy(owner, export_ids[owner]).value();
      trace.name_proxy(*from[owner], owner, export_ids[owner], output_names[owner]);
    }
    (void)node.start();

    causal::executor ex{causal::executor_options{.worker_count = 2}};
    causal::mpi::node_process<node_type> progress(node);
    ex.submit(progress);

    queue q(my_axis, ex);
    q.set_trace_sink(&trace.sink());
    trace.name_queue(my_axis, stage_names[static_cast<std::size_t>(rank)]);

    // This rank's pools: its window's arena (what other ranks read) and a
    // local staging arena.
    pool_type window_pool(window_quota, 64);
    std::vector<std::byte> staging(staging_quota);
    pool_type staging_pool(staging_quota, 64);

    std::vector<request_state> state(requests + 1);
    std::vector<causal::command_buffer> encode_commands(requests + 1);
    std::vector<causal::pool_block> window_blocks(requests + 1);
    example::byte_window* w = &window;
    std::uint64_t submit_errors = 0;
    std::uint64_t remote_waits = 0, remote_issued = 0, remote_elided = 0;
    const auto count = [&](std::uint64_t waits, const causal::queue_stats& before) {
      const causal::queue_stats after = q.stats();
      remote_waits += waits;
      remote_issued += after.device_waits - before.device_waits;
      remote_elided += after.waits_elided() - before.waits_elided();
    };
    const auto staged = [&](const causal::result<causal::pool_block>& b) -> std::byte* {
      if (!b) {
        ++submit_errors;
        return nullptr;
      }
      return staging.data() + b->offset;
    };

    // Ranks 1 and 2 submit once they know their upstream's plan.
    const bool planned = (rank == 0 || example::wait_for_plan(*from[0], requests)) &&
                         (rank != 2 || example::wait_for_plan(*from[1], requests));
    if (!planned) example::abort_job(rank, "a proxy failed before its plan arrived");

    for (std::uint64_t r = 1; r <= requests; ++r) {
      request_state& rs = state[r];
      rs.id = r;
      request_state* p = &rs;
      const causal::queue_stats before = q.stats();
      // The oldest window buffer may go once the decoder finished with it.
      const bool reclaim = r > lag && rank != 2;
      causal::semaphore* decoded = from[2];
      if (rank == 0) {
        // Tokenizer: alloca tokens[r] in the window, tokenize, publish,
        // signal tokens_ready = r.
        auto block = q.stream_alloca(window_pool, tokens_bytes);
        if (!block) example::abort_job(rank, "the window pool refused a block");
        window_blocks[r] = *block;
        const std::size_t at = block->offset;
        auto body = [w, p, at](const causal::host_call_context&) noexcept {
          std::array<std::uint32_t, tokens_per_request> tokens{};
          p->tokens = tokens.data();
          tokenize(*p);
          p->tokens = nullptr;
          return publish(*w, 0, p->id, at, tokens.data(), tokens_bytes);
        };
        auto done = reclaim ? q.host({{decoded, r - lag}}, {{&out, r}}, body, "tokenize")
                            : q.host({}, {{&out, r}}, body, "tokenize");
        if (!done) ++submit_errors;
        if (reclaim) {
          (void)q.stream_dealloca(window_pool, window_blocks[r - lag]);
          count(1, before);
        }
      } else if (rank == 1) {
        // Encoder: fetch tokens[r] from rank 0 into staging, 64 tiles into
        // staging, publish hidden[r] in the window, signal encoded = r.
        auto tokens = q.stream_alloca(staging_pool, tokens_bytes);
        auto hidden = q.stream_alloca(staging_pool, hidden_bytes);
        rs.tokens = reinterpret_cast<std::uint32_t*>(staged(tokens));
        rs.hidden = reinterpret_cast<std::uint64_t*>(staged(hidden));
        if (rs.tokens == nullptr || rs.hidden == nullptr) {
          example::abort_job(rank, "the staging pool refused a block");
        }
        auto fetch = [w, p](const causal::host_call_context&) noexcept {
          causal::status s;
          const std::size_t at = block_of(*w, 0, p->id, s);
          if (s) s = w->get(0, at, p->tokens, tokens_bytes);
          return s;
        };
        auto fetched = reclaim ? q.host({{from[0], r}, {decoded, r - lag}}, {}, fetch, "fetch tokens")
                               : q.host({{from[0], r}}, {}, fetch, "fetch tokens");
        if (!fetched) ++submit_errors;
        count(reclaim ? 2 : 1, before);
        if (reclaim) (void)q.stream_dealloca(window_pool, window_blocks[r - lag]);
        auto block = q.stream_alloca(window_pool, hidden_bytes);
        if (!block) example::abort_job(rank, "the window pool refused a block");
        window_blocks[r] = *block;
        const std::size_t at = block->offset;
        (void)encode_commands[r].dispatch(&encode_tile, p, encoder_tiles);
        if (!q.dispatch({}, {}, encode_commands[r], {}, "encode")) ++submit_errors;
        if (!q.host({}, {{&out, r}},
                    [w, p, at](const causal::host_call_context&) noexcept {
                      return publish(*w, 1, p->id, at, p->hidden, hidden_bytes);
                    },
                    "publish hidden")) {
          ++submit_errors;
        }
        (void)q.stream_dealloca(staging_pool, *tokens);
        (void)q.stream_dealloca(staging_pool, *hidden);
      } else {
        // [snippet:inference_split_decoder]
        // Decoder: waits for encoded = r and tokens_ready = r, both remote;
        // the second is implied by the first (encoded's frontier holds the
        // tokenizer's entry) and elided. It still reads rank 0's tokens.
        auto tokens = q.stream_alloca(staging_pool, tokens_bytes);
        auto hidden = q.stream_alloca(staging_pool, hidden_bytes);
        rs.tokens = reinterpret_cast<std::uint32_t*>(staged(tokens));
        rs.hidden = reinterpret_cast<std::uint64_t*>(staged(hidden));
        if (rs.tokens == nullptr || rs.hidden == nullptr) {
          example::abort_job(rank, "the staging pool refused a block");
        }
        auto decoded_r = q.host({{from[1], r}, {from[0], r}}, {{&out, r}},
                                [w, p](const causal::host_call_context&) noexcept {
                                  causal::status s;
                                  const std::size_t h = block_of(*w, 1, p->id, s);
                                  const std::size_t t = block_of(*w, 0, p->id, s);
                                  if (s) s = w->get(1, h, p->hidden, hidden_bytes);
                                  if (s) s = w->get(0, t, p->tokens, tokens_bytes);
                                  if (s) p->output = decode(p->hidden, p->tokens);
                                  return s;
                                },
                                "decode");
        (void)q.stream_dealloca(staging_pool, *tokens);
        (void)q.stream_dealloca(staging_pool, *hidden);
        // [/snippet]
        if (!decoded_r) ++submit_errors;
        count(2, before);
      }
    }

    const causal::status idle = q.wait_idle();
    check.expect(idle.ok() && submit_errors == 0, "every operation was submitted and ran");
    if (rank == 2) {
      bool outputs_ok = true;
      for (std::uint64_t r = 1; r <= requests; ++r) outputs_ok = outputs_ok && state[r].output == reference(r);
      check.expect(outputs_ok, "every output matches the host reference (no buffer reused early)");
      check.expect(q.stats().waits_elided() >= requests, "the decoder's wait on tokens_ready was elided every time");
      std::printf("  [rank 2] decoder knowledge %s\n", causal::to_string(q.knowledge()).c_str());
    }
    const causal::pool_stats& ps = window_pool.stats();
    if (rank != 2) {
      std::printf("  [rank %d] window pool: peak %zu of %zu bytes, %llu fresh, %llu reused\n", rank,
                  window_pool.carved(), window_pool.quota(), static_cast<unsigned long long>(ps.fresh_carves),
                  static_cast<unsigned long long>(ps.acquires() - ps.fresh_carves));
      check.expect(window_pool.carved() <= window_quota && ps.acquires() > ps.fresh_carves,
                   "the window's buffers were reused within L + 1 requests' room");
    }

    std::array<std::uint64_t, 3> mine{remote_waits, remote_issued, remote_elided};
    std::array<std::uint64_t, 3> total{};
    MPI_Reduce(mine.data(), total.data(), 3, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      std::printf("remote waits: %llu issued, %llu elided; per-edge baseline %llu\n",
                  static_cast<unsigned long long>(total[1]), static_cast<unsigned long long>(total[2]),
                  static_cast<unsigned long long>(total[0]));
      check.expect(total[1] < total[0], "strictly fewer remote waits than waiting on every edge");
    }

    // Everyone is idle: stop the node (BYE), then write the trace.
    MPI_Barrier(MPI_COMM_WORLD);
    progress.stop();
    (void)progress.wait_stopped();
    const std::string path = out_dir + "/trace-rank" + std::to_string(rank) + ".json";
    std::ofstream file(path);
    const causal::status written = trace.write(file);
    file.close();
    check.expect(written.ok() && !file.fail(), "this rank's trace was written");
    (void)mpi->flush();
    MPI_Barrier(MPI_COMM_WORLD);
    ok = check.all_hold();
  }
  if (rank == 0) std::printf("%s\n", ok ? "all checks passed" : "SOME CHECKS FAILED");
  return ok ? 0 : 1;
}
