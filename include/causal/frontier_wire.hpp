// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// frontier_wire: the versioned byte form of a frontier, so frontiers can
// cross processes and machines, and its strict parser for untrusted bytes.
//
// Layout, version 1 (all multi-byte integers are unsigned LEB128 varints:
// 7 bits a byte, least significant group first, high bit = "more follows";
// the shortest encoding only, at most 10 bytes):
//
//   offset  size     field
//   0       1        version, 0x01
//   1       1        flags: bit 0 = tainted; bits 1..7 must be 0
//   2       varint   n, the number of entries
//   ...     n times  varint axis delta, varint epoch
//
// The first axis delta is the raw axis itself; each later delta is the
// difference to the previous axis and must be at least 1, so axes are
// strictly increasing by construction and a repeated axis (delta 0) is a
// clear error. Epochs must be non-zero. Nothing may follow the last entry.
// Because every value has exactly one encoding, equal frontiers serialize
// to equal bytes and `serialize(deserialize(b)) == b` for every accepted b.
//
// Sizes: the empty frontier is 3 bytes; a frontier of n entries on one
// machine with small epochs is typically 3 + 10 + 3n bytes; the bound is
// `max_serialized_size<F>` = 2 + 10 + 20 * Capacity.
//
// `deserialize` rejects, with `errc` and a message naming the problem and
// the byte offset as the error's position: unknown version, unknown flags,
// truncated input, over-long or non-canonical varints, more entries than
// the target Capacity, repeated or overflowing axes, zero epochs, and
// trailing bytes. It never reads outside the given span and never yields a
// frontier that breaks the class invariants.
//
// Thread safety: pure functions of their arguments.
// Memory order:  not applicable.
// Blocking/allocation: never block; never allocate, except the overload of
//                `serialize` that returns a `std::vector`.
// Size:          see above.
// Configuration: the frontier type's Capacity bounds what deserializes.
// See also:      <causal/frontier.hpp>, docs/frontiers.md "Wire format".
#pragma once

#include <causal/config.hpp>
#include <causal/frontier.hpp>
#include <causal/result.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

CAUSAL_BEGIN_NAMESPACE

/// The wire format version `serialize` writes and `deserialize` reads.
inline constexpr std::uint8_t frontier_wire_version = 1;

/// The most bytes `serialize` can write for a frontier of type `F`.
template <frontier_type F>
inline constexpr std::size_t max_serialized_size = 2 + 10 + 20 * F::capacity;

namespace detail {

constexpr std::size_t varint_size(std::uint64_t v) noexcept {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

constexpr std::size_t put_varint(std::byte* out, std::uint64_t v) noexcept {
  std::size_t n = 0;
  while (v >= 0x80) {
    out[n++] = static_cast<std::byte>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out[n++] = static_cast<std::byte>(v);
  return n;
}

/// Reads one canonical varint at `pos`, advancing it; fails on truncation,
/// more than 64 bits, or a redundant trailing zero group.
constexpr result<std::uint64_t> get_varint(std::span<const std::byte> in,
                                           std::size_t& pos) noexcept {
  std::uint64_t value = 0;
  const std::size_t start = pos;
  for (unsigned shift = 0;; shift += 7) {
    if (pos == in.size()) {
      return error{errc::truncated, "input ends inside a varint", start};
    }
    const auto byte = static_cast<std::uint8_t>(in[pos++]);
    const std::uint64_t group = byte & 0x7f;
    if (shift == 63 && group > 1) {
      return error{errc::malformed, "varint exceeds 64 bits", start};
    }
    value |= group << shift;
    if ((byte & 0x80) == 0) {
      if (group == 0 && shift != 0) {
        return error{errc::malformed, "varint is not in its shortest form", start};
      }
      return value;
    }
    if (shift == 63) {
      return error{errc::malformed, "varint exceeds 64 bits", start};
    }
  }
}

}  // namespace detail

/// Returns how many bytes `serialize(f)` writes.
template <frontier_type F>
[[nodiscard]] constexpr std::size_t serialized_size(const F& f) noexcept {
  std::size_t n = 2 + detail::varint_size(f.size());
  std::uint64_t previous = 0;
  for (const frontier_entry e : f) {
    n += detail::varint_size(e.axis.raw() - previous) + detail::varint_size(e.epoch);
    previous = e.axis.raw();
  }
  return n;
}

/// Writes the wire form of `f` into `out` and returns the number of bytes
/// written, or `errc::capacity_exceeded` (nothing written) when `out` is
/// shorter than `serialized_size(f)`.
template <frontier_type F>
[[nodiscard]] constexpr result<std::size_t> serialize(const F& f, std::span<std::byte> out) noexcept {
  const std::size_t need = serialized_size(f);
  if (out.size() < need) {
    return error{errc::capacity_exceeded, "output buffer smaller than serialized_size()", need};
  }
  std::size_t pos = 0;
  out[pos++] = static_cast<std::byte>(frontier_wire_version);
  out[pos++] = static_cast<std::byte>(f.tainted() ? 1 : 0);
  pos += detail::put_varint(out.data() + pos, f.size());
  std::uint64_t previous = 0;
  for (const frontier_entry e : f) {
    pos += detail::put_varint(out.data() + pos, e.axis.raw() - previous);
    pos += detail::put_varint(out.data() + pos, e.epoch);
    previous = e.axis.raw();
  }
  return pos;
}

/// Returns the wire form of `f` as a new vector.
template <frontier_type F>
[[nodiscard]] std::vector<std::byte> serialize(const F& f) {
  std::vector<std::byte> bytes(serialized_size(f));
  const result<std::size_t> written = serialize(f, std::span<std::byte>(bytes));
  CAUSAL_ASSERT(written && *written == bytes.size(), "serialized_size() disagrees with serialize()");
  return bytes;
}

/// Parses the wire form in `bytes` into a frontier of type `F`, or returns
/// an error naming the first problem and its byte offset. Never crashes on
/// hostile input; an accepted frontier always satisfies the invariants.
template <frontier_type F>
[[nodiscard]] constexpr result<F> deserialize(std::span<const std::byte> bytes) noexcept {
  if (bytes.size() < 2) {
    return error{errc::truncated, "input shorter than the 2-byte header", bytes.size()};
  }
  const auto version = static_cast<std::uint8_t>(bytes[0]);
  if (version != frontier_wire_version) {
    return error{errc::unsupported_version, "unknown frontier wire version in byte 0", 0};
  }
  const auto flags = static_cast<std::uint8_t>(bytes[1]);
  if ((flags & ~std::uint8_t{1}) != 0) {
    return error{errc::malformed, "unknown flag bits set in byte 1", 1};
  }
  std::size_t pos = 2;
  const result<std::uint64_t> count = detail::get_varint(bytes, pos);
  if (!count) return count.error_value();
  if (*count > F::capacity) {
    return error{errc::capacity_exceeded, "entry count exceeds the frontier's Capacity", 2};
  }
  frontier_entry entries[F::capacity]{};
  std::uint64_t previous = 0;
  for (std::size_t k = 0; k < *count; ++k) {
    const std::size_t entry_offset = pos;
    const result<std::uint64_t> delta = detail::get_varint(bytes, pos);
    if (!delta) return delta.error_value();
    if (k > 0 && *delta == 0) {
      return error{errc::malformed, "axis repeats the previous entry's axis", entry_offset};
    }
    if (*delta > ~std::uint64_t{0} - previous) {
      return error{errc::malformed, "axis delta overflows 64 bits", entry_offset};
    }
    const result<std::uint64_t> epoch = detail::get_varint(bytes, pos);
    if (!epoch) return epoch.error_value();
    if (*epoch == 0) {
      return error{errc::malformed, "entry has epoch 0 (absent axes are not written)", entry_offset};
    }
    previous += *delta;
    entries[k] = frontier_entry{axis{previous}, *epoch};
  }
  if (pos != bytes.size()) {
    return error{errc::malformed, "trailing bytes after the last entry", pos};
  }
  // Entries are strictly increasing and non-zero by the checks above, so
  // from_entries only copies them.
  result<F> out = F::from_entries(std::span<const frontier_entry>(entries, *count));
  if (out && (flags & 1) != 0) out->set_tainted();
  return out;
}

/// Overload for byte buffers of `std::uint8_t` / `unsigned char`.
template <frontier_type F>
[[nodiscard]] result<F> deserialize(std::span<const std::uint8_t> bytes) noexcept {
  return deserialize<F>(std::as_bytes(bytes));
}

CAUSAL_END_NAMESPACE
