// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// 02_timeline_elision: timeline semaphores that carry frontiers, and the
// queue logic that uses them to skip device waits, on a simulated device:
//   1. three queues, upload -> compute -> present: present waits on both
//      upload and compute, but only one device wait is issued, because
//      compute's signal already proves upload finished (transitivity);
//   2. the "late waiter": a consumer that waits for 2 after the timeline
//      moved on to 5 imports what was known at 2, not at 5;
//   3. submit-before-wait: a consumer submitted before its producer's work
//      ran still elides, from the producer entry of the submitted signal;
//   4. an external signal (an imported event) taints its values: waits on
//      them are never elided, until a witnessed signal heals the taint;
//   5. failure is sticky and reaches host waiters instead of stranding them;
//      a value reached before the failure stays reached.
//
// The device is causal::recording_backend, which logs what a queue issued
// and completes operations in FIFO order when their waits are met. Every
// printed claim is checked; the program exits 1 if the library disagrees.
//
// Build by hand: c++ -std=c++20 -I include examples/02_timeline_elision.cpp -pthread
#include <causal/causal.hpp>

#include <chrono>
#include <cstdio>
#include <string>

namespace {

int failures = 0;

void expect(bool ok, const char* claim) {
  std::printf("    %s %s\n", ok ? "ok  " : "FAIL", claim);
  if (!ok) ++failures;
}

// The queues of sections 2-4 get their axes here; section 1 shows the same
// with an allocator of its own. Axes are never reused.
causal::axis new_queue_axis() {
  static causal::axis_allocator more_axes{1};  // session 1: apart from section 1's
  return more_axes.allocate(0, causal::domain::queue).value();
}

void print_stats(const char* name, const causal::recording_queue<>& q) {
  const causal::queue_stats& s = q.stats();
  std::printf("  %-8s epoch %llu, device waits %llu, elided %llu (reached %llu, same queue %llu, "
              "dominated %llu), knowledge %s\n",
              name, static_cast<unsigned long long>(q.epoch()),
              static_cast<unsigned long long>(s.device_waits),
              static_cast<unsigned long long>(s.waits_elided()),
              static_cast<unsigned long long>(s.elided_reached),
              static_cast<unsigned long long>(s.elided_same_queue),
              static_cast<unsigned long long>(s.elided_dominated),
              causal::to_string(q.knowledge()).c_str());
}

void transitivity() {
  std::printf("1. upload -> compute -> present: one device wait instead of two\n");
  // [snippet:elision]
  causal::axis_allocator axes;  // hands out never-reused axes
  causal::recording_queue<> upload(axes.allocate(0, causal::domain::queue).value());
  causal::recording_queue<> compute(axes.allocate(0, causal::domain::queue).value());
  causal::recording_queue<> present(axes.allocate(0, causal::domain::queue).value());
  causal::semaphore uploaded, computed;

  // Submit the whole pipeline up front; nothing has run yet.
  (void)upload.submit({}, {{&uploaded, 1}}, /*op tag*/ 10);
  (void)compute.submit({{&uploaded, 1}}, {{&computed, 1}}, 20);
  (void)present.submit({{&uploaded, 1}, {&computed, 1}}, {}, 30);
  // present issued one device wait (on computed): computed's submitted
  // frontier holds upload's producer entry, so the wait on uploaded is implied.
  // [/snippet]
  print_stats("upload", upload);
  print_stats("compute", compute);
  print_stats("present", present);
  expect(compute.stats().device_waits == 1, "compute issued one device wait (on upload)");
  expect(present.stats().device_waits == 1, "present issued one device wait, not two");
  expect(present.stats().elided_dominated == 1, "present's wait on upload was elided");
  expect(present.knowledge().epoch_of(upload.axis()) == 1,
         "present knows upload's epoch 1 without ever waiting on it");

  // Run the simulated devices; FIFO completion reaches the semaphores.
  upload.retire(upload.backend().complete_next());
  compute.retire(compute.backend().complete_next());
  present.retire(present.backend().complete_next());
  expect(uploaded.value() == 1 && computed.value() == 1, "both semaphores reached 1");
  expect(present.completed_epoch() == 1, "present completed its operation");
}

void late_waiter() {
  std::printf("2. the late waiter imports what was known at its value\n");
  causal::semaphore s;
  const causal::axis a = new_queue_axis(), b = new_queue_axis();
  (void)s.signal(2, causal::frontier{{a, 7}});
  (void)s.signal(5, causal::frontier{{a, 7}, {b, 3}});
  const auto at2 = s.frontier_at(2);
  const auto at3 = s.frontier_at(3);
  std::printf("  S = %llu; a waiter on S >= 2 imports %s, on S >= 3 imports %s\n",
              static_cast<unsigned long long>(s.value()), causal::to_string(at2->frontier).c_str(),
              causal::to_string(at3->frontier).c_str());
  expect(at2->exact && at2->frontier.epoch_of(b) == 0, "S >= 2 does not claim b's work");
  expect(at3->frontier.epoch_of(b) == 3, "S >= 3 was first reached by the signal of 5");
}

void submit_before_wait() {
  std::printf("3. submit-before-wait: elided from the producer entry\n");
  causal::recording_queue<> producer(new_queue_axis()), consumer(new_queue_axis());
  causal::semaphore ready, done;
  (void)producer.submit({}, {{&ready, 1}}, 1);
  // The consumer learns the producer's epoch through an unrelated wait...
  (void)consumer.submit({{&ready, 1}}, {{&done, 1}}, 2);
  // ...so a second consumer operation waiting on `ready` needs nothing.
  (void)consumer.submit({{&ready, 1}}, {}, 3);
  print_stats("consumer", consumer);
  expect(consumer.stats().device_waits == 1, "one device wait for two waits on the same value");
  expect(consumer.stats().elided_dominated == 1, "the second wait was elided before anything ran");
  expect(ready.value() == 0, "and the producer has not even run yet");
}

void external_taint() {
  std::printf("4. external signals taint; witnessed signals heal\n");
  causal::recording_queue<> q(new_queue_axis());
  causal::semaphore imported;
  (void)imported.signal_external(4);  // e.g. an imported CUDA event
  expect(imported.is_tainted(4), "value 4 is tainted");
  (void)q.submit({{&imported, 4}}, {}, 1);
  expect(q.stats().device_waits == 1, "a wait on a tainted value is issued, never elided");
  (void)imported.signal(6, causal::frontier{{new_queue_axis(), 1}});
  expect(!imported.is_tainted(4) && imported.taint_watermark() == 6, "a witnessed signal healed it");
  (void)q.submit({{&imported, 4}}, {}, 2);
  expect(q.stats().elided_reached == 1, "and now the wait is elided (reached, untainted)");
}

void failure() {
  std::printf("5. failure is sticky and reaches waiters\n");
  causal::semaphore s;
  (void)s.signal(1);
  s.fail(causal::error{causal::errc::device_lost, "GPU fell off the bus"});
  const causal::status waited = s.wait_for(2, std::chrono::milliseconds(10));
  std::printf("  wait(2) after fail: %s\n", std::string(causal::to_string(waited.code())).c_str());
  expect(waited.code() == causal::errc::device_lost, "a waiter on a value not reached gets the failure");
  expect(s.wait_for(1, std::chrono::milliseconds(10)).ok(),
         "a value reached before the failure stays reached, however late the wait");
  expect(s.signal(2).code() == causal::errc::device_lost, "later signals are refused");
}

}  // namespace

int main() {
  transitivity();
  late_waiter();
  submit_before_wait();
  external_taint();
  failure();
  if (failures != 0) {
    std::printf("%d claim(s) FAILED\n", failures);
    return 1;
  }
  std::printf("all claims hold\n");
  return 0;
}
