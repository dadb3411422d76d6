// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// result: error codes, the `error` value, and `result<T>` / `status`, the
// way every fallible causal operation reports failure without exceptions.
//
// An `error` is a code from `errc` plus a static message that says, in
// words, what was wrong ("entries not strictly sorted by axis") and an
// optional `position` (a byte offset, an index, an offending value) that
// the message refers to. Messages are string literals, so building or
// copying an error never allocates. The one exception is a message made at
// run time from a caught exception's what() (a host call, an invocation or
// a coroutine that threw): it is copied once into a bounded table that
// lives as long as the program (detail::intern_message), so the error
// still carries a plain `const char*` that never dangles. `result<T>` holds either a `T` or an
// `error`; `status` is `result<void>`. Both are `[[nodiscard]]`: dropping a
// failure on the floor is a compile-time warning.
//
// Thread safety: value types; distinct objects may be used concurrently.
// Memory order:  not applicable.
// Blocking/allocation: never blocks; never allocates (beyond what `T`
//                does). detail::intern_message takes a spin lock over a
//                fixed static table (a cold path: only caught exceptions
//                use it).
// Size:          `error` is 24 bytes; `result<T>` is max(sizeof(T), 24)
//                plus a discriminator, padded to alignof(T).
// Configuration: CAUSAL_ASSERT_LEVEL (checked access to the wrong member).
// See also:      <causal/config.hpp>, docs/errors.md.
#pragma once

#include <causal/config.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>
#include <type_traits>
#include <utility>

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#include <cstdlib>
#include <exception>
#include <typeinfo>
#if __has_include(<cxxabi.h>)
#include <cxxabi.h>
#define CAUSAL_HAS_CXXABI() 1
#endif
#endif
#ifndef CAUSAL_HAS_CXXABI
#define CAUSAL_HAS_CXXABI() 0
#endif

CAUSAL_BEGIN_NAMESPACE

/// Error codes. Stable values: they cross process boundaries in traces.
enum class errc : std::uint8_t {
  ok = 0,
  invalid_argument = 1,    ///< An argument is malformed for this operation.
  out_of_range = 2,        ///< A field does not fit its encoding.
  resource_exhausted = 3,  ///< A finite supply (ordinals, slots) ran out.
  capacity_exceeded = 4,   ///< A fixed-capacity container would overflow.
  not_increasing = 5,      ///< A value that must increase did not.
  failed_precondition = 6, ///< The object is in the wrong state.
  cancelled = 7,           ///< The operation was cancelled.
  timeout = 8,             ///< A deadline passed first.
  device_lost = 9,         ///< The device behind the object is gone.
  truncated = 10,          ///< Input ended before a complete value.
  malformed = 11,          ///< Input bytes violate the format.
  unsupported_version = 12 ///< Input uses a format version we do not read.
};

/// Returns the name of `code`, e.g. "capacity_exceeded".
[[nodiscard]] constexpr std::string_view to_string(errc code) noexcept {
  switch (code) {
    case errc::ok: return "ok";
    case errc::invalid_argument: return "invalid_argument";
    case errc::out_of_range: return "out_of_range";
    case errc::resource_exhausted: return "resource_exhausted";
    case errc::capacity_exceeded: return "capacity_exceeded";
    case errc::not_increasing: return "not_increasing";
    case errc::failed_precondition: return "failed_precondition";
    case errc::cancelled: return "cancelled";
    case errc::timeout: return "timeout";
    case errc::device_lost: return "device_lost";
    case errc::truncated: return "truncated";
    case errc::malformed: return "malformed";
    case errc::unsupported_version: return "unsupported_version";
  }
  return "unknown";
}

/// A failure: what kind (`code`), what exactly (`message`, a string
/// literal) and where (`position`, meaning given by the message).
class error {
 public:
  constexpr error() noexcept = default;
  constexpr error(errc code, const char* message, std::uint64_t position = 0) noexcept
      : code_(code), message_(message), position_(position) {}

  [[nodiscard]] constexpr errc code() const noexcept { return code_; }
  [[nodiscard]] constexpr std::string_view message() const noexcept { return message_; }
  [[nodiscard]] constexpr std::uint64_t position() const noexcept { return position_; }

  /// Two errors are equal when code and position agree; messages are
  /// documentation, not identity.
  friend constexpr bool operator==(const error& a, const error& b) noexcept {
    return a.code_ == b.code_ && a.position_ == b.position_;
  }

 private:
  errc code_ = errc::ok;
  const char* message_ = "ok";
  std::uint64_t position_ = 0;
};

namespace detail {

/// Copies `text` into a table that lives as long as the program and
/// returns the copy, so that an error can carry a message made at run
/// time. Identical texts share one entry; a text longer than the entries
/// is cut (ending in "..."); once max_interned distinct texts are held,
/// returns `fallback` (a literal) instead. Thread-safe: a spin lock over the
/// table, for the cold paths that use it (a caught exception). Never
/// allocates.
inline const char* intern_message(std::string_view text, const char* fallback) noexcept {
  constexpr std::size_t max_interned = 128;
  constexpr std::size_t entry_bytes = 256;
  static std::array<std::array<char, entry_bytes>, max_interned> table{};
  static std::size_t used = 0;
  static std::atomic<bool> busy{false};
  std::array<char, entry_bytes> entry{};
  if (text.size() < entry_bytes) {
    std::memcpy(entry.data(), text.data(), text.size());
  } else {
    std::memcpy(entry.data(), text.data(), entry_bytes - 4);
    std::memcpy(entry.data() + entry_bytes - 4, "...", 3);
  }
  while (busy.exchange(true, std::memory_order_acquire)) {
  }
  const char* out = fallback;
  std::size_t i = 0;
  while (i < used && std::strcmp(table[i].data(), entry.data()) != 0) ++i;
  if (i < used) {
    out = table[i].data();
  } else if (used < max_interned) {
    table[used] = entry;
    out = table[used++].data();
  }
  busy.store(false, std::memory_order_release);
  return out;
}

/// For a catch handler: "<context>: <what()>" for a std::exception, or
/// "<context>: an exception of type <name>" for anything else (the name
/// where the C++ ABI can tell it), interned (intern_message); `context`
/// itself when even that cannot be kept. Call it only while an exception
/// is being handled. Naming a non-std exception's type may allocate (the
/// ABI's demangler); the rest does not.
inline const char* current_exception_message(const char* context) noexcept {
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
  char text[256];
  try {
    throw;
  } catch (const std::exception& e) {
    std::snprintf(text, sizeof text, "%s: %s", context, e.what());
  } catch (...) {
    const char* type = "unknown";
#if CAUSAL_HAS_CXXABI()
    char demangled[160];
    if (const std::type_info* t = abi::__cxa_current_exception_type(); t != nullptr) {
      type = t->name();
      int status = -1;
      // __cxa_demangle mallocs its result (a cold path: the exception
      // object was allocated too); the mangled name stays if it cannot.
      char* got = abi::__cxa_demangle(type, nullptr, nullptr, &status);
      if (status == 0 && got != nullptr) {
        std::snprintf(demangled, sizeof demangled, "%s", got);
        type = demangled;
      }
      std::free(got);
    }
#endif
    std::snprintf(text, sizeof text, "%s: an exception of type %s", context, type);
  }
  return intern_message(text, context);
#else
  return context;
#endif
}

/// What `result::value()` on an error reports: the error itself (its code,
/// message and position), not only that there was one, through
/// CAUSAL_ASSERT_HANDLER (which aborts by default). Out of line and cold:
/// value()'s fast path stays one test.
CAUSAL_NOINLINE inline void report_value_of_error(const error& e, const char* file, int line) noexcept {
  char text[320];
  const std::string_view code = to_string(e.code());
  std::snprintf(text, sizeof text, "result::value() called on an error: %.*s: %s (position %llu)",
                static_cast<int>(code.size()), code.data(), e.message().data(),
                static_cast<unsigned long long>(e.position()));
  CAUSAL_ASSERT_HANDLER("has_value()", text, file, line);
}

}  // namespace detail

/// Either a `T` or an `error`. Accessing the absent member is a
/// precondition violation (CAUSAL_ASSERT), never undefined behaviour at
/// CAUSAL_ASSERT_LEVEL >= 1.
template <class T>
class [[nodiscard]] result {
  static_assert(!std::is_reference_v<T>, "result<T>: T must not be a reference");
  static_assert(!std::is_same_v<std::remove_cv_t<T>, error>, "result<error> is ambiguous");

 public:
  using value_type = T;

  constexpr result(const T& value) noexcept(std::is_nothrow_copy_constructible_v<T>)
      : has_value_(true) {
    std::construct_at(&value_, value);
  }
  constexpr result(T&& value) noexcept(std::is_nothrow_move_constructible_v<T>)
      : has_value_(true) {
    std::construct_at(&value_, std::move(value));
  }
  constexpr result(error e) noexcept : has_value_(false) { std::construct_at(&error_, e); }

  constexpr result(const result& other) noexcept(std::is_nothrow_copy_constructible_v<T>)
      : has_value_(other.has_value_) {
    if (has_value_) {
      std::construct_at(&value_, other.value_);
    } else {
      std::construct_at(&error_, other.error_);
    }
  }
  constexpr result(result&& other) noexcept(std::is_nothrow_move_constructible_v<T>)
      : has_value_(other.has_value_) {
    if (has_value_) {
      std::construct_at(&value_, std::move(other.value_));
    } else {
      std::construct_at(&error_, other.error_);
    }
  }
  constexpr result& operator=(const result& other) {
    if (this != &other) {
      destroy();
      has_value_ = other.has_value_;
      if (has_value_) {
        std::construct_at(&value_, other.value_);
      } else {
        std::construct_at(&error_, other.error_);
      }
    }
    return *this;
  }
  constexpr result& operator=(result&& other) noexcept(std::is_nothrow_move_constructible_v<T>) {
    if (this != &other) {
      destroy();
      has_value_ = other.has_value_;
      if (has_value_) {
        std::construct_at(&value_, std::move(other.value_));
      } else {
        std::construct_at(&error_, other.error_);
      }
    }
    return *this;
  }
  constexpr ~result() { destroy(); }

  [[nodiscard]] constexpr bool has_value() const noexcept { return has_value_; }
  [[nodiscard]] constexpr bool ok() const noexcept { return has_value_; }
  constexpr explicit operator bool() const noexcept { return has_value_; }

  /// Returns the value. Precondition: `has_value()`.
  [[nodiscard]] constexpr T& value() & noexcept {
    check_has_value();
    return value_;
  }
  [[nodiscard]] constexpr const T& value() const& noexcept {
    check_has_value();
    return value_;
  }
  [[nodiscard]] constexpr T&& value() && noexcept {
    check_has_value();
    return std::move(value_);
  }
  [[nodiscard]] constexpr T& operator*() & noexcept { return value(); }
  [[nodiscard]] constexpr const T& operator*() const& noexcept { return value(); }
  [[nodiscard]] constexpr T&& operator*() && noexcept { return std::move(*this).value(); }
  [[nodiscard]] constexpr T* operator->() noexcept { return &value(); }
  [[nodiscard]] constexpr const T* operator->() const noexcept { return &value(); }

  /// Returns the value, or `fallback` when this holds an error.
  [[nodiscard]] constexpr T value_or(T fallback) const& {
    return has_value_ ? value_ : std::move(fallback);
  }

  /// Returns the error. Precondition: `!has_value()`.
  [[nodiscard]] constexpr const error& error_value() const noexcept {
    CAUSAL_ASSERT(!has_value_, "result::error_value() called on a value");
    return error_;
  }
  /// Returns the error code, or `errc::ok` when this holds a value.
  [[nodiscard]] constexpr errc code() const noexcept {
    return has_value_ ? errc::ok : error_.code();
  }

 private:
  constexpr void destroy() noexcept {
    if (has_value_) {
      std::destroy_at(&value_);
    } else {
      std::destroy_at(&error_);
    }
  }

  constexpr void check_has_value() const noexcept {
#if CAUSAL_ASSERT_LEVEL >= 1
    if (!has_value_) [[unlikely]] detail::report_value_of_error(error_, __FILE__, __LINE__);
#endif
  }

  union {
    T value_;
    error error_;
  };
  bool has_value_;
};

/// Success or an `error`: the result of an operation with no value.
template <>
class [[nodiscard]] result<void> {
 public:
  using value_type = void;

  constexpr result() noexcept = default;
  constexpr result(error e) noexcept : error_(e) {}

  [[nodiscard]] constexpr bool has_value() const noexcept { return error_.code() == errc::ok; }
  [[nodiscard]] constexpr bool ok() const noexcept { return has_value(); }
  constexpr explicit operator bool() const noexcept { return has_value(); }

  /// Returns the error. Precondition: `!ok()`.
  [[nodiscard]] constexpr const error& error_value() const noexcept {
    CAUSAL_ASSERT(!has_value(), "status::error_value() called on success");
    return error_;
  }
  [[nodiscard]] constexpr errc code() const noexcept { return error_.code(); }

 private:
  error error_{};
};

using status = result<void>;

CAUSAL_END_NAMESPACE
