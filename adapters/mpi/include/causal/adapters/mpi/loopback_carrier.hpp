// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// loopback_carrier: an in-process carrier -- N endpoints of one hub, one
// per simulated rank -- for testing causal::mpi nodes without MPI, with
// fault injection (a rank that drops out, bytes corrupted or injected).
//
// Model. A loopback_hub owns one inbox per rank: a byte ring of framed
// messages ([from: 4 bytes][length: 4 bytes][bytes]) behind a mutex.
// send(to, bytes) appends a copy to `to`'s inbox, so messages between one
// pair arrive in send order (every sender appends to the same FIFO); poll()
// swaps the whole inbox out under the mutex and hands each message to the
// handler with no lock held, so a handler may send, even to itself. An
// endpoint (basic_loopback_carrier) is a rank's view of the hub and
// satisfies causal::mpi::carrier.
//
// Faults. drop(rank) makes a rank vanish: its queued inbox is discarded,
// sends to it and from it fail with the given error, and peer_status() of
// it reports that error everywhere. inject(from, to, bytes) delivers
// arbitrary bytes as if `from` had sent them. corrupt_next(from, to, ...)
// flips bits of (or truncates) the next message of that pair on its way.
// silence(rank) discards what the rank sends without telling anyone, the
// way a hung process with a live connection looks (only a heartbeat
// timeout notices).
//
// Thread safety: every member of the hub and of the endpoints may be called
//                from any thread, concurrently (each inbox has its own
//                mutex; fault state is atomic or under those mutexes).
// Memory order:  what a sender did before send() happens-before the
//                handler call that receives the message (the inbox mutex).
// Blocking/allocation: send and poll take one inbox mutex briefly; the
//                rings grow by doubling (allocating) only past their
//                largest size so far, so a steady exchange never
//                allocates.
// Size:          one inbox (mutex, ring, counters) per rank.
// Configuration: MaxMessageBytes (default 64 KiB).
// See also:      <causal/adapters/mpi/carrier.hpp>,
//                <causal/adapters/mpi/node.hpp>.
#pragma once

#include <causal/adapters/mpi/carrier.hpp>
#include <causal/config.hpp>
#include <causal/result.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

CAUSAL_BEGIN_NAMESPACE

namespace mpi {

/// The shared half of a set of loopback endpoints; see the file comment.
class loopback_hub {
 public:
  /// Creates a hub for `size` ranks (>= 1).
  explicit loopback_hub(std::uint32_t size)
      : size_(size == 0 ? 1 : size), inboxes_(std::make_unique<inbox[]>(size_)) {
    for (std::uint32_t r = 0; r < size_; ++r) inboxes_[r].bytes.reserve(4096);
  }
  loopback_hub(const loopback_hub&) = delete;
  loopback_hub& operator=(const loopback_hub&) = delete;

  [[nodiscard]] std::uint32_t size() const noexcept { return size_; }

  //===-- fault injection --===//

  /// Makes `rank` vanish with `why`: its inbox is emptied, and every later
  /// send to or from it, and peer_status() of it, returns `why`.
  void drop(std::uint32_t rank, error why = error{errc::device_lost, "loopback: the rank was dropped"}) {
    if (rank >= size()) return;
    inbox& box = inboxes_[rank];
    std::lock_guard lock(box.mutex);
    box.dropped = why;
    box.bytes.clear();
    box.dropped_flag.store(true, std::memory_order_release);
  }

  /// Discards (when `on`) everything `rank` sends from now on, reporting
  /// success to it: a rank whose connection stays up but says nothing.
  void silence(std::uint32_t rank, bool on = true) noexcept {
    if (rank < size()) inboxes_[rank].silenced.store(on, std::memory_order_release);
  }

  /// Delivers `bytes` to `to` as if `from` had sent them (any length).
  void inject(std::uint32_t from, std::uint32_t to, std::span<const std::byte> bytes) {
    if (to >= size()) return;
    (void)append(inboxes_[to], from, bytes);
  }

  /// Changes the next message from `from` to `to` on its way: XORs the byte
  /// at `offset` (modulo its length) with `mask`, then cuts it to
  /// `truncate_to` bytes when that is shorter.
  void corrupt_next(std::uint32_t from, std::uint32_t to, std::size_t offset, std::byte mask,
                    std::size_t truncate_to = ~std::size_t{0}) {
    if (to >= size()) return;
    inbox& box = inboxes_[to];
    std::lock_guard lock(box.mutex);
    box.corrupt = corruption{true, from, offset, mask, truncate_to};
  }

  /// Messages delivered to handlers so far, over all ranks.
  [[nodiscard]] std::uint64_t delivered() const noexcept { return delivered_.load(std::memory_order_relaxed); }
  /// Messages accepted by send() so far, over all ranks.
  [[nodiscard]] std::uint64_t sent() const noexcept { return sent_.load(std::memory_order_relaxed); }

 private:
  template <std::size_t>
  friend class basic_loopback_carrier;

  struct corruption {
    bool armed = false;
    std::uint32_t from = 0;
    std::size_t offset = 0;
    std::byte mask{};
    std::size_t truncate_to = 0;
  };

  struct inbox {
    std::mutex mutex;
    std::vector<std::byte> bytes;  // framed messages, oldest first
    error dropped{};
    std::atomic<bool> dropped_flag{false};
    std::atomic<bool> silenced{false};
    corruption corrupt{};
  };

  static constexpr std::size_t frame_header = 8;

  /// Appends one framed message; false when memory ran out.
  bool append(inbox& box, std::uint32_t from, std::span<const std::byte> bytes) noexcept {
    std::lock_guard lock(box.mutex);
    if (box.dropped_flag.load(std::memory_order_relaxed)) return true;
    std::size_t length = bytes.size();
    const std::size_t at = box.bytes.size();
    try {
      box.bytes.resize(at + frame_header + length);
    } catch (...) {
      return false;
    }
    std::byte* frame = box.bytes.data() + at;
    // An empty message may come with a null data pointer, which memcpy
    // must not be given even for 0 bytes.
    if (length != 0) std::memcpy(frame + frame_header, bytes.data(), length);
    if (box.corrupt.armed && box.corrupt.from == from) {
      box.corrupt.armed = false;
      if (length != 0) frame[frame_header + box.corrupt.offset % length] ^= box.corrupt.mask;
      if (box.corrupt.truncate_to < length) {
        length = box.corrupt.truncate_to;
        box.bytes.resize(at + frame_header + length);
        frame = box.bytes.data() + at;
      }
    }
    const auto length32 = static_cast<std::uint32_t>(length);
    std::memcpy(frame, &from, 4);
    std::memcpy(frame + 4, &length32, 4);
    return true;
  }

  std::uint32_t size_;
  std::unique_ptr<inbox[]> inboxes_;
  std::atomic<std::uint64_t> delivered_{0};
  std::atomic<std::uint64_t> sent_{0};
};

/// One rank's endpoint of a loopback_hub: a causal::mpi::carrier.
template <std::size_t MaxMessageBytes = 65536>
class basic_loopback_carrier {
 public:
  static constexpr std::size_t max_message_bytes = MaxMessageBytes;

  /// The endpoint of `rank` (< hub.size()) on `hub`, which must outlive it.
  basic_loopback_carrier(loopback_hub& hub, std::uint32_t rank) : hub_(&hub), rank_(rank) {
    CAUSAL_ASSERT(rank < hub.size(), "loopback_carrier: rank beyond the hub's size");
    scratch_.reserve(4096);
  }
  basic_loopback_carrier(const basic_loopback_carrier&) = delete;
  basic_loopback_carrier& operator=(const basic_loopback_carrier&) = delete;
  /// A node still using the carrier is refused loudly (carrier_users).
  ~basic_loopback_carrier() { users_.refuse_if_used("mpi::loopback_carrier"); }

  /// Counted by each node built on this carrier (carrier_users).
  void note_user(int delta) noexcept { users_.note_user(delta); }

  [[nodiscard]] std::uint32_t rank() const noexcept { return rank_; }
  [[nodiscard]] std::uint32_t size() const noexcept { return hub_->size(); }

  /// Copies `bytes` into `peer`'s inbox. Errors: invalid_argument (too
  /// long, or no such peer); the drop error of this rank or of `peer`;
  /// resource_exhausted when memory ran out.
  status send(std::uint32_t peer, std::span<const std::byte> bytes) noexcept {
    if (bytes.size() > MaxMessageBytes) {
      return error{errc::invalid_argument, "loopback: message longer than max_message_bytes", bytes.size()};
    }
    if (peer >= size()) return error{errc::invalid_argument, "loopback: no such peer", peer};
    if (status s = peer_status(rank_); !s) return s;
    if (status s = peer_status(peer); !s) return s;
    hub_->sent_.fetch_add(1, std::memory_order_relaxed);
    if (hub_->inboxes_[rank_].silenced.load(std::memory_order_acquire)) return {};
    if (!hub_->append(hub_->inboxes_[peer], rank_, bytes)) {
      return error{errc::resource_exhausted, "loopback: out of memory for a message", bytes.size()};
    }
    return {};
  }

  /// Hands every message queued for this rank to `on_message`, oldest
  /// first; returns how many. Nothing when this rank was dropped.
  std::size_t poll(message_handler on_message, void* context) noexcept {
    loopback_hub::inbox& box = hub_->inboxes_[rank_];
    {
      std::lock_guard lock(box.mutex);
      if (box.bytes.empty()) return 0;
      // Swap, so that both buffers keep their capacity: no allocation once
      // they are as large as the traffic needs.
      scratch_.clear();
      scratch_.swap(box.bytes);
    }
    std::size_t delivered = 0;
    std::size_t pos = 0;
    while (pos + loopback_hub::frame_header <= scratch_.size()) {
      std::uint32_t from = 0;
      std::uint32_t length = 0;
      std::memcpy(&from, scratch_.data() + pos, 4);
      std::memcpy(&length, scratch_.data() + pos + 4, 4);
      pos += loopback_hub::frame_header;
      on_message(context, from, std::span<const std::byte>(scratch_.data() + pos, length));
      pos += length;
      ++delivered;
    }
    hub_->delivered_.fetch_add(delivered, std::memory_order_relaxed);
    return delivered;
  }

  /// Ok, or the error `peer` was dropped with (invalid_argument: no such
  /// peer).
  [[nodiscard]] status peer_status(std::uint32_t peer) const noexcept {
    if (peer >= size()) return error{errc::invalid_argument, "loopback: no such peer", peer};
    loopback_hub::inbox& box = hub_->inboxes_[peer];
    if (!box.dropped_flag.load(std::memory_order_acquire)) return {};
    std::lock_guard lock(box.mutex);
    return box.dropped;
  }

 private:
  carrier_users users_;
  loopback_hub* hub_;
  std::uint32_t rank_;
  std::vector<std::byte> scratch_;
};

/// The default loopback endpoint (messages up to 64 KiB).
using loopback_carrier = basic_loopback_carrier<>;

static_assert(carrier<loopback_carrier>);

}  // namespace mpi

CAUSAL_END_NAMESPACE
