// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// trace_dot_sample: writes to stdout the DOT graph of a small traced run —
// three queues, every wait tier, a host value, a producer outside the
// trace, a host deferral and names that need escaping — for the
// trace_dot_render test, which renders it with `dot -Tsvg`.

#include <causal/queue.hpp>
#include <causal/semaphore.hpp>
#include <causal/trace.hpp>

#include <cstdint>
#include <cstdio>
#include <iostream>

namespace {

const causal::axis A = causal::make_axis(0, 0, causal::domain::queue, 1).value();
const causal::axis B = causal::make_axis(0, 0, causal::domain::queue, 2).value();
const causal::axis C = causal::make_axis(0, 0, causal::domain::queue, 3).value();
const causal::axis U = causal::make_axis(0, 0, causal::domain::queue, 9).value();

using queue = causal::recording_queue<true>;
using deferring_queue = causal::recording_queue<false>;
using wait = queue::wait_type;
using signal = queue::signal_type;

bool run(causal::recording_sink& sink) {
  causal::semaphore host, s1, s2, s3, outside;
  queue qa{A}, qb{B}, untraced{U};
  deferring_queue qc{C};
  for (causal::semaphore* s : {&host, &s1, &s2, &s3, &outside}) s->set_trace_sink(&sink);
  qa.set_trace_sink(&sink);
  qb.set_trace_sink(&sink);
  qc.set_trace_sink(&sink);
  sink.name(&host, "host \"input\"");
  sink.name(&s1, "s1\\tokens");
  sink.name(&s2, "s2\n{embeddings}");
  sink.name(&s3, "s3 <late> caf\xc3\xa9 \xff");
  sink.name(A, "tokenizer");
  sink.name(B, "encoder -> decoder");
  sink.name(C, "binary events");

  bool ok = host.signal(1).ok();
  ok = ok && untraced.submit({}, {signal{&outside, 1}}, 99).ok();
  ok = ok && qa.submit({wait{&host, 1}}, {signal{&s1, 1}}, 1).ok();                  // reached
  ok = ok && qa.submit({wait{&s1, 1}}, {signal{&s1, 2}}, 2).ok();                    // same queue
  ok = ok && qb.submit({wait{&s1, 2}, wait{&outside, 1}}, {signal{&s2, 1}}, 3).ok(); // device x2
  ok = ok && qb.submit({wait{&s1, 1}}, {}, 4).ok();                                  // dominated
  ok = ok && qc.submit({wait{&s3, 1}}, {}, 5).ok();                                  // deferred
  ok = ok && qa.submit({wait{&s2, 1}}, {signal{&s3, 1}}, 6).ok();
  ok = ok && qc.pump().ok();
  while (const std::uint64_t e = qa.backend().complete_next()) qa.retire(e);
  while (const std::uint64_t e = untraced.backend().complete_next()) untraced.retire(e);
  while (const std::uint64_t e = qb.backend().complete_next()) qb.retire(e);
  while (const std::uint64_t e = qa.backend().complete_next()) qa.retire(e);
  while (const std::uint64_t e = qc.backend().complete_next()) qc.retire(e);
  return ok;
}

}  // namespace

int main() {
  causal::recording_sink sink;
  if (!run(sink)) {
    std::fputs("trace_dot_sample: the traced run failed\n", stderr);
    return 1;
  }
  if (!causal::write_dot(std::cout, sink).ok()) {
    std::fputs("trace_dot_sample: writing the DOT failed\n", stderr);
    return 1;
  }
  return 0;
}
