// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// sim_json_test: the strict JSON reader behind scenario files accepts what
// RFC 8259 allows and rejects everything else with the right line, column
// and a message saying what was expected.

#include <causal/sim/json.hpp>

#include "catch.hpp"

#include <string>
#include <string_view>

namespace sim = causal::sim;

TEST_CASE("sim json: parses a document and remembers positions", "[sim][json]") {
  const auto r = sim::parse_json("{\n  \"a\": [1, -2.5e3, true, null],\n  \"b\": \"x\\u00e9\\ud83d\\ude00\"\n}");
  REQUIRE(r.ok());
  const sim::json_value& v = *r;
  REQUIRE(v.is(sim::json_value::kind::object));
  const sim::json_value* a = v.find("a");
  REQUIRE(a != nullptr);
  CHECK(a->line == 2);
  CHECK(a->column == 8);
  REQUIRE(a->items.size() == 4);
  std::uint64_t one = 0;
  CHECK(a->items[0].as_uint(one));
  CHECK(one == 1);
  double d = 0;
  CHECK(a->items[1].as_double(d));
  CHECK(d == -2500.0);
  CHECK_FALSE(a->items[1].as_uint(one));
  CHECK(a->items[2].boolean);
  CHECK(a->items[3].is(sim::json_value::kind::null));
  CHECK(v.find("b")->text == "x\xc3\xa9\xf0\x9f\x98\x80");
  CHECK(v.find("missing") == nullptr);
}

TEST_CASE("sim json: rejects malformed input with line, column and what was expected",
          "[sim][json][errors]") {
  struct bad {
    std::string_view text;
    std::size_t line, column;
    std::string_view says;
  };
  const bad cases[] = {
      {"", 1, 1, "expected a value"},
      {"  ", 1, 3, "end of the input"},
      {"[1, 2,]", 1, 7, "trailing comma"},
      {"{\"a\": 1,}", 1, 9, "trailing comma"},
      {"{'a': 1}", 1, 2, "quoted object key"},
      {"[01]", 1, 3, "leading zero"},
      {"[+1]", 1, 2, "expected a value"},
      {"[1.]", 1, 4, "after the decimal point"},
      {"[.5]", 1, 2, "expected a value"},
      {"[1e]", 1, 4, "exponent"},
      {"[NaN]", 1, 2, "expected a value"},
      {"[tru]", 1, 2, "expected 'true'"},
      {"// c\n1", 1, 1, "expected a value"},
      {"\"abc", 1, 5, "unterminated string"},
      {"\"a\\x\"", 1, 4, "invalid escape"},
      {"\"\\ud800\"", 1, 8, "low surrogate"},
      {"\"\\udc00\"", 1, 8, "unpaired low surrogate"},
      {"\"a\tb\"", 1, 3, "control character"},
      {"\"\xff\"", 1, 2, "invalid UTF-8"},
      {"\"\xed\xa0\x80\"", 1, 2, "invalid UTF-8"},
      {"{\"a\": 1,\n \"a\": 2}", 2, 2, "duplicate object key"},
      {"{\"a\" 1}", 1, 6, "expected ':'"},
      {"[1 2]", 1, 4, "expected ',' or ']'"},
      {"{\"a\": 1 \"b\": 2}", 1, 9, "expected ',' or '}'"},
      {"1 2", 1, 3, "end of the input after the top-level value"},
      {"[1,\n\n  @]", 3, 3, "found '@'"},
  };
  for (const bad& c : cases) {
    INFO("input: " << std::string(c.text));
    const auto r = sim::parse_json(c.text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().line == c.line);
    CHECK(r.error().column == c.column);
    CHECK(r.error().message.find(c.says) != std::string::npos);
  }
}

TEST_CASE("sim json: nesting is bounded, so hostile input cannot exhaust the stack",
          "[sim][json][errors]") {
  std::string ok_doc(sim::max_json_depth, '[');
  ok_doc += std::string(sim::max_json_depth, ']');
  CHECK(sim::parse_json(ok_doc).ok());
  std::string deep(100000, '[');
  const auto r = sim::parse_json(deep);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("nesting deeper") != std::string::npos);
  CHECK(r.error().column == sim::max_json_depth + 1);
}

TEST_CASE("sim json: numbers convert only when they fit", "[sim][json]") {
  const auto r = sim::parse_json("[18446744073709551615, 18446744073709551616, 1e400, 0]");
  REQUIRE(r.ok());
  std::uint64_t v = 0;
  CHECK(r->items[0].as_uint(v));
  CHECK(v == 18446744073709551615ull);
  CHECK_FALSE(r->items[1].as_uint(v));
  double d = 0;
  CHECK_FALSE(r->items[2].as_double(d));
  CHECK(r->items[3].as_uint(v));
  CHECK(v == 0);
}
