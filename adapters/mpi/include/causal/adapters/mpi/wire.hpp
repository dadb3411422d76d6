// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// wire: the byte form of the messages causal::mpi nodes exchange -- a small
// versioned header, a few varints and, for updates, the frontier in its own
// wire form (<causal/frontier_wire.hpp>) -- and the strict parser that
// reads them from untrusted bytes.
//
// Layout, version 1. Every multi-byte integer is an unsigned LEB128 varint
// in its shortest form (frontier_wire's rules: 7 bits a byte, low group
// first, at most 10 bytes). Every message starts with a 3-byte header:
//
//   offset  size  field
//   0       1     version, 0x01
//   1       1     kind (message_kind, 1..9)
//   2       1     flags: bits the kind defines; every other bit must be 0
//
// and continues by kind (F = frontier_wire bytes, which run to the end):
//
//   HELLO       flags bit 0 = more HELLO parts follow
//               rank, size, session (varints); 4 bytes: the axis layout's
//               session, machine, domain and ordinal bits (sum 64, domain
//               <= 32); features (varint bit set, advisory: unknown bits
//               are allowed); heartbeat interval in us; frontier Capacity
//               (1..4096); axes: count, then per axis a delta (the first is
//               the raw axis, later ones >= 1, so strictly increasing) and
//               its current epoch (0 allowed: nothing submitted yet);
//               exports: count, then id deltas (the first raw, later >= 1)
//   SUBSCRIBE   id                      (send me id's state and updates)
//   UNSUBSCRIBE id
//   SUBMITTED   id, value (>= 1), producer ref, [producer], F
//   REACHED     flags bit 0 = external (signal_external: no frontier, and
//               then nothing follows the value)
//               id, value (>= 1), producer ref, [producer], F
//   FAILED      id, errc (1 byte, a known non-ok code), position, text
//               length (<= max_failure_text), text (printable ASCII)
//   BYE         (nothing: the sender leaves the job in order)
//   HEARTBEAT   (nothing: the sender is alive)
//   AXES        axes the sender announced after its HELLO: count (>= 1),
//               then per axis a delta and its epoch, as in HELLO
//
// The producer ref names the producer entry (the signalling operation's own
// (axis, epoch), <causal/semaphore.hpp>) without repeating
// it: 0 = none, 2 + k = entry k of the frontier (the usual case: a queue's
// frontier holds its own entry), 1 = spelled out next as an axis varint and
// a non-zero epoch varint, allowed only when no entry equals it. Every
// value therefore has exactly one encoding, and for every accepted message
// encoding the decoded fields reproduces the input bytes (the fuzz target
// checks this).
//
// Sizes. An update (SUBMITTED, REACHED) is 3 + varint(id) + varint(value) +
// 1 + serialized_size(frontier) bytes when the producer is an entry. With
// ids below 128, values below 16 384, epochs below 128 and the frontier's n
// entries on one rank's axes (machine = rank, 1..127, ordinals close
// together), that is 17 + 2n bytes (10 for n = 0): within the 24 + 4n
// budget. Each further rank an update's frontier names costs about 8 more
// bytes (its first axis is a new 2^48-sized delta), so the budget holds
// for frontiers naming up to 3 ranks with one entry each, or more entries
// per rank; see adapters/mpi/README.md. An external REACHED is 6 bytes, a
// SUBSCRIBE 4, BYE and HEARTBEAT 3. max_update_size<F> bounds an update.
//
// decode() rejects, with an errc, a message naming the problem and the
// byte offset as the error's position: an unknown version (unsupported_
// version), an unknown kind or flag, truncation, over-long or non-
// canonical varints, trailing bytes, a zero value, a producer index past
// the entries or an explicit producer that equals one, a bad layout,
// rank >= size, unsorted or overflowing axis/id lists, an unknown error
// code, over-long or unprintable failure text, and every frontier error of
// deserialize() (over capacity, zero epochs, repeated axes, ...), with
// the offset moved to the whole message. It never reads outside the span,
// never allocates and never yields an invalid frontier. decode_into() is
// decode() into a caller's message (a receiver reuses one instead of
// building and copying ~450 bytes per message); both parse a frontier of up
// to 16 entries in place with deserialize()'s checks, and leave anything
// else (larger frontiers, every rejected one) to deserialize() itself, so
// errors and results are deserialize()'s.
//
// Thread safety: pure functions of their arguments; decoded views point
//                into the caller's bytes.
// Memory order:  not applicable.
// Blocking/allocation: never block, never allocate.
// Size:          message<F> holds one F (about 200 bytes by default).
// Configuration: the frontier type F bounds what decodes (its Capacity);
//                max_failure_text.
// See also:      <causal/frontier_wire.hpp>, <causal/adapters/mpi/node.hpp>,
//                adapters/mpi/README.md, test/fuzz/mpi_wire_decode_fuzz.cpp.
#pragma once

#include <causal/axis.hpp>
#include <causal/config.hpp>
#include <causal/frontier.hpp>
#include <causal/frontier_wire.hpp>
#include <causal/result.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <span>
#include <type_traits>
#include <string_view>
#include <utility>

CAUSAL_BEGIN_NAMESPACE

namespace mpi {

/// The message format version encode_* write and decode() reads.
inline constexpr std::uint8_t wire_version = 1;
/// Bytes of the header every message starts with.
inline constexpr std::size_t wire_header_size = 3;
/// The most bytes of an error's message text a FAILED carries.
inline constexpr std::size_t max_failure_text = 64;

/// What a message says; the values are the wire's kind byte.
enum class message_kind : std::uint8_t {
  hello = 1,        ///< start-up: rank, session, axes, epochs, exports
  subscribe = 2,    ///< a proxy asks the owner for an export's state
  unsubscribe = 3,  ///< a proxy was closed
  submitted = 4,    ///< a future signal of an export was submitted
  reached = 5,      ///< an export reached a value
  failed = 6,       ///< an export failed (or was withdrawn)
  bye = 7,          ///< the sender leaves the job in order
  heartbeat = 8,    ///< the sender is alive
  axes = 9,         ///< axes the sender announced after its HELLO
};

/// Returns the kind's name, e.g. "submitted".
[[nodiscard]] constexpr std::string_view to_string(message_kind k) noexcept {
  switch (k) {
    case message_kind::hello: return "hello";
    case message_kind::subscribe: return "subscribe";
    case message_kind::unsubscribe: return "unsubscribe";
    case message_kind::submitted: return "submitted";
    case message_kind::reached: return "reached";
    case message_kind::failed: return "failed";
    case message_kind::bye: return "bye";
    case message_kind::heartbeat: return "heartbeat";
    case message_kind::axes: return "axes";
  }
  return "unknown";
}

/// Flag bits of the header's third byte, by kind.
inline constexpr std::uint8_t hello_flag_more = 0x01;
inline constexpr std::uint8_t reached_flag_external = 0x01;

/// The most bytes an update (SUBMITTED or REACHED) of frontier type `F`
/// takes: header, id, value, producer ref and spelled-out producer, and
/// the largest frontier.
template <frontier_type F>
inline constexpr std::size_t max_update_size = wire_header_size + 10 + 10 + 1 + 10 + 10 +
                                               max_serialized_size<F>;

/// The most bytes a FAILED takes.
inline constexpr std::size_t max_failed_size = wire_header_size + 10 + 1 + 10 + 1 + max_failure_text;

//===-- decoded views -------------------------------------------------------===//

/// A FAILED message's error. `text` points into the received bytes.
struct failure_info {
  errc code = errc::ok;
  std::uint64_t position = 0;
  std::string_view text{};
};

namespace detail {

/// Reads a varint that decode() already validated.
inline std::uint64_t read_checked_varint(std::span<const std::byte> in, std::size_t& pos) noexcept {
  const result<std::uint64_t> v = causal::detail::get_varint(in, pos);
  CAUSAL_ASSERT(v.ok(), "mpi wire: a validated list failed to re-read");
  return v.value_or(0);
}

}  // namespace detail

namespace detail {

/// A strictly increasing, delta-coded list read from validated bytes:
/// HELLO's axes (WithEpoch: each delta is followed by the axis's epoch) and
/// its export ids. The parser checked every varint, so reading cannot fail.
template <bool WithEpoch>
class delta_list {
 public:
  using value_type = std::conditional_t<WithEpoch, frontier_entry, std::uint64_t>;

  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = delta_list::value_type;
    using difference_type = std::ptrdiff_t;
    using reference = value_type;
    using pointer = void;

    iterator() noexcept = default;
    value_type operator*() const noexcept { return current_; }
    iterator& operator++() noexcept {
      --left_;
      load();
      return *this;
    }
    void operator++(int) noexcept { ++*this; }
    friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.left_ == b.left_; }

   private:
    friend delta_list;
    iterator(std::span<const std::byte> bytes, std::size_t left) noexcept : bytes_(bytes), left_(left) {
      load();
    }
    void load() noexcept {
      if (left_ == 0) return;
      previous_ += read_checked_varint(bytes_, pos_);
      if constexpr (WithEpoch) {
        current_ = frontier_entry{axis{previous_}, read_checked_varint(bytes_, pos_)};
      } else {
        current_ = previous_;
      }
    }
    std::span<const std::byte> bytes_{};
    std::size_t pos_ = 0;
    std::size_t left_ = 0;
    std::uint64_t previous_ = 0;
    value_type current_{};
  };

  delta_list() noexcept = default;
  delta_list(std::span<const std::byte> bytes, std::size_t count) noexcept : bytes_(bytes), count_(count) {}

  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
  [[nodiscard]] iterator begin() const noexcept { return iterator(bytes_, count_); }
  [[nodiscard]] iterator end() const noexcept { return iterator{}; }

 private:
  std::span<const std::byte> bytes_{};
  std::size_t count_ = 0;
};

}  // namespace detail

/// HELLO's axis list: (axis, current epoch) pairs in strictly increasing
/// axis order. Epochs may be 0.
using axis_list = detail::delta_list<true>;

/// HELLO's export ids, strictly increasing.
using id_list = detail::delta_list<false>;

/// The fixed fields of a HELLO (what encode_hello takes besides the lists).
struct hello_fields {
  std::uint32_t rank = 0;
  std::uint32_t size = 1;
  std::uint64_t session = 0;
  /// The axis layout's session, machine, domain and ordinal bits.
  std::array<std::uint8_t, 4> layout{8, 8, 8, 40};
  /// Advisory feature bits (none defined in version 1).
  std::uint64_t features = 0;
  std::uint64_t heartbeat_interval_us = 0;
  std::uint32_t frontier_capacity = 12;
  /// More HELLO parts follow this one.
  bool more = false;

  /// The layout bits of `Layout`, as HELLO carries them.
  template <axis_encoding Layout>
  [[nodiscard]] static constexpr std::array<std::uint8_t, 4> layout_of() noexcept {
    return {static_cast<std::uint8_t>(Layout::session_bits), static_cast<std::uint8_t>(Layout::machine_bits),
            static_cast<std::uint8_t>(Layout::domain_bits), static_cast<std::uint8_t>(Layout::ordinal_bits)};
  }
};

/// A decoded HELLO: the fixed fields and views of its lists.
struct hello_info : hello_fields {
  axis_list axes{};
  id_list exports{};
};

/// One decoded message. Which members mean something depends on `kind`:
/// id (subscribe, unsubscribe, submitted, reached, failed), value/producer/
/// frontier (submitted, reached unless external), failure (failed), hello
/// (hello), axes (axes).
template <frontier_type Frontier>
struct message {
  message_kind kind = message_kind::heartbeat;
  std::uint8_t flags = 0;
  std::uint64_t id = 0;
  std::uint64_t value = 0;
  bool external = false;
  frontier_entry producer{};
  Frontier frontier{};
  failure_info failure{};
  hello_info hello{};
  axis_list axes{};
};

//===-- encoding ------------------------------------------------------------===//

namespace detail {

/// Writes into `out` while there is room and counts every byte, so one pass
/// both measures and encodes; `overflowed()` then means "out too short".
class wire_writer {
 public:
  explicit constexpr wire_writer(std::span<std::byte> out) noexcept : out_(out) {}

  constexpr void byte(std::uint8_t b) noexcept {
    if (pos_ < out_.size()) out_[pos_] = static_cast<std::byte>(b);
    ++pos_;
  }
  constexpr void varint(std::uint64_t v) noexcept {
    while (v >= 0x80) {
      byte(static_cast<std::uint8_t>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    byte(static_cast<std::uint8_t>(v));
  }
  /// The frontier's wire form, byte for byte what serialize() writes
  /// (<causal/frontier_wire.hpp>), in one pass instead of its two (size,
  /// then bytes).
  template <frontier_type F>
  constexpr void frontier(const F& f) noexcept {
    byte(frontier_wire_version);
    byte(f.tainted() ? 1 : 0);
    varint(f.size());
    std::uint64_t previous = 0;
    for (const frontier_entry e : f) {
      varint(e.axis.raw() - previous);
      varint(e.epoch);
      previous = e.axis.raw();
    }
  }
  constexpr void header(message_kind k, std::uint8_t flags) noexcept {
    byte(wire_version);
    byte(static_cast<std::uint8_t>(k));
    byte(flags);
  }

  [[nodiscard]] constexpr std::size_t size() const noexcept { return pos_; }
  [[nodiscard]] constexpr bool overflowed() const noexcept { return pos_ > out_.size(); }

  /// The outcome: the bytes written, or capacity_exceeded naming the size
  /// needed (the contents of `out` are then unspecified).
  [[nodiscard]] constexpr result<std::size_t> finish() const noexcept {
    if (overflowed()) return error{errc::capacity_exceeded, "output buffer smaller than the message", pos_};
    return pos_;
  }

 private:
  std::span<std::byte> out_;
  std::size_t pos_ = 0;
};

template <frontier_type F>
constexpr void write_producer(wire_writer& w, const F& f, frontier_entry producer) noexcept {
  if (producer.epoch == 0) {
    w.varint(0);
    return;
  }
  for (std::size_t i = 0; i < f.size(); ++i) {
    if (f[i] == producer) {
      w.varint(2 + i);
      return;
    }
  }
  w.varint(1);
  w.varint(producer.axis.raw());
  w.varint(producer.epoch);
}

constexpr bool printable(std::uint8_t c) noexcept { return c >= 0x20 && c <= 0x7e; }

/// Writes an axis list as HELLO and AXES carry it: the count, then per
/// axis its delta from the previous one (the first raw) and its epoch.
constexpr void write_axis_list(wire_writer& w, std::span<const frontier_entry> axes) noexcept {
  w.varint(axes.size());
  std::uint64_t previous = 0;
  for (const frontier_entry& e : axes) {
    w.varint(e.axis.raw() - previous);
    w.varint(e.epoch);
    previous = e.axis.raw();
  }
}

/// The index of the first axis not above the one before it, or 0 when the
/// list is strictly increasing.
[[nodiscard]] constexpr std::size_t first_unsorted_axis(std::span<const frontier_entry> axes) noexcept {
  for (std::size_t i = 1; i < axes.size(); ++i) {
    if (!(axes[i - 1].axis < axes[i].axis)) return i;
  }
  return 0;
}

}  // namespace detail

/// Writes a HELLO. `axes` must be strictly increasing by axis and `exports`
/// strictly increasing (else invalid_argument); `fields.rank < fields.size`.
/// Returns the bytes written or capacity_exceeded (the size needed as
/// position). A caller splitting a long list sets `fields.more` on every
/// part but the last.
[[nodiscard]] constexpr result<std::size_t> encode_hello(std::span<std::byte> out, const hello_fields& fields,
                                                         std::span<const frontier_entry> axes,
                                                         std::span<const std::uint64_t> exports) noexcept {
  if (fields.size == 0 || fields.rank >= fields.size) {
    return error{errc::invalid_argument, "encode_hello: rank must be below size", fields.rank};
  }
  if (fields.frontier_capacity == 0 || fields.frontier_capacity > 4096) {
    return error{errc::invalid_argument, "encode_hello: frontier capacity must be 1..4096", fields.frontier_capacity};
  }
  if (const std::size_t i = detail::first_unsorted_axis(axes); i != 0) {
    return error{errc::invalid_argument, "encode_hello: axes not strictly increasing", i};
  }
  for (std::size_t i = 1; i < exports.size(); ++i) {
    if (exports[i - 1] >= exports[i]) {
      return error{errc::invalid_argument, "encode_hello: export ids not strictly increasing", i};
    }
  }
  detail::wire_writer w(out);
  w.header(message_kind::hello, fields.more ? hello_flag_more : 0);
  w.varint(fields.rank);
  w.varint(fields.size);
  w.varint(fields.session);
  for (const std::uint8_t bits : fields.layout) w.byte(bits);
  w.varint(fields.features);
  w.varint(fields.heartbeat_interval_us);
  w.varint(fields.frontier_capacity);
  detail::write_axis_list(w, axes);
  w.varint(exports.size());
  std::uint64_t previous = 0;
  for (const std::uint64_t id : exports) {
    w.varint(id - previous);
    previous = id;
  }
  return w.finish();
}

/// Writes an AXES message: `axes` (at least one, strictly increasing by
/// axis) announced after the sender's HELLO. Returns the bytes written,
/// invalid_argument for an empty or unsorted list, or capacity_exceeded
/// (the size needed as position); a long list is sent in several messages.
[[nodiscard]] constexpr result<std::size_t> encode_axes(std::span<std::byte> out,
                                                        std::span<const frontier_entry> axes) noexcept {
  if (axes.empty()) return error{errc::invalid_argument, "encode_axes: no axis to announce"};
  if (const std::size_t i = detail::first_unsorted_axis(axes); i != 0) {
    return error{errc::invalid_argument, "encode_axes: axes not strictly increasing", i};
  }
  detail::wire_writer w(out);
  w.header(message_kind::axes, 0);
  detail::write_axis_list(w, axes);
  return w.finish();
}

/// Writes a SUBSCRIBE of export `id`.
[[nodiscard]] constexpr result<std::size_t> encode_subscribe(std::span<std::byte> out, std::uint64_t id) noexcept {
  detail::wire_writer w(out);
  w.header(message_kind::subscribe, 0);
  w.varint(id);
  return w.finish();
}

/// Writes an UNSUBSCRIBE of export `id`.
[[nodiscard]] constexpr result<std::size_t> encode_unsubscribe(std::span<std::byte> out, std::uint64_t id) noexcept {
  detail::wire_writer w(out);
  w.header(message_kind::unsubscribe, 0);
  w.varint(id);
  return w.finish();
}

namespace detail {

/// SUBMITTED and REACHED share one layout: header, id, value, producer
/// ref, frontier.
template <frontier_type F>
[[nodiscard]] constexpr result<std::size_t> encode_update(std::span<std::byte> out, message_kind kind,
                                                          std::uint64_t id, std::uint64_t value, const F& f,
                                                          frontier_entry producer,
                                                          const char* value_zero_message) noexcept {
  if (value == 0) return error{errc::invalid_argument, value_zero_message};
  wire_writer w(out);
  w.header(kind, 0);
  w.varint(id);
  w.varint(value);
  write_producer(w, f, producer);
  w.frontier(f);
  return w.finish();
}

}  // namespace detail

/// Writes a SUBMITTED: export `id` has a submitted signal of `value`
/// (>= 1, else invalid_argument) carrying `f`, from `producer` (epoch 0:
/// none).
template <frontier_type F>
[[nodiscard]] constexpr result<std::size_t> encode_submitted(std::span<std::byte> out, std::uint64_t id,
                                                             std::uint64_t value, const F& f,
                                                             frontier_entry producer) noexcept {
  return detail::encode_update(out, message_kind::submitted, id, value, f, producer,
                               "encode_submitted: value 0 is never submitted");
}

/// Writes a REACHED: export `id` reached `value` (>= 1) with `f` and
/// `producer` (what a waiter on exactly `value` imports).
template <frontier_type F>
[[nodiscard]] constexpr result<std::size_t> encode_reached(std::span<std::byte> out, std::uint64_t id,
                                                           std::uint64_t value, const F& f,
                                                           frontier_entry producer) noexcept {
  return detail::encode_update(out, message_kind::reached, id, value, f, producer,
                               "encode_reached: value 0 is never reached");
}

/// Writes a REACHED of a value an external signal made (no frontier).
[[nodiscard]] constexpr result<std::size_t> encode_reached_external(std::span<std::byte> out, std::uint64_t id,
                                                                    std::uint64_t value) noexcept {
  if (value == 0) return error{errc::invalid_argument, "encode_reached_external: value 0 is never reached"};
  detail::wire_writer w(out);
  w.header(message_kind::reached, reached_flag_external);
  w.varint(id);
  w.varint(value);
  return w.finish();
}

/// Writes a FAILED of export `id` with `e` (code != ok, else
/// invalid_argument). The message text is cut to max_failure_text bytes
/// and every byte outside printable ASCII becomes '?'.
[[nodiscard]] constexpr result<std::size_t> encode_failed(std::span<std::byte> out, std::uint64_t id,
                                                          const error& e) noexcept {
  if (e.code() == errc::ok) return error{errc::invalid_argument, "encode_failed: the error is errc::ok"};
  const std::string_view text = e.message().substr(0, max_failure_text);
  detail::wire_writer w(out);
  w.header(message_kind::failed, 0);
  w.varint(id);
  w.byte(static_cast<std::uint8_t>(e.code()));
  w.varint(e.position());
  w.varint(text.size());
  for (const char c : text) {
    const auto b = static_cast<std::uint8_t>(c);
    w.byte(detail::printable(b) ? b : static_cast<std::uint8_t>('?'));
  }
  return w.finish();
}

/// Writes a BYE.
[[nodiscard]] constexpr result<std::size_t> encode_bye(std::span<std::byte> out) noexcept {
  detail::wire_writer w(out);
  w.header(message_kind::bye, 0);
  return w.finish();
}

/// Writes a HEARTBEAT.
[[nodiscard]] constexpr result<std::size_t> encode_heartbeat(std::span<std::byte> out) noexcept {
  detail::wire_writer w(out);
  w.header(message_kind::heartbeat, 0);
  return w.finish();
}

//===-- decoding ------------------------------------------------------------===//

namespace detail {

/// Reads a varint of at most 9 bytes at `pos` into `out` and advances
/// `pos` when get_varint() would accept it with the same value; else
/// returns false with `pos` unchanged (a longer, truncated or non-canonical
/// varint: the caller asks get_varint(), which names the problem). Nine
/// bytes hold 63 bits, so nothing overflows; a final byte of 0 would not
/// be the shortest form.
constexpr bool fast_varint(std::span<const std::byte> in, std::size_t& pos, std::uint64_t& out) noexcept {
  if (pos >= in.size()) return false;
  std::uint64_t b = static_cast<std::uint8_t>(in[pos]);
  if (b < 0x80) {
    out = b;
    ++pos;
    return true;
  }
  std::uint64_t v = b & 0x7f;
  const std::size_t left = in.size() - pos;
  const std::size_t end = left < 9 ? left : 9;
  for (std::size_t k = 1; k < end; ++k) {
    b = static_cast<std::uint8_t>(in[pos + k]);
    v |= (b & 0x7f) << (7 * k);
    if (b < 0x80) {
      if (b == 0) return false;
      out = v;
      pos += k + 1;
      return true;
    }
  }
  return false;
}

/// Reads a varint at `pos` into `out`, advancing `pos`; false (pos
/// unspecified) where get_varint() would fail.
constexpr bool read_varint(std::span<const std::byte> in, std::size_t& pos, std::uint64_t& out) noexcept {
  if (fast_varint(in, pos, out)) return true;
  const result<std::uint64_t> v = causal::detail::get_varint(in, pos);
  if (!v) return false;
  out = *v;
  return true;
}

class wire_reader {
 public:
  explicit constexpr wire_reader(std::span<const std::byte> in) noexcept : in_(in) {}

  constexpr result<std::uint64_t> varint() noexcept {
    std::uint64_t v = 0;
    if (fast_varint(in_, pos_, v)) return v;
    return causal::detail::get_varint(in_, pos_);
  }
  constexpr result<std::uint8_t> byte(const char* what_if_missing) noexcept {
    if (pos_ == in_.size()) return error{errc::truncated, what_if_missing, pos_};
    return static_cast<std::uint8_t>(in_[pos_++]);
  }
  [[nodiscard]] constexpr std::size_t pos() const noexcept { return pos_; }
  [[nodiscard]] constexpr std::size_t left() const noexcept { return in_.size() - pos_; }
  [[nodiscard]] constexpr std::span<const std::byte> rest() const noexcept { return in_.subspan(pos_); }
  constexpr void skip(std::size_t n) noexcept { pos_ += n; }
  [[nodiscard]] constexpr status end() const noexcept {
    if (pos_ != in_.size()) return error{errc::malformed, "trailing bytes after the message", pos_};
    return {};
  }

 private:
  std::span<const std::byte> in_;
  std::size_t pos_ = 0;
};

/// Reads a varint that must fit 32 bits.
constexpr result<std::uint32_t> read_u32(wire_reader& r, const char* too_big) noexcept {
  const std::size_t at = r.pos();
  const result<std::uint64_t> v = r.varint();
  if (!v) return v.error_value();
  if (*v > 0xffff'ffffu) return error{errc::malformed, too_big, at};
  return static_cast<std::uint32_t>(*v);
}

/// Reads a strictly increasing delta-coded list of `count` entries, each a
/// delta optionally followed by a second varint (`with_epoch`), checking
/// canonical varints, repeats and overflow.
constexpr status read_delta_list(wire_reader& r, std::uint64_t count, bool with_epoch,
                                 const char* repeat_message) noexcept {
  const std::size_t start = r.pos();
  std::uint64_t previous = 0;
  // Each entry takes at least one byte per varint, so a count beyond what
  // is left is truncation, found before any loop runs long.
  if (count > r.left() / (with_epoch ? 2 : 1)) {
    return error{errc::truncated, "list count exceeds the bytes left", start};
  }
  for (std::uint64_t k = 0; k < count; ++k) {
    const std::size_t at = r.pos();
    const result<std::uint64_t> delta = r.varint();
    if (!delta) return delta.error_value();
    if (k > 0 && *delta == 0) return error{errc::malformed, repeat_message, at};
    if (*delta > ~std::uint64_t{0} - previous) return error{errc::malformed, "list delta overflows 64 bits", at};
    previous += *delta;
    if (with_epoch) {
      const result<std::uint64_t> epoch = r.varint();
      if (!epoch) return epoch.error_value();
    }
  }
  return {};
}

/// Reads the `count` entries of an axis list (HELLO, AXES) that follow its
/// count, checked like every delta list, into `out`, a view of `bytes`.
constexpr status read_axis_list(wire_reader& r, std::span<const std::byte> bytes, std::uint64_t count,
                                axis_list& out) noexcept {
  const std::size_t start = r.pos();
  if (status s = read_delta_list(r, count, true, "axis repeats the previous axis"); !s) return s;
  out = axis_list(bytes.subspan(start, r.pos() - start), static_cast<std::size_t>(count));
  return {};
}

/// Frontiers of at most this many entries take parse_frontier_in_place.
inline constexpr std::size_t in_place_frontier_entries = 16;

/// Parses a frontier's wire form straight into `out` when `bytes` is one
/// deserialize<F>() accepts and it has at most in_place_frontier_entries
/// entries, and returns true: `out` then equals what deserialize() would
/// return. Otherwise returns false (`out` unspecified): the caller runs
/// deserialize(), which names the problem. The same checks as
/// deserialize(), without its entry array, its result and a copy.
template <frontier_type F>
constexpr bool parse_frontier_in_place(std::span<const std::byte> bytes, F& out) noexcept {
  if (bytes.size() < 2 || static_cast<std::uint8_t>(bytes[0]) != frontier_wire_version) return false;
  const auto flags = static_cast<std::uint8_t>(bytes[1]);
  if ((flags & ~std::uint8_t{1}) != 0) return false;
  std::size_t pos = 2;
  std::uint64_t count = 0;
  if (!read_varint(bytes, pos, count) || count > F::capacity || count > in_place_frontier_entries) return false;
  out.clear();
  std::uint64_t previous = 0;
  for (std::size_t k = 0; k < count; ++k) {
    std::uint64_t delta = 0;
    std::uint64_t epoch = 0;
    if (!read_varint(bytes, pos, delta) || (k > 0 && delta == 0) || delta > ~std::uint64_t{0} - previous) {
      return false;
    }
    if (!read_varint(bytes, pos, epoch) || epoch == 0) return false;
    previous += delta;
    // Axes strictly increase and count <= Capacity: each entry appends.
    (void)out.insert_or_raise(axis{previous}, epoch);
  }
  if (pos != bytes.size()) return false;
  if ((flags & 1) != 0) out.set_tainted();
  return true;
}

template <frontier_type F>
constexpr status read_update_tail(wire_reader& r, message<F>& m) noexcept {
  const std::size_t ref_at = r.pos();
  const result<std::uint64_t> ref = r.varint();
  if (!ref) return ref.error_value();
  frontier_entry explicit_producer{};
  if (*ref == 1) {
    const result<std::uint64_t> a = r.varint();
    if (!a) return a.error_value();
    const std::size_t epoch_at = r.pos();
    const result<std::uint64_t> e = r.varint();
    if (!e) return e.error_value();
    if (*e == 0) return error{errc::malformed, "spelled-out producer has epoch 0", epoch_at};
    explicit_producer = frontier_entry{axis{*a}, *e};
  }
  const std::size_t frontier_at = r.pos();
  if (!parse_frontier_in_place(r.rest(), m.frontier)) {
    result<F> f = deserialize<F>(r.rest());
    if (!f) {
      const error& e = f.error_value();
      return error{e.code(), e.message().data(), frontier_at + e.position()};
    }
    m.frontier = *f;
  }
  r.skip(r.left());
  if (*ref == 0) {
    m.producer = {};
  } else if (*ref == 1) {
    for (const frontier_entry e : m.frontier) {
      if (e == explicit_producer) {
        return error{errc::malformed, "spelled-out producer equals a frontier entry (must be an index)", ref_at};
      }
    }
    m.producer = explicit_producer;
  } else {
    if (*ref - 2 >= m.frontier.size()) {
      return error{errc::malformed, "producer index beyond the frontier's entries", ref_at};
    }
    m.producer = m.frontier[static_cast<std::size_t>(*ref - 2)];
  }
  return {};
}

constexpr bool known_error_code(std::uint8_t c) noexcept {
  return c >= static_cast<std::uint8_t>(errc::invalid_argument) &&
         c <= static_cast<std::uint8_t>(errc::unsupported_version);
}

}  // namespace detail

/// Parses one message from untrusted `bytes` into `m`, or returns an error
/// naming the first problem and its byte offset; see the file comment.
/// What decode() does without a fresh message<F> (~450 bytes) to build and
/// return: a receiver reuses one. It writes every member the decoded kind
/// uses (plus kind, flags and external); the others keep what `m` held.
/// After an error `m` holds unspecified (valid) values.
template <frontier_type F>
[[nodiscard]] constexpr status decode_into(std::span<const std::byte> bytes, message<F>& m) noexcept {
  if (bytes.size() < wire_header_size) {
    return error{errc::truncated, "message shorter than its 3-byte header", bytes.size()};
  }
  if (static_cast<std::uint8_t>(bytes[0]) != wire_version) {
    return error{errc::unsupported_version, "unknown message version in byte 0", 0};
  }
  const auto kind_byte = static_cast<std::uint8_t>(bytes[1]);
  if (kind_byte < static_cast<std::uint8_t>(message_kind::hello) ||
      kind_byte > static_cast<std::uint8_t>(message_kind::axes)) {
    return error{errc::malformed, "unknown message kind in byte 1", 1};
  }
  m.kind = static_cast<message_kind>(kind_byte);
  m.flags = static_cast<std::uint8_t>(bytes[2]);
  m.external = false;
  std::uint8_t allowed = 0;
  if (m.kind == message_kind::hello) allowed = hello_flag_more;
  if (m.kind == message_kind::reached) allowed = reached_flag_external;
  if ((m.flags & ~allowed) != 0) return error{errc::malformed, "unknown flag bits for this kind in byte 2", 2};

  detail::wire_reader r(bytes);
  r.skip(wire_header_size);
  auto read_id = [&]() -> status {
    const result<std::uint64_t> id = r.varint();
    if (!id) return id.error_value();
    m.id = *id;
    return {};
  };
  auto read_value = [&]() -> status {
    const std::size_t at = r.pos();
    const result<std::uint64_t> v = r.varint();
    if (!v) return v.error_value();
    if (*v == 0) return error{errc::malformed, "value 0 in an update", at};
    m.value = *v;
    return {};
  };

  switch (m.kind) {
    case message_kind::hello: {
      hello_info& h = m.hello;
      h.more = (m.flags & hello_flag_more) != 0;
      const std::size_t rank_at = r.pos();
      const result<std::uint32_t> rank = detail::read_u32(r, "rank exceeds 32 bits");
      if (!rank) return rank.error_value();
      const result<std::uint32_t> size = detail::read_u32(r, "size exceeds 32 bits");
      if (!size) return size.error_value();
      if (*size == 0 || *rank >= *size) return error{errc::malformed, "rank not below the job size", rank_at};
      h.rank = *rank;
      h.size = *size;
      const result<std::uint64_t> session = r.varint();
      if (!session) return session.error_value();
      h.session = *session;
      const std::size_t layout_at = r.pos();
      unsigned sum = 0;
      for (std::uint8_t& bits : h.layout) {
        const result<std::uint8_t> b = r.byte("input ends inside the axis layout");
        if (!b) return b.error_value();
        if (*b > 64) return error{errc::malformed, "axis layout field wider than 64 bits", layout_at};
        bits = *b;
        sum += *b;
      }
      if (sum != 64 || h.layout[2] > 32) {
        return error{errc::malformed, "axis layout bits do not add up to 64 (domain <= 32)", layout_at};
      }
      const result<std::uint64_t> features = r.varint();
      if (!features) return features.error_value();
      h.features = *features;
      const result<std::uint64_t> interval = r.varint();
      if (!interval) return interval.error_value();
      h.heartbeat_interval_us = *interval;
      const std::size_t capacity_at = r.pos();
      const result<std::uint64_t> capacity = r.varint();
      if (!capacity) return capacity.error_value();
      if (*capacity == 0 || *capacity > 4096) {
        return error{errc::malformed, "frontier capacity outside 1..4096", capacity_at};
      }
      h.frontier_capacity = static_cast<std::uint32_t>(*capacity);
      const result<std::uint64_t> axis_count = r.varint();
      if (!axis_count) return axis_count.error_value();
      if (status s = detail::read_axis_list(r, bytes, *axis_count, h.axes); !s) return s.error_value();
      const result<std::uint64_t> export_count = r.varint();
      if (!export_count) return export_count.error_value();
      const std::size_t exports_at = r.pos();
      if (const auto list = detail::read_delta_list(r, *export_count, false, "export id repeats the previous id");
          !list) {
        return list.error_value();
      }
      h.exports = id_list(bytes.subspan(exports_at, r.pos() - exports_at), static_cast<std::size_t>(*export_count));
      break;
    }
    case message_kind::subscribe:
    case message_kind::unsubscribe:
      if (status s = read_id(); !s) return s.error_value();
      break;
    case message_kind::submitted:
      if (status s = read_id(); !s) return s.error_value();
      if (status s = read_value(); !s) return s.error_value();
      if (status s = detail::read_update_tail(r, m); !s) return s.error_value();
      break;
    case message_kind::reached:
      if (status s = read_id(); !s) return s.error_value();
      if (status s = read_value(); !s) return s.error_value();
      m.external = (m.flags & reached_flag_external) != 0;
      if (!m.external) {
        if (status s = detail::read_update_tail(r, m); !s) return s.error_value();
      } else {
        m.frontier.clear();
        m.frontier.set_tainted();
        m.producer = {};
      }
      break;
    case message_kind::failed: {
      if (status s = read_id(); !s) return s.error_value();
      const std::size_t code_at = r.pos();
      const result<std::uint8_t> code = r.byte("input ends before the error code");
      if (!code) return code.error_value();
      if (!detail::known_error_code(*code)) return error{errc::malformed, "unknown error code", code_at};
      m.failure.code = static_cast<errc>(*code);
      const result<std::uint64_t> position = r.varint();
      if (!position) return position.error_value();
      m.failure.position = *position;
      const std::size_t length_at = r.pos();
      const result<std::uint64_t> length = r.varint();
      if (!length) return length.error_value();
      if (*length > max_failure_text) return error{errc::malformed, "failure text longer than max_failure_text", length_at};
      if (*length > r.left()) return error{errc::truncated, "input ends inside the failure text", length_at};
      const std::size_t text_at = r.pos();
      for (std::size_t i = 0; i < *length; ++i) {
        if (!detail::printable(static_cast<std::uint8_t>(bytes[text_at + i]))) {
          return error{errc::malformed, "failure text byte outside printable ASCII", text_at + i};
        }
      }
      m.failure.text = std::string_view(reinterpret_cast<const char*>(bytes.data() + text_at),
                                        static_cast<std::size_t>(*length));
      r.skip(static_cast<std::size_t>(*length));
      break;
    }
    case message_kind::bye:
    case message_kind::heartbeat:
      break;
    case message_kind::axes: {
      const std::size_t count_at = r.pos();
      const result<std::uint64_t> axis_count = r.varint();
      if (!axis_count) return axis_count.error_value();
      if (*axis_count == 0) return error{errc::malformed, "AXES announces no axis", count_at};
      if (status s = detail::read_axis_list(r, bytes, *axis_count, m.axes); !s) return s.error_value();
      break;
    }
  }
  return r.end();
}

/// Parses one message from untrusted `bytes`, or returns an error naming
/// the first problem and its byte offset; see the file comment.
template <frontier_type F>
[[nodiscard]] constexpr result<message<F>> decode(std::span<const std::byte> bytes) noexcept {
  message<F> m;
  if (status s = decode_into(bytes, m); !s) return s.error_value();
  return m;
}

/// The kind and id of an update-like message (SUBSCRIBE, UNSUBSCRIBE,
/// SUBMITTED, REACHED, FAILED) read from its first bytes only, or nothing:
/// what a node learns from a message that decode() rejected, to fail the
/// one proxy whose update stream it broke.
[[nodiscard]] constexpr std::optional<std::pair<message_kind, std::uint64_t>> peek_id(
    std::span<const std::byte> bytes) noexcept {
  if (bytes.size() < wire_header_size || static_cast<std::uint8_t>(bytes[0]) != wire_version) return std::nullopt;
  const auto k = static_cast<std::uint8_t>(bytes[1]);
  if (k < static_cast<std::uint8_t>(message_kind::subscribe) || k > static_cast<std::uint8_t>(message_kind::failed)) {
    return std::nullopt;
  }
  std::size_t pos = wire_header_size;
  const result<std::uint64_t> id = causal::detail::get_varint(bytes, pos);
  if (!id) return std::nullopt;
  return std::pair{static_cast<message_kind>(k), *id};
}

}  // namespace mpi

CAUSAL_END_NAMESPACE
