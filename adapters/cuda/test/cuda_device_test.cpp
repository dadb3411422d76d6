// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// The CUDA adapter on a real GPU: the queue conformance suite on
// memory-ops streams, then device behaviour (memory operations or the
// host-signalling fallback, a host relay, the event baseline, pools).
// Without a device (cudaGetDeviceCount answers cudaErrorNoDevice, or no
// driver is installed) the binary exits 77, which Meson reports as
// skipped; any other failure to count devices fails it.

#include "catch.hpp"
#include "catch_session.hpp"

#include "cuda_fixture.hpp"
#include "native_env.hpp"
#include "skip.hpp"

#include <causal/adapters/cuda/pool.hpp>

#include <cstdio>

#define CAUSAL_CONFORMANCE_FIXTURES causal_cuda_test::cuda_fixture<causal_cuda_test::native_env>
#include "queue_conformance.hpp"

namespace {
using native_fixture = causal_cuda_test::cuda_fixture<causal_cuda_test::native_env>;
using event_fixture =
    causal_cuda_test::cuda_fixture<causal_cuda_test::native_env, causal::cuda::sync_mode::events>;
}  // namespace

TEST_CASE("cuda device: a three-stream chain runs in order on the device", "[cuda][device]") {
  native_fixture f;
  REQUIRE(f.available());
  auto& a = f.make_queue();
  auto& b = f.make_queue();
  auto& c = f.make_queue();
  auto& s1 = f.make_semaphore();
  auto& s2 = f.make_semaphore();
  auto& done = f.make_semaphore();
  for (std::uint64_t r = 1; r <= 20; ++r) {
    REQUIRE(c.submit({{&s2, r}}, {{&done, r}}, f.op(static_cast<int>(300 + r))));
    REQUIRE(b.submit({{&s1, r}}, {{&s2, r}}, f.op(static_cast<int>(200 + r))));
    REQUIRE(a.submit({}, {{&s1, r}}, f.op(static_cast<int>(100 + r))));
  }
  REQUIRE(causal_conformance::host_wait(f, done, 20));
  REQUIRE(f.finish());
  const std::vector<int> log = f.log();
  for (int r = 1; r <= 20; ++r) {
    CHECK(causal_conformance::position(log, 100 + r) < causal_conformance::position(log, 200 + r));
    CHECK(causal_conformance::position(log, 200 + r) < causal_conformance::position(log, 300 + r));
  }
  std::printf("device: %s, 64-bit stream memory operations: %s\n", f.context().name(),
              f.context().has_memory_ops() ? "yes" : "no (host-signalling fallback)");
}

TEST_CASE("cuda device: the event baseline orders across streams", "[cuda][device][events]") {
  event_fixture f;
  REQUIRE(f.available());
  auto& a = f.make_queue();
  auto& b = f.make_queue();
  auto& s = f.make_semaphore();
  auto& done = f.make_semaphore();
  auto r = b.submit({{&s, 1}}, {{&done, 1}}, f.op(2));
  REQUIRE(r);
  CHECK(r->deferred);
  REQUIRE(a.submit({}, {{&s, 1}}, f.op(1)));
  REQUIRE(causal_conformance::host_wait(f, done, 1));
  REQUIRE(f.finish());
  CHECK(f.log() == std::vector<int>{1, 2});
}

TEST_CASE("cuda device: the device pool hands out device memory", "[cuda][device][pool]") {
  native_fixture f;
  REQUIRE(f.available());
  auto& q = f.make_queue();
  causal::cuda::device_block_pool<causal::cuda::stream_queue> pool(f.context(), 1 << 20);
  REQUIRE(pool.setup_status());
  auto a = q.stream_alloca(pool, 4096);
  REQUIRE(a);
  CHECK(a->pointer != nullptr);
  REQUIRE(q.submit({}, {}, f.op(1)));
  REQUIRE(q.stream_dealloca(pool, *a));
  REQUIRE(f.finish());
}

int main(int argc, char* argv[]) {
  // Skip only for "no device" (cudaErrorNoDevice, or no driver at all); a
  // driver older than the runtime, or any other failure, fails loudly.
  char why[256];
  const int gate = causal::cuda::device_gate(causal::cuda::native_driver(), why, sizeof why);
  if (gate == 77) causal::test::skip_binary(why);
  if (gate != 0) {
    std::fprintf(stderr, "FAIL: %s\n", why);
    return gate;
  }
  return causal::test::run_catch_session(argc, argv);
}
