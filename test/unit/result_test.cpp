// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Tests for <causal/result.hpp>: the error codes and their names, `error`,
// `result<T>` (value and error access, value_or, code(), copy and move,
// including a T whose lifetime is tracked) and `status`.

#include <causal/result.hpp>

#include "catch.hpp"
#include "string_makers.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace {

using causal::errc;
using causal::error;
using causal::result;
using causal::status;

// Counts live instances, so a test can see every construction matched by
// exactly one destruction through result's copy, move and assignment.
struct tracked {
  static inline int live = 0;
  int value = 0;

  explicit tracked(int v) : value(v) { ++live; }
  tracked(const tracked& o) : value(o.value) { ++live; }
  tracked(tracked&& o) noexcept : value(o.value) {
    o.value = -1;
    ++live;
  }
  tracked& operator=(const tracked&) = default;
  tracked& operator=(tracked&&) = default;
  ~tracked() { --live; }
};

constexpr error some_error{errc::truncated, "input ends inside a varint", 7};

}  // namespace

TEST_CASE("errc: codes keep their stable numeric values", "[result][errc]") {
  STATIC_REQUIRE(static_cast<int>(errc::ok) == 0);
  STATIC_REQUIRE(static_cast<int>(errc::invalid_argument) == 1);
  STATIC_REQUIRE(static_cast<int>(errc::out_of_range) == 2);
  STATIC_REQUIRE(static_cast<int>(errc::resource_exhausted) == 3);
  STATIC_REQUIRE(static_cast<int>(errc::capacity_exceeded) == 4);
  STATIC_REQUIRE(static_cast<int>(errc::not_increasing) == 5);
  STATIC_REQUIRE(static_cast<int>(errc::failed_precondition) == 6);
  STATIC_REQUIRE(static_cast<int>(errc::cancelled) == 7);
  STATIC_REQUIRE(static_cast<int>(errc::timeout) == 8);
  STATIC_REQUIRE(static_cast<int>(errc::device_lost) == 9);
  STATIC_REQUIRE(static_cast<int>(errc::truncated) == 10);
  STATIC_REQUIRE(static_cast<int>(errc::malformed) == 11);
  STATIC_REQUIRE(static_cast<int>(errc::unsupported_version) == 12);
  STATIC_REQUIRE(sizeof(errc) == 1);
}

TEST_CASE("errc: to_string names every code", "[result][errc]") {
  const auto [code, name] = GENERATE(table<errc, std::string_view>({
      {errc::ok, "ok"},
      {errc::invalid_argument, "invalid_argument"},
      {errc::out_of_range, "out_of_range"},
      {errc::resource_exhausted, "resource_exhausted"},
      {errc::capacity_exceeded, "capacity_exceeded"},
      {errc::not_increasing, "not_increasing"},
      {errc::failed_precondition, "failed_precondition"},
      {errc::cancelled, "cancelled"},
      {errc::timeout, "timeout"},
      {errc::device_lost, "device_lost"},
      {errc::truncated, "truncated"},
      {errc::malformed, "malformed"},
      {errc::unsupported_version, "unsupported_version"},
  }));
  CHECK(causal::to_string(code) == name);
}

TEST_CASE("errc: to_string of a value outside the enumeration is \"unknown\"", "[result][errc]") {
  CHECK(causal::to_string(static_cast<errc>(13)) == "unknown");
  CHECK(causal::to_string(static_cast<errc>(255)) == "unknown");
  STATIC_REQUIRE(causal::to_string(errc::malformed) == "malformed");
}

TEST_CASE("error: a default error is ok at position 0", "[result][error]") {
  constexpr error e;
  STATIC_REQUIRE(e.code() == errc::ok);
  STATIC_REQUIRE(e.position() == 0);
  CHECK(e.message() == "ok");
}

TEST_CASE("error: keeps its code, message and position", "[result][error]") {
  STATIC_REQUIRE(some_error.code() == errc::truncated);
  STATIC_REQUIRE(some_error.position() == 7);
  CHECK(some_error.message() == "input ends inside a varint");
  const error no_position{errc::cancelled, "stop"};
  CHECK(no_position.position() == 0);
  STATIC_REQUIRE(sizeof(error) == 24);
  STATIC_REQUIRE(std::is_trivially_copyable_v<error>);
}

TEST_CASE("error: equality compares code and position, not the message", "[result][error]") {
  CHECK(error{errc::malformed, "one wording", 3} == error{errc::malformed, "another", 3});
  CHECK_FALSE(error{errc::malformed, "m", 3} == error{errc::truncated, "m", 3});
  CHECK_FALSE(error{errc::malformed, "m", 3} == error{errc::malformed, "m", 4});
}

TEST_CASE("result: a value is accessible through every accessor", "[result][value]") {
  result<int> r = 42;
  CHECK(r.has_value());
  CHECK(r.ok());
  CHECK(static_cast<bool>(r));
  CHECK(r.value() == 42);
  CHECK(*r == 42);
  CHECK(r.code() == errc::ok);
  CHECK(r.value_or(7) == 42);
  r.value() = 43;
  CHECK(*r == 43);
  const result<int>& cr = r;
  CHECK(cr.value() == 43);
  CHECK(*cr == 43);

  result<std::string> s = std::string("abc");
  CHECK(s->size() == 3);
  const result<std::string>& cs = s;
  CHECK(cs->front() == 'a');
  std::string moved_out = std::move(s).value();
  CHECK(moved_out == "abc");
}

TEST_CASE("result: an error is accessible and value_or gives the fallback", "[result][error]") {
  const result<int> r = some_error;
  CHECK_FALSE(r.has_value());
  CHECK_FALSE(r.ok());
  CHECK_FALSE(static_cast<bool>(r));
  CHECK(r.code() == errc::truncated);
  CHECK(r.error_value() == some_error);
  CHECK(r.error_value().position() == 7);
  CHECK(r.error_value().message() == "input ends inside a varint");
  CHECK(r.value_or(7) == 7);

  const result<std::string> s = error{errc::timeout, "deadline"};
  CHECK(s.value_or("fallback") == "fallback");
  CHECK(s.code() == errc::timeout);
}

TEST_CASE("result: is usable in constant expressions", "[result][constexpr]") {
  constexpr result<int> v = 5;
  constexpr result<int> e = some_error;
  STATIC_REQUIRE(v.ok());
  STATIC_REQUIRE(*v == 5);
  STATIC_REQUIRE(v.value_or(1) == 5);
  STATIC_REQUIRE(!e.ok());
  STATIC_REQUIRE(e.code() == errc::truncated);
  STATIC_REQUIRE(e.value_or(1) == 1);
  STATIC_REQUIRE(e.error_value().position() == 7);
}

TEST_CASE("result: copies and moves keep the value or the error", "[result][copy]") {
  SECTION("copy construction") {
    const result<std::string> v = std::string("value");
    const result<std::string> e = some_error;
    const result<std::string> v2 = v;
    const result<std::string> e2 = e;
    REQUIRE(v2.ok());
    CHECK(*v2 == "value");
    CHECK(*v == "value");
    REQUIRE_FALSE(e2.ok());
    CHECK(e2.error_value() == some_error);
  }
  SECTION("move construction") {
    result<std::string> v = std::string("value");
    result<std::string> e = some_error;
    const result<std::string> v2 = std::move(v);
    const result<std::string> e2 = std::move(e);
    REQUIRE(v2.ok());
    CHECK(*v2 == "value");
    REQUIRE_FALSE(e2.ok());
    CHECK(e2.error_value() == some_error);
  }
  SECTION("assignment switches between value and error") {
    result<std::string> r = std::string("first");
    const result<std::string> e = some_error;
    r = e;
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == errc::truncated);
    r = result<std::string>(std::string("second"));
    REQUIRE(r.ok());
    CHECK(*r == "second");
    const result<std::string> third = std::string("third");
    r = third;
    REQUIRE(r.ok());
    CHECK(*r == "third");
    r = result<std::string>(error{errc::cancelled, "stop", 1});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error_value() == error{errc::cancelled, "", 1});
  }
  SECTION("self-assignment leaves the result as it was") {
    result<std::string> r = std::string("same");
    result<std::string>& alias = r;
    r = alias;
    REQUIRE(r.ok());
    CHECK(*r == "same");
    r = std::move(alias);
    REQUIRE(r.ok());
    CHECK(*r == "same");
  }
}

TEST_CASE("result: constructs and destroys the value exactly once", "[result][lifetime]") {
  REQUIRE(tracked::live == 0);
  {
    result<tracked> a = tracked{1};
    CHECK(tracked::live == 1);
    result<tracked> b = a;
    CHECK(tracked::live == 2);
    result<tracked> c = std::move(a);
    CHECK(tracked::live == 3);
    CHECK(c->value == 1);
    result<tracked> e = some_error;
    CHECK(tracked::live == 3);
    b = e;  // destroys b's value
    CHECK(tracked::live == 2);
    e = c;  // constructs a value where the error was
    CHECK(tracked::live == 3);
    CHECK(e->value == 1);
    e = result<tracked>(some_error);
    CHECK(tracked::live == 2);
    c = result<tracked>(tracked{5});
    CHECK(tracked::live == 2);
    CHECK(c->value == 5);
  }
  CHECK(tracked::live == 0);
}

TEST_CASE("status: default is success, an error is a failure", "[result][status]") {
  constexpr status good;
  STATIC_REQUIRE(good.ok());
  STATIC_REQUIRE(good.has_value());
  STATIC_REQUIRE(good.code() == errc::ok);
  CHECK(static_cast<bool>(good));

  const status bad = error{errc::capacity_exceeded, "full", 12};
  CHECK_FALSE(bad.ok());
  CHECK_FALSE(bad.has_value());
  CHECK_FALSE(static_cast<bool>(bad));
  CHECK(bad.code() == errc::capacity_exceeded);
  CHECK(bad.error_value().position() == 12);
  CHECK(bad.error_value().message() == "full");

  status copy = bad;
  CHECK(copy.code() == errc::capacity_exceeded);
  copy = good;
  CHECK(copy.ok());
  STATIC_REQUIRE(std::is_same_v<status, result<void>>);
  STATIC_REQUIRE(std::is_same_v<status::value_type, void>);
}

#if defined(__cpp_exceptions)
TEST_CASE("current_exception_message: what() of a std::exception, the type of anything else",
          "[result][intern]") {
  const char* from_std = nullptr;
  try {
    throw std::logic_error("bad plan");
  } catch (...) {
    from_std = causal::detail::current_exception_message("fn threw");
  }
  CHECK(std::string_view(from_std) == "fn threw: bad plan");
  const char* from_int = nullptr;
  try {
    throw 7;
  } catch (...) {
    from_int = causal::detail::current_exception_message("fn threw");
  }
#if CAUSAL_HAS_CXXABI()
  CHECK(std::string_view(from_int) == "fn threw: an exception of type int");
#else
  CHECK(std::string_view(from_int).starts_with("fn threw: an exception of type"));
#endif
}
#endif

// Fills the process's intern table: declared last (Catch2 runs test cases in
// declaration order), so the cases above still find room.
TEST_CASE("intern_message: a run-time text outlives its source, once per distinct text, bounded",
          "[result][intern]") {
  std::string made = "host call threw: ";
  made += "disk on fire";
  const char* kept = causal::detail::intern_message(made, "fallback");
  made.assign(made.size(), 'x');  // the source changes; the copy does not
  CHECK(std::string_view(kept) == "host call threw: disk on fire");
  CHECK(causal::detail::intern_message("host call threw: disk on fire", "fallback") == kept);  // shared
  // Too long: cut, ending in "...".
  const std::string huge(1000, 'a');
  const std::string_view cut = causal::detail::intern_message(huge, "fallback");
  CHECK(cut.size() < huge.size());
  CHECK(cut.substr(cut.size() - 3) == "...");
  // Full: the fallback, never an overrun.
  const char* last = nullptr;
  for (int i = 0; i < 300; ++i) last = causal::detail::intern_message("distinct " + std::to_string(i), "fallback");
  CHECK(std::string_view(last) == "fallback");
  CHECK(std::string_view(kept) == "host call threw: disk on fire");  // still intact
}
