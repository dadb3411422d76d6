// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// mini_json: a small, strict JSON (RFC 8259) parser for tests that read
// back what the library writes (trace JSON). Test support only.
//
// Strict: exactly one value with optional surrounding whitespace; no
// trailing commas, comments, single quotes, leading zeros, bare control
// characters in strings, lone surrogates in \u escapes, or invalid UTF-8;
// duplicate object keys are rejected too (they are legal JSON but never
// what our writers mean). Nesting is limited to 256 levels. Any violation
// throws mini_json::parse_error with the byte offset.
//
// Thread safety: values are plain data; parse() has no shared state.
// Memory order:  not applicable.
// Blocking/allocation: allocates the tree; throws on bad input.
// Size:          not applicable.
// Configuration: none.
// See also:      test/unit/trace_test.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace mini_json {

struct value;
using array = std::vector<value>;
using object = std::map<std::string, value>;

/// A JSON value. Numbers keep their text as well as a double, so tests can
/// compare integers exactly.
struct value {
  enum class kind { null, boolean, number, string, array, object };
  kind type = kind::null;
  bool boolean = false;
  double number = 0;
  std::string text;  // the string, or the number's literal text
  std::shared_ptr<mini_json::array> items;
  std::shared_ptr<mini_json::object> members;

  [[nodiscard]] bool is(kind k) const noexcept { return type == k; }
  /// The member `key` of an object; throws when absent or not an object.
  [[nodiscard]] const value& operator[](const std::string& key) const {
    if (type != kind::object) throw std::out_of_range("mini_json: not an object");
    const auto it = members->find(key);
    if (it == members->end()) throw std::out_of_range("mini_json: no member " + key);
    return it->second;
  }
  /// Element `i` of an array; throws when out of range or not an array.
  [[nodiscard]] const value& operator[](std::size_t i) const {
    if (type != kind::array) throw std::out_of_range("mini_json: not an array");
    return items->at(i);
  }
  [[nodiscard]] bool has(const std::string& key) const {
    return type == kind::object && members->count(key) != 0;
  }
  [[nodiscard]] std::size_t size() const {
    if (type == kind::array) return items->size();
    if (type == kind::object) return members->size();
    throw std::out_of_range("mini_json: size of a scalar");
  }
  /// The number as an unsigned integer; throws unless it is one exactly.
  [[nodiscard]] std::uint64_t as_u64() const {
    if (type != kind::number || text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
      throw std::out_of_range("mini_json: not an unsigned integer: " + text);
    }
    return std::stoull(text);
  }
};

class parse_error : public std::runtime_error {
 public:
  parse_error(const std::string& what, std::size_t offset)
      : std::runtime_error("mini_json: " + what + " at byte " + std::to_string(offset)),
        offset_(offset) {}
  [[nodiscard]] std::size_t offset() const noexcept { return offset_; }

 private:
  std::size_t offset_;
};

namespace detail {

class parser {
 public:
  explicit parser(std::string_view in) : in_(in) {}

  value parse_document() {
    skip_space();
    value v = parse_value(0);
    skip_space();
    if (pos_ != in_.size()) fail("trailing characters");
    return v;
  }

 private:
  static constexpr int max_depth = 256;

  [[noreturn]] void fail(const std::string& what) const { throw parse_error(what, pos_); }

  [[nodiscard]] bool at_end() const noexcept { return pos_ >= in_.size(); }
  [[nodiscard]] char peek() const {
    if (at_end()) fail("unexpected end of input");
    return in_[pos_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  void skip_space() noexcept {
    while (!at_end() && (in_[pos_] == ' ' || in_[pos_] == '\t' || in_[pos_] == '\n' || in_[pos_] == '\r')) {
      ++pos_;
    }
  }
  void literal(std::string_view word) {
    if (in_.substr(pos_, word.size()) != word) fail("bad literal");
    pos_ += word.size();
  }

  value parse_value(int depth) {
    if (depth > max_depth) fail("nesting too deep");
    value v;
    switch (peek()) {
      case '{': return parse_object(depth);
      case '[': return parse_array(depth);
      case '"':
        v.type = value::kind::string;
        v.text = parse_string();
        return v;
      case 't':
        literal("true");
        v.type = value::kind::boolean;
        v.boolean = true;
        return v;
      case 'f':
        literal("false");
        v.type = value::kind::boolean;
        return v;
      case 'n':
        literal("null");
        return v;
      default: return parse_number();
    }
  }

  value parse_object(int depth) {
    expect('{');
    value v;
    v.type = value::kind::object;
    v.members = std::make_shared<object>();
    skip_space();
    if (peek() == '}') {
      ++pos_;
      return v;
    }
    for (;;) {
      skip_space();
      if (peek() != '"') fail("expected a string key");
      const std::size_t key_at = pos_;
      std::string key = parse_string();
      skip_space();
      expect(':');
      skip_space();
      value member = parse_value(depth + 1);
      if (!v.members->emplace(std::move(key), std::move(member)).second) {
        throw parse_error("duplicate key", key_at);
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}');
      return v;
    }
  }

  value parse_array(int depth) {
    expect('[');
    value v;
    v.type = value::kind::array;
    v.items = std::make_shared<array>();
    skip_space();
    if (peek() == ']') {
      ++pos_;
      return v;
    }
    for (;;) {
      skip_space();
      v.items->push_back(parse_value(depth + 1));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect(']');
      return v;
    }
  }

  value parse_number() {
    const std::size_t start = pos_;
    const auto digit = [&] { return !at_end() && in_[pos_] >= '0' && in_[pos_] <= '9'; };
    if (!at_end() && in_[pos_] == '-') ++pos_;
    if (!digit()) fail("expected a value");
    if (in_[pos_] == '0') {
      ++pos_;
      if (digit()) fail("leading zero");
    } else {
      while (digit()) ++pos_;
    }
    if (!at_end() && in_[pos_] == '.') {
      ++pos_;
      if (!digit()) fail("expected a digit after '.'");
      while (digit()) ++pos_;
    }
    if (!at_end() && (in_[pos_] == 'e' || in_[pos_] == 'E')) {
      ++pos_;
      if (!at_end() && (in_[pos_] == '+' || in_[pos_] == '-')) ++pos_;
      if (!digit()) fail("expected an exponent");
      while (digit()) ++pos_;
    }
    value v;
    v.type = value::kind::number;
    v.text = std::string(in_.substr(start, pos_ - start));
    v.number = std::strtod(v.text.c_str(), nullptr);  // no throw; 1e999 is inf
    return v;
  }

  unsigned hex4() {
    unsigned out = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = peek();
      out <<= 4;
      if (c >= '0' && c <= '9') {
        out |= static_cast<unsigned>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        out |= static_cast<unsigned>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        out |= static_cast<unsigned>(c - 'A' + 10);
      } else {
        fail("bad \\u escape");
      }
      ++pos_;
    }
    return out;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  /// Consumes one UTF-8 encoded character (first byte >= 0x80).
  void copy_utf8(std::string& out) {
    const auto b = [&](std::size_t i) { return static_cast<unsigned char>(in_[pos_ + i]); };
    const unsigned char b0 = b(0);
    std::size_t n = 0;
    unsigned char lo = 0x80, hi = 0xbf;
    if (b0 >= 0xc2 && b0 <= 0xdf) {
      n = 2;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
      n = 3;
      if (b0 == 0xe0) lo = 0xa0;
      if (b0 == 0xed) hi = 0x9f;
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
      n = 4;
      if (b0 == 0xf0) lo = 0x90;
      if (b0 == 0xf4) hi = 0x8f;
    } else {
      fail("invalid UTF-8");
    }
    if (in_.size() - pos_ < n || b(1) < lo || b(1) > hi) fail("invalid UTF-8");
    for (std::size_t i = 2; i < n; ++i) {
      if (b(i) < 0x80 || b(i) > 0xbf) fail("invalid UTF-8");
    }
    out.append(in_.substr(pos_, n));
    pos_ += n;
  }

  std::string parse_string() {
    expect('"');
    std::string out;
    for (;;) {
      const char c = peek();
      const auto u = static_cast<unsigned char>(c);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (u < 0x20) fail("control character in string");
      if (u >= 0x80) {
        copy_utf8(out);
        continue;
      }
      ++pos_;
      if (c != '\\') {
        out += c;
        continue;
      }
      const char e = peek();
      ++pos_;
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xdc00 && cp <= 0xdfff) fail("lone low surrogate");
          if (cp >= 0xd800 && cp <= 0xdbff) {
            if (in_.substr(pos_, 2) != "\\u") fail("lone high surrogate");
            pos_ += 2;
            const unsigned low = hex4();
            if (low < 0xdc00 || low > 0xdfff) fail("bad low surrogate");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          }
          append_utf8(out, cp);
          break;
        }
        default: fail("bad escape");
      }
    }
  }

  std::string_view in_;
  std::size_t pos_ = 0;
};

}  // namespace detail

/// Parses `text` strictly; throws parse_error on anything but one valid
/// JSON value.
inline value parse(std::string_view text) { return detail::parser(text).parse_document(); }

}  // namespace mini_json
