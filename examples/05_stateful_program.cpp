// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// 05_stateful_program: a stateful program (docs/invocations.md), the trivial
// kernel: a matrix state with set, matmul and get. A program owns its state
// and an internal timeline; each call waits for the previous one and signals
// the next value, so
//
//   m.set(input); m.matmul(a); m.matmul(b); m.matmul(c); output = m.get();
//
// runs in that order although the user passes no fence and never waits
// in between; the only wait is get()'s. Then the program is pipelined with
// a second one through user fences, and a failing call shows that the
// program's later calls fail too instead of running on suspect state.
// Every claim printed is checked; the program exits 1 if the library
// disagrees.
//
// Build by hand: c++ -std=c++20 -I include examples/05_stateful_program.cpp -pthread
#include <causal/causal.hpp>

#include <array>
#include <cstdint>
#include <cstdio>
#include <string>

namespace {

int failures = 0;

void check(bool ok, const char* claim) {
  std::printf("  [%s] %s\n", ok ? "ok" : "FAILED", claim);
  if (!ok) ++failures;
}

using matrix = std::array<std::int64_t, 4>;  // 2x2, row-major

matrix matmul(const matrix& x, const matrix& y) {
  return {x[0] * y[0] + x[1] * y[2], x[0] * y[1] + x[1] * y[3],
          x[2] * y[0] + x[3] * y[2], x[2] * y[1] + x[3] * y[3]};
}

std::string show(const matrix& m) {
  char text[96];
  std::snprintf(text, sizeof text, "[[%lld %lld] [%lld %lld]]", static_cast<long long>(m[0]),
                static_cast<long long>(m[1]), static_cast<long long>(m[2]),
                static_cast<long long>(m[3]));
  return text;
}

// [snippet:trivial_kernel]
/// The program's state: the global _x0 and a log of the calls.
struct trivial_kernel {
  matrix x0{};
  std::string calls;
};

/// The trivial kernel as a program: every export is a call on the program.
class trivial_program {
 public:
  explicit trivial_program(causal::executor& ex) : program_(ex) {}

  auto set(matrix x) {
    return program_.call([x](trivial_kernel& k) { k.x0 = x; k.calls += "set "; });
  }
  auto matmul(matrix x) {
    return program_.call([x](trivial_kernel& k) { k.x0 = ::matmul(x, k.x0); k.calls += "matmul "; });
  }
  auto get() {
    return program_.call([](trivial_kernel& k) { k.calls += "get"; return k; });
  }
  causal::basic_program<trivial_kernel>& program() { return program_; }

 private:
  causal::basic_program<trivial_kernel> program_;
};
// [/snippet]

}  // namespace

int main() {
  causal::timeline hand_off;  // outlives the executor and the programs
  causal::executor ex{causal::executor_options{.worker_count = 2}};
  const matrix input{1, 2, 3, 4}, a{0, 1, 1, 0}, b{2, 0, 0, 2}, c{1, 1, 0, 1};

  std::puts("1. set, matmul x3, get with no user fences");
  trivial_program m{ex};
  m.set(input);
  m.matmul(a);
  m.matmul(b);
  m.matmul(c);
  auto output = m.get();
  auto got = output.get();  // the implicit wait
  check(got.ok(), "get() returned");
  if (got) {
    std::printf("  calls: %s\n  x0 = %s\n", got->calls.c_str(), show(got->x0).c_str());
    check(got->calls == "set matmul matmul matmul get", "the calls ran in program order");
    check(got->x0 == matmul(c, matmul(b, matmul(a, input))), "x0 = c * b * a * input");
  }

  std::puts("2. pipelined with a second program through user fences");
  trivial_program n{ex};
  // m's next call signals hand_off at 1; n's first call waits for it.
  (void)m.program().call([](trivial_kernel& k) { k.x0 = matmul(k.x0, k.x0); },
                         causal::fence{}, hand_off.at(1));
  (void)n.program().call([](trivial_kernel& k) { k.calls += "after-m "; }, hand_off.at(1),
                         causal::fence{});
  auto n_out = n.get();
  check(n_out.get().ok() && n_out.get()->calls == "after-m get", "n ran after m's call, in order");

  std::puts("3. a failing call poisons the program");
  (void)m.program().call([](trivial_kernel&) -> causal::status {
    return causal::error{causal::errc::out_of_range, "matmul: shape mismatch"};
  });
  auto late = m.get();
  const causal::status s = late.wait();
  std::printf("  get() after the failure: %s\n", std::string(causal::to_string(s.code())).c_str());
  check(s.code() == causal::errc::out_of_range, "later calls fail with the first error");

  if (failures != 0) {
    std::printf("%d claim(s) failed\n", failures);
    return 1;
  }
  std::puts("all claims hold");
  return 0;
}
