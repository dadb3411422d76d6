// 00_first_pipeline: three stages on three CPU queues, all submitted up front.
// Each queue learns from the timelines it waits on and skips a wait it can
// prove implied: store waits on `computed` and `loaded`, and the second is elided.
#include <causal/adapters/cpu/queue.hpp>

#include <cstdio>

int main() {
  // [snippet:first_pipeline]
  causal::executor ex;                                  // one worker per hardware thread
  causal::semaphore loaded, computed;                   // timelines that carry frontiers
  causal::cpu::queue load(ex), compute(ex), store(ex);  // each on a fresh axis: declared
                                                        // last, so destroyed first
  int in[4] = {}, out[4] = {};
  int *x = in, *y = out;
  for (std::uint64_t i = 1; i <= 4; ++i) {
    const auto k = static_cast<int>(i - 1);
    (void)load.host({}, {{&loaded, i}}, [x, k] { x[k] = k + 1; });
    (void)compute.host({{&loaded, i}}, {{&computed, i}}, [x, y, k] { y[k] = x[k] * 10; });
    (void)store.host({{&computed, i}, {&loaded, i}}, {}, [x, y, k] { std::printf("%d -> %d\n", x[k], y[k]); });
  }
  if (!store.wait_idle()) return 1;
  // [/snippet]
  const causal::queue_stats s = store.stats();
  std::printf("store: %llu waits issued, %llu elided\n", static_cast<unsigned long long>(s.device_waits),
              static_cast<unsigned long long>(s.waits_elided()));
  return s.waits_elided() >= 4 && out[3] == 40 ? 0 : 1;
}
