// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// mpi_test_support: what the MPI carrier's tests share -- the test message
// layout and its checks, polling with a lambda, bounded poll loops, and a
// heartbeat-based detector of silent peers.
//
// Test messages start with a 16-byte header {kind, from, seq} followed by
// bytes that are a function of (from, seq, index), so a receiver can check
// every byte without knowing the size in advance. Messages shorter than
// the header (the size tests) carry only pattern bytes.
//
// Thread safety: one thread (the carrier's rules).
// Memory order:  not applicable.
// Blocking/allocation: the poll loops spin until their condition or their
//                limit; make_message allocates.
// Size:          not applicable.
// See also:      mpi_carrier_test.cpp, mpi_carrier_death_test.cpp.
#pragma once

#include <causal/adapters/mpi/mpi_carrier.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace causal::test::mpi {

/// What a test message is for.
enum class kind : std::uint32_t { data = 1, bye = 2, heartbeat = 3, late = 4, done = 5 };

/// The first 16 bytes of a test message.
struct header {
  kind what = kind::data;
  std::uint32_t from = 0;
  std::uint64_t seq = 0;
};
inline constexpr std::size_t header_bytes = sizeof(header);
static_assert(header_bytes == 16, "the test header is 16 bytes");

/// Returns the byte at `index` of a message from `from` numbered `seq`.
[[nodiscard]] inline std::byte pattern(std::uint32_t from, std::uint64_t seq,
                                       std::size_t index) noexcept {
  return static_cast<std::byte>((from * 131U + seq * 31U + index * 7U + 1U) & 0xffU);
}

/// Returns a message of `size` bytes (at least header_bytes).
[[nodiscard]] inline std::vector<std::byte> make_message(kind what, std::uint32_t from,
                                                         std::uint64_t seq, std::size_t size) {
  std::vector<std::byte> bytes(size < header_bytes ? header_bytes : size);
  const header h{what, from, seq};
  std::memcpy(bytes.data(), &h, header_bytes);
  for (std::size_t i = header_bytes; i < bytes.size(); ++i) {
    bytes[i] = pattern(from, seq, i);
  }
  return bytes;
}

/// Reads the header of `bytes` into `out`; false when it is too short or
/// a byte after the header does not match the pattern.
[[nodiscard]] inline bool read_message(std::span<const std::byte> bytes, header& out) noexcept {
  if (bytes.size() < header_bytes) {
    return false;
  }
  std::memcpy(&out, bytes.data(), header_bytes);
  for (std::size_t i = header_bytes; i < bytes.size(); ++i) {
    if (bytes[i] != pattern(out.from, out.seq, i)) {
      return false;
    }
  }
  return true;
}

/// Calls `c.poll` with a lambda `f(from, bytes)` (which must not throw).
template <class Carrier, class F>
std::size_t poll_with(Carrier& c, F& f) {
  return c.poll(
      [](void* context, std::uint32_t from, std::span<const std::byte> bytes) noexcept {
        (*static_cast<F*>(context))(from, bytes);
      },
      &f);
}

/// Polls with `f` until `done()` holds or `limit` passes; returns done().
template <class Carrier, class F, class Done>
bool poll_until(Carrier& c, F& f, Done done,
                std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return done();
    }
    poll_with(c, f);
  }
  return true;
}

/// Finds silent peers from heartbeats: a peer is silent once nothing came
/// from it for `silence` while every other live peer (this rank included,
/// through its own heartbeats to itself) was heard within `fresh`. The
/// second rule keeps a detector that was itself descheduled from blaming
/// its peers.
class silence_detector {
 public:
  using clock = std::chrono::steady_clock;

  silence_detector(std::uint32_t ranks, std::chrono::milliseconds silence,
                   std::chrono::milliseconds fresh)
      : last_heard_(ranks, clock::now()), gone_(ranks, false), silence_(silence), fresh_(fresh) {}

  /// Notes a message from `from`.
  void heard(std::uint32_t from) noexcept { last_heard_[from] = clock::now(); }

  /// Notes that `peer` is gone (no longer expected to speak).
  void forget(std::uint32_t peer) noexcept { gone_[peer] = true; }
  [[nodiscard]] bool gone(std::uint32_t peer) const noexcept { return gone_[peer]; }

  /// Returns a live peer that is silent, or -1.
  [[nodiscard]] std::int64_t silent_peer() const noexcept {
    const auto now = clock::now();
    for (std::uint32_t p = 0; p < last_heard_.size(); ++p) {
      if (gone_[p] || now - last_heard_[p] <= silence_) {
        continue;
      }
      bool others_fresh = true;
      for (std::uint32_t q = 0; q < last_heard_.size(); ++q) {
        if (q != p && !gone_[q] && now - last_heard_[q] > fresh_) {
          others_fresh = false;
        }
      }
      if (others_fresh) {
        return p;
      }
    }
    return -1;
  }

 private:
  std::vector<clock::time_point> last_heard_;
  std::vector<bool> gone_;
  std::chrono::milliseconds silence_;
  std::chrono::milliseconds fresh_;
};

/// Sends a heartbeat to every live peer (this rank included) when at least
/// `every` passed since the last round.
class heartbeat {
 public:
  explicit heartbeat(std::chrono::microseconds every) : every_(every) {}

  template <class Carrier>
  void tick(Carrier& c, const silence_detector& peers) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < every_) {
      return;
    }
    last_ = now;
    const auto beat = make_message(kind::heartbeat, c.rank(), seq_++, header_bytes);
    for (std::uint32_t p = 0; p < c.size(); ++p) {
      if (!peers.gone(p)) {
        static_cast<void>(c.send(p, beat));  // a refused beat is the detector's business
      }
    }
  }

 private:
  std::chrono::microseconds every_;
  std::chrono::steady_clock::time_point last_{};
  std::uint64_t seq_ = 0;
};

}  // namespace causal::test::mpi
