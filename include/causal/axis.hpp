// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// axis: never-reused 64-bit identifiers of timeline participants, their bit
// layout, their text form, and the allocator that hands them out.
//
// An axis names exactly one timeline for the life of a session: a queue
// (GPU stream, Vulkan queue, CPU queue, NIC or NVMe queue), a collective
// channel, a host thread. A frontier entry (axis, epoch) means "everything
// that timeline did up to epoch", so two participants sharing an axis would
// make one's progress vouch for the other's: the allocator therefore never
// hands out an ordinal twice, even after its participant is gone.
//
//   bit 63                                                        bit 0
//   +-----------+-----------+-----------+-----------------------------+
//   |  session  |  machine  |  domain   |           ordinal           |
//   +-----------+-----------+-----------+-----------------------------+
//    SessionBits MachineBits DomainBits          OrdinalBits
//
// Fields are packed most significant first, so numeric order of raw values
// is the order of (session, machine, domain, ordinal): frontiers, which keep
// entries sorted by raw axis, group a machine's axes together. The default
// layout is <8, 8, 8, 40>. Construction rejects a field that does not fit
// its width with `errc::out_of_range`; nothing is ever silently truncated.
//
// Thread safety: `axis` and `axis_layout` are values and stateless types.
//                `basic_axis_allocator::allocate` may be called concurrently.
// Memory order:  the allocator serialises on an internal mutex; ordinals of
//                one (machine, domain) are handed out in increasing order.
// Blocking/allocation: axis operations never block or allocate, except the
//                `std::string` returned by `to_string`. `allocate` takes a
//                lock and may allocate the first time it sees a (machine,
//                domain) pair: it runs when a participant is created, never
//                on a hot path.
// Size:          sizeof(axis) == 8, trivially copyable.
// Configuration: Layout = axis_layout<SessionBits, MachineBits, DomainBits,
//                OrdinalBits>; default_axis_layout = axis_layout<8, 8, 8, 40>.
// See also:      <causal/frontier.hpp>, docs/frontiers.md.
#pragma once

#include <causal/config.hpp>
#include <causal/result.hpp>

#include <compare>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

CAUSAL_BEGIN_NAMESPACE

//===-- axis ----------------------------------------------------------------===//

/// A timeline participant's identity: a strong type over its raw 64 bits.
/// Comparison is on the raw value, which orders by (session, machine,
/// domain, ordinal) under any layout.
class axis {
 public:
  constexpr axis() noexcept = default;
  constexpr explicit axis(std::uint64_t raw) noexcept : raw_(raw) {}

  /// Returns the packed 64-bit value.
  [[nodiscard]] constexpr std::uint64_t raw() const noexcept { return raw_; }

  friend constexpr bool operator==(axis, axis) noexcept = default;
  friend constexpr auto operator<=>(axis, axis) noexcept = default;

 private:
  std::uint64_t raw_ = 0;
};

static_assert(std::is_trivially_copyable_v<axis> && sizeof(axis) == 8);

/// What kind of timeline an axis names. Values from `first_user` up are
/// free for users (an NVMe queue, a NIC ring, ...); the library never
/// assigns them.
enum class domain : std::uint32_t {
  queue = 0,       ///< A device or CPU queue (stream, vk::Queue, CPU queue).
  collective = 1,  ///< A collective channel shared by several queues (docs/collectives.md).
  epilogue = 2,    ///< Work that runs after a queue's operations retire.
  host = 3,        ///< A host thread or host context.
  first_user = 16  ///< The first value reserved for user domains.
};

/// Returns the library's name for `d` ("queue", "collective", ...), or an
/// empty view for a user domain.
[[nodiscard]] constexpr std::string_view domain_name(domain d) noexcept {
  switch (d) {
    case domain::queue: return "queue";
    case domain::collective: return "collective";
    case domain::epilogue: return "epilogue";
    case domain::host: return "host";
    default: return {};
  }
}

/// The four fields of an axis, unpacked.
struct axis_fields {
  std::uint64_t session = 0;
  std::uint64_t machine = 0;
  causal::domain domain = causal::domain::queue;
  std::uint64_t ordinal = 0;

  friend constexpr bool operator==(const axis_fields&, const axis_fields&) noexcept = default;
};

//===-- layouts -------------------------------------------------------------===//

namespace detail {
/// Returns a mask of the low `bits` bits; safe for 0 and 64.
constexpr std::uint64_t low_mask(unsigned bits) noexcept {
  return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
}
/// Shifts left, yielding 0 for a zero-width field (shift of 64 is UB).
constexpr std::uint64_t shift_left(std::uint64_t v, unsigned shift) noexcept {
  return shift >= 64 ? 0 : v << shift;
}
constexpr std::uint64_t shift_right(std::uint64_t v, unsigned shift) noexcept {
  return shift >= 64 ? 0 : v >> shift;
}
}  // namespace detail

/// The bit widths of an axis's fields, most significant first. The widths
/// must add up to 64; a zero-width field admits only the value 0.
///
/// Example: `axis_layout<0, 16, 8, 40>` for a single-session deployment
/// with up to 65 536 machines.
template <unsigned SessionBits, unsigned MachineBits, unsigned DomainBits, unsigned OrdinalBits>
struct axis_layout {
  static_assert(SessionBits + MachineBits + DomainBits + OrdinalBits == 64,
                "axis_layout: SessionBits + MachineBits + DomainBits + OrdinalBits must be 64");
  static_assert(DomainBits <= 32, "axis_layout: DomainBits must be at most 32 (domain is 32-bit)");

  static constexpr unsigned session_bits = SessionBits;
  static constexpr unsigned machine_bits = MachineBits;
  static constexpr unsigned domain_bits = DomainBits;
  static constexpr unsigned ordinal_bits = OrdinalBits;

  static constexpr unsigned ordinal_shift = 0;
  static constexpr unsigned domain_shift = OrdinalBits;
  static constexpr unsigned machine_shift = OrdinalBits + DomainBits;
  static constexpr unsigned session_shift = OrdinalBits + DomainBits + MachineBits;

  static constexpr std::uint64_t max_session = detail::low_mask(SessionBits);
  static constexpr std::uint64_t max_machine = detail::low_mask(MachineBits);
  static constexpr std::uint64_t max_domain = detail::low_mask(DomainBits);
  static constexpr std::uint64_t max_ordinal = detail::low_mask(OrdinalBits);

  /// Packs `f` into an axis, or fails with `errc::out_of_range` naming the
  /// first field that does not fit (its value is the error's position).
  [[nodiscard]] static constexpr result<axis> make(const axis_fields& f) noexcept {
    if (f.session > max_session) {
      return error{errc::out_of_range, "axis session does not fit SessionBits", f.session};
    }
    if (f.machine > max_machine) {
      return error{errc::out_of_range, "axis machine does not fit MachineBits", f.machine};
    }
    const auto dom = static_cast<std::uint64_t>(f.domain);
    if (dom > max_domain) {
      return error{errc::out_of_range, "axis domain does not fit DomainBits", dom};
    }
    if (f.ordinal > max_ordinal) {
      return error{errc::out_of_range, "axis ordinal does not fit OrdinalBits", f.ordinal};
    }
    return axis{detail::shift_left(f.session, session_shift) |
                detail::shift_left(f.machine, machine_shift) |
                detail::shift_left(dom, domain_shift) | f.ordinal};
  }

  [[nodiscard]] static constexpr std::uint64_t session(axis a) noexcept {
    return detail::shift_right(a.raw(), session_shift) & max_session;
  }
  [[nodiscard]] static constexpr std::uint64_t machine(axis a) noexcept {
    return detail::shift_right(a.raw(), machine_shift) & max_machine;
  }
  [[nodiscard]] static constexpr causal::domain domain_of(axis a) noexcept {
    return static_cast<causal::domain>(detail::shift_right(a.raw(), domain_shift) & max_domain);
  }
  [[nodiscard]] static constexpr std::uint64_t ordinal(axis a) noexcept {
    return a.raw() & max_ordinal;
  }
  [[nodiscard]] static constexpr axis_fields fields(axis a) noexcept {
    return {session(a), machine(a), domain_of(a), ordinal(a)};
  }
};

using default_axis_layout = axis_layout<8, 8, 8, 40>;

/// A type that packs and unpacks axis fields. `axis_layout<...>` is the
/// reference model; a user layout must round-trip `make` and `fields` and
/// keep numeric order equal to (session, machine, domain, ordinal) order.
template <class L>
concept axis_encoding = requires(const axis_fields& f, axis a) {
  { L::make(f) } noexcept -> std::same_as<result<axis>>;
  { L::fields(a) } noexcept -> std::same_as<axis_fields>;
  { L::session(a) } noexcept -> std::same_as<std::uint64_t>;
  { L::machine(a) } noexcept -> std::same_as<std::uint64_t>;
  { L::domain_of(a) } noexcept -> std::same_as<domain>;
  { L::ordinal(a) } noexcept -> std::same_as<std::uint64_t>;
  { L::max_ordinal } -> std::convertible_to<std::uint64_t>;
};

static_assert(axis_encoding<default_axis_layout>);

//===-- construction and accessors ------------------------------------------===//

/// Packs the fields into an axis of `Layout`, or fails with
/// `errc::out_of_range` when a field does not fit.
///
/// Example: `causal::make_axis(0, 0, causal::domain::queue, 17)` is the
/// axis whose text form is `m0.queue.17`.
template <axis_encoding Layout = default_axis_layout>
[[nodiscard]] constexpr result<axis> make_axis(std::uint64_t session, std::uint64_t machine,
                                               domain d, std::uint64_t ordinal) noexcept {
  return Layout::make(axis_fields{session, machine, d, ordinal});
}

/// Packs `fields` into an axis of `Layout`.
template <axis_encoding Layout = default_axis_layout>
[[nodiscard]] constexpr result<axis> make_axis(const axis_fields& fields) noexcept {
  return Layout::make(fields);
}

template <axis_encoding Layout = default_axis_layout>
[[nodiscard]] constexpr std::uint64_t session_of(axis a) noexcept {
  return Layout::session(a);
}
template <axis_encoding Layout = default_axis_layout>
[[nodiscard]] constexpr std::uint64_t machine_of(axis a) noexcept {
  return Layout::machine(a);
}
template <axis_encoding Layout = default_axis_layout>
[[nodiscard]] constexpr domain domain_of(axis a) noexcept {
  return Layout::domain_of(a);
}
template <axis_encoding Layout = default_axis_layout>
[[nodiscard]] constexpr std::uint64_t ordinal_of(axis a) noexcept {
  return Layout::ordinal(a);
}

//===-- text form -----------------------------------------------------------===//

/// A formatted axis in fixed inline storage (no allocation).
struct axis_name {
  static constexpr std::size_t max_size = 80;  // "s" + 20 digits + ".m" + 20 + ".d" + 10 + "." + 20
  char data[max_size] = {};
  std::size_t size = 0;

  [[nodiscard]] constexpr std::string_view view() const noexcept { return {data, size}; }
};

namespace detail {
constexpr void append_text(axis_name& out, std::string_view s) noexcept {
  for (char c : s) {
    if (out.size < axis_name::max_size) out.data[out.size++] = c;
  }
}
constexpr void append_decimal(axis_name& out, std::uint64_t v) noexcept {
  char digits[20];
  std::size_t n = 0;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (n > 0 && out.size < axis_name::max_size) out.data[out.size++] = digits[--n];
}
}  // namespace detail

/// Returns the text form of `a` under `Layout`: `m<machine>.<domain>.<ordinal>`,
/// prefixed by `s<session>.` when the session is not 0. A user domain is
/// written `d<value>`. Examples: `m0.queue.17`, `s2.m1.collective.3`,
/// `m0.d42.7`.
template <axis_encoding Layout = default_axis_layout>
[[nodiscard]] constexpr axis_name format_axis(axis a) noexcept {
  const axis_fields f = Layout::fields(a);
  axis_name out;
  if (f.session != 0) {
    detail::append_text(out, "s");
    detail::append_decimal(out, f.session);
    detail::append_text(out, ".");
  }
  detail::append_text(out, "m");
  detail::append_decimal(out, f.machine);
  detail::append_text(out, ".");
  if (const std::string_view name = domain_name(f.domain); !name.empty()) {
    detail::append_text(out, name);
  } else {
    detail::append_text(out, "d");
    detail::append_decimal(out, static_cast<std::uint64_t>(f.domain));
  }
  detail::append_text(out, ".");
  detail::append_decimal(out, f.ordinal);
  return out;
}

/// Returns the text form of `a` (see `format_axis`) as a `std::string`.
template <axis_encoding Layout = default_axis_layout>
[[nodiscard]] std::string to_string(axis a) {
  return std::string(format_axis<Layout>(a).view());
}

/// Writes the text form of `a` under the default layout.
template <class CharT, class Traits>
std::basic_ostream<CharT, Traits>& operator<<(std::basic_ostream<CharT, Traits>& os, axis a) {
  const axis_name name = format_axis(a);
  for (char c : name.view()) os.put(os.widen(c));
  return os;
}

//===-- allocator -----------------------------------------------------------===//

/// Hands out axes of one session: per (machine, domain), ordinals 1, 2, 3,
/// ... in increasing order, never the same one twice, never wrapping.
///
/// Ordinal 0 is never allocated, so a zero-initialised `axis` is never a
/// live participant of session 0. When a (machine, domain) pair has used
/// every ordinal its layout allows, `allocate` fails with
/// `errc::resource_exhausted` from then on.
///
/// Two allocators of the same session hand out the same axes: share one
/// per session (`default_axis_allocator()` is the process-wide one for
/// session 0), or give each its own session.
///
/// Thread safety: `allocate` and `allocated` may be called concurrently.
template <axis_encoding Layout = default_axis_layout>
class basic_axis_allocator {
 public:
  /// Creates an allocator for `session`. An out-of-range session makes
  /// every `allocate` fail with `errc::out_of_range`.
  explicit basic_axis_allocator(std::uint64_t session = 0) noexcept : session_(session) {}

  basic_axis_allocator(const basic_axis_allocator&) = delete;
  basic_axis_allocator& operator=(const basic_axis_allocator&) = delete;

  /// Returns a fresh axis for a participant of kind `d` on `machine`, or
  /// `errc::out_of_range` (a field does not fit the layout) or
  /// `errc::resource_exhausted` (no ordinal left for this pair).
  [[nodiscard]] result<axis> allocate(std::uint64_t machine, domain d) {
    // Validate the fixed fields before consuming an ordinal, so a bad call
    // leaves the counters untouched.
    const result<axis> probe = Layout::make(axis_fields{session_, machine, d, 0});
    if (!probe) return probe;
    std::lock_guard lock(mutex_);
    counter& c = counter_for(machine, d);
    if (c.next > Layout::max_ordinal) {
      return error{errc::resource_exhausted, "axis ordinals exhausted for this (machine, domain)",
                   machine};
    }
    return Layout::make(axis_fields{session_, machine, d, c.next++});
  }

  /// Returns how many axes were handed out for (`machine`, `d`).
  [[nodiscard]] std::uint64_t allocated(std::uint64_t machine, domain d) const {
    std::lock_guard lock(mutex_);
    for (const counter& c : counters_) {
      if (c.machine == machine && c.dom == d) return c.next - 1;
    }
    return 0;
  }

  [[nodiscard]] std::uint64_t session() const noexcept { return session_; }

 private:
  struct counter {
    std::uint64_t machine;
    domain dom;
    std::uint64_t next;
  };

  counter& counter_for(std::uint64_t machine, domain d) {
    for (counter& c : counters_) {
      if (c.machine == machine && c.dom == d) return c;
    }
    return counters_.emplace_back(counter{machine, d, 1});
  }

  const std::uint64_t session_;
  mutable std::mutex mutex_;
  std::vector<counter> counters_;
};

using axis_allocator = basic_axis_allocator<>;

/// Returns the process-wide allocator for session 0 of the default layout.
/// Every adapter that is not handed an allocator draws from this one, so
/// queues of different devices in one process never share an axis.
inline axis_allocator& default_axis_allocator() {
  static axis_allocator instance{0};
  return instance;
}

CAUSAL_END_NAMESPACE
