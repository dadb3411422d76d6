// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// sim/json: a strict, small JSON reader (RFC 8259) for scenario files: it
// builds a tree of `json_value`s, each remembering the line and column it
// started at, and rejects anything malformed with the line, the column and
// what was expected there.
//
// Model. `parse_json(text)` reads exactly one value surrounded by optional
// whitespace. Strict means: no comments, no trailing commas, no single
// quotes, no leading zeros or `+`, no NaN/Infinity, no raw control
// characters in strings, only the RFC's escapes, `\u` surrogates paired,
// the input valid UTF-8, no duplicate object keys, nesting at most
// `max_json_depth` deep (so hostile input cannot exhaust the stack). It is
// tooling for files people write, not a hot path: it allocates, and it
// never throws on bad input (only std::bad_alloc can escape).
//
// Thread safety: parse_json is reentrant; a json_value is a value type.
// Memory order:  not applicable (no atomics).
// Blocking/allocation: allocates the tree; never blocks.
// Size:          a json_value is about 120 bytes plus its children.
// Configuration: max_json_depth (64).
// See also:      <causal/sim/scenario.hpp> (the scenario loader built on
//                it), examples/scenarios/README.md.
#pragma once

#include <causal/config.hpp>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <variant>
#include <vector>

CAUSAL_BEGIN_NAMESPACE

namespace sim {

/// The deepest nesting of arrays and objects parse_json accepts.
inline constexpr std::size_t max_json_depth = 64;

/// Where a problem is, 1-based, and what is wrong ("expected ':' after an
/// object key"). Columns count bytes.
struct diagnostic {
  std::size_t line = 0;
  std::size_t column = 0;
  std::string message;
  /// The file it is about, when known ("" otherwise).
  std::string source;

  /// Returns "source: line L, column C: message" (the parts that are known).
  [[nodiscard]] std::string to_string() const {
    std::string out = source.empty() ? "" : source + ": ";
    if (line != 0) out += "line " + std::to_string(line) + ", column " + std::to_string(column) + ": ";
    return out + message;
  }
};

/// Either a `T` or the diagnostic that says why there is none.
template <class T>
class parsed {
 public:
  parsed(T value) : state_(std::move(value)) {}
  parsed(diagnostic d) : state_(std::move(d)) {}

  [[nodiscard]] bool ok() const noexcept { return state_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }
  /// Precondition: ok().
  [[nodiscard]] T& value() { return std::get<0>(state_); }
  [[nodiscard]] const T& value() const { return std::get<0>(state_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  /// Precondition: !ok().
  [[nodiscard]] const diagnostic& error() const { return std::get<1>(state_); }

 private:
  std::variant<T, diagnostic> state_;
};

/// One JSON value and where it started in the text.
struct json_value {
  enum class kind : std::uint8_t { null, boolean, number, string, array, object };

  kind type = kind::null;
  bool boolean = false;
  /// number: its text as written (checked against the JSON grammar);
  /// string: the decoded UTF-8.
  std::string text;
  std::vector<json_value> items;  ///< array
  /// object members in file order: keys[i] names values[i]. (Two vectors:
  /// std::pair<std::string, json_value> would need json_value complete.)
  std::vector<std::string> keys;
  std::vector<json_value> values;
  std::size_t line = 0;
  std::size_t column = 0;

  [[nodiscard]] bool is(kind k) const noexcept { return type == k; }

  /// Returns the member called `key`, or null when absent (or not an object).
  [[nodiscard]] const json_value* find(std::string_view key) const noexcept {
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] == key) return &values[i];
    }
    return nullptr;
  }

  /// For a number: true when it is a non-negative integer that fits
  /// 64 bits (no fraction, no exponent); writes it to `out`.
  [[nodiscard]] bool as_uint(std::uint64_t& out) const noexcept {
    if (type != kind::number || text.empty() || text[0] == '-') return false;
    for (char c : text) {
      if (c < '0' || c > '9') return false;
    }
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc{} && end == text.data() + text.size();
  }

  /// For a number: its value as a double (finite; out-of-range fails).
  [[nodiscard]] bool as_double(double& out) const noexcept {
    if (type != kind::number) return false;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc{} && end == text.data() + text.size();
  }
};

/// Returns "null", "boolean", "number", "string", "array" or "object".
[[nodiscard]] constexpr std::string_view to_string(json_value::kind k) noexcept {
  switch (k) {
    case json_value::kind::null: return "null";
    case json_value::kind::boolean: return "boolean";
    case json_value::kind::number: return "number";
    case json_value::kind::string: return "string";
    case json_value::kind::array: return "array";
    case json_value::kind::object: return "object";
  }
  return "unknown";
}

namespace detail {

class json_reader {
 public:
  explicit json_reader(std::string_view text) noexcept : text_(text) {}

  parsed<json_value> run() {
    skip_space();
    json_value root;
    if (!value(root, 0)) return std::move(error_);
    skip_space();
    if (pos_ != text_.size()) return fail("expected the end of the input after the top-level value");
    return root;
  }

 private:
  [[nodiscard]] bool at_end() const noexcept { return pos_ >= text_.size(); }
  [[nodiscard]] char peek() const noexcept { return at_end() ? '\0' : text_[pos_]; }

  void advance() noexcept {
    if (text_[pos_] == '\n') {
      ++line_;
      line_start_ = pos_ + 1;
    }
    ++pos_;
  }

  diagnostic fail(std::string message) {
    error_ = diagnostic{line_, pos_ - line_start_ + 1, std::move(message), {}};
    return error_;
  }

  void skip_space() noexcept {
    while (!at_end()) {
      const char c = text_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
      advance();
    }
  }

  bool value(json_value& out, std::size_t depth) {
    out.line = line_;
    out.column = pos_ - line_start_ + 1;
    if (at_end()) {
      fail("expected a value (object, array, string, number, true, false or null), "
           "found the end of the input");
      return false;
    }
    switch (peek()) {
      case '{': return object(out, depth);
      case '[': return array(out, depth);
      case '"': out.type = json_value::kind::string; return string(out.text);
      case 't': return literal(out, "true", json_value::kind::boolean, true);
      case 'f': return literal(out, "false", json_value::kind::boolean, false);
      case 'n': return literal(out, "null", json_value::kind::null, false);
      default:
        if (peek() == '-' || (peek() >= '0' && peek() <= '9')) return number(out);
        fail(std::string("expected a value (object, array, string, number, true, false or null), "
                         "found ") + describe(peek()));
        return false;
    }
  }

  static std::string describe(char c) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x21 && u < 0x7f) return std::string("'") + c + "'";
    static constexpr char hex[] = "0123456789abcdef";
    return std::string("byte 0x") + hex[u >> 4] + hex[u & 15];
  }

  bool literal(json_value& out, std::string_view word, json_value::kind k, bool b) {
    if (text_.substr(pos_, word.size()) != word) {
      fail("expected '" + std::string(word) + "'");
      return false;
    }
    for (std::size_t i = 0; i < word.size(); ++i) advance();
    out.type = k;
    out.boolean = b;
    return true;
  }

  bool number(json_value& out) {
    const std::size_t start = pos_;
    if (peek() == '-') advance();
    if (peek() == '0') {
      advance();
      if (peek() >= '0' && peek() <= '9') {
        fail("a number must not have a leading zero");
        return false;
      }
    } else if (peek() >= '1' && peek() <= '9') {
      while (peek() >= '0' && peek() <= '9') advance();
    } else {
      fail("expected a digit in the number");
      return false;
    }
    if (peek() == '.') {
      advance();
      if (!(peek() >= '0' && peek() <= '9')) {
        fail("expected a digit after the decimal point");
        return false;
      }
      while (peek() >= '0' && peek() <= '9') advance();
    }
    if (peek() == 'e' || peek() == 'E') {
      advance();
      if (peek() == '+' || peek() == '-') advance();
      if (!(peek() >= '0' && peek() <= '9')) {
        fail("expected a digit in the exponent");
        return false;
      }
      while (peek() >= '0' && peek() <= '9') advance();
    }
    out.type = json_value::kind::number;
    out.text = std::string(text_.substr(start, pos_ - start));
    return true;
  }

  bool hex4(std::uint32_t& out) {
    out = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = peek();
      std::uint32_t d = 0;
      if (c >= '0' && c <= '9') {
        d = static_cast<std::uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        d = static_cast<std::uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        d = static_cast<std::uint32_t>(c - 'A' + 10);
      } else {
        fail("expected four hex digits after \\u");
        return false;
      }
      out = out * 16 + d;
      advance();
    }
    return true;
  }

  static void append_utf8(std::string& s, std::uint32_t cp) {
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xc0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xe0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      s += static_cast<char>(0xf0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  /// Length of the valid UTF-8 sequence at pos_ (0: invalid).
  [[nodiscard]] std::size_t utf8_length() const noexcept {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text_[pos_ + i]); };
    const unsigned char b0 = byte(0);
    std::size_t n = 0;
    unsigned char lo = 0x80, hi = 0xbf;
    if (b0 >= 0xc2 && b0 <= 0xdf) {
      n = 2;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
      n = 3;
      if (b0 == 0xe0) lo = 0xa0;
      if (b0 == 0xed) hi = 0x9f;  // no surrogates
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
      n = 4;
      if (b0 == 0xf0) lo = 0x90;
      if (b0 == 0xf4) hi = 0x8f;
    } else {
      return 0;
    }
    if (text_.size() - pos_ < n) return 0;
    if (byte(1) < lo || byte(1) > hi) return 0;
    for (std::size_t i = 2; i < n; ++i) {
      if (byte(i) < 0x80 || byte(i) > 0xbf) return 0;
    }
    return n;
  }

  bool string(std::string& out) {
    advance();  // the opening quote
    for (;;) {
      if (at_end()) {
        fail("unterminated string: expected '\"' before the end of the input");
        return false;
      }
      const auto c = static_cast<unsigned char>(peek());
      if (c == '"') {
        advance();
        return true;
      }
      if (c < 0x20) {
        fail("a control character must be escaped inside a string (found " + describe(peek()) + ")");
        return false;
      }
      if (c == '\\') {
        advance();
        const char e = peek();
        if (at_end()) {
          fail("unterminated escape at the end of the input");
          return false;
        }
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
            advance();
            std::uint32_t cp = 0;
            if (!hex4(cp)) return false;
            if (cp >= 0xdc00 && cp <= 0xdfff) {
              fail("unpaired low surrogate in a \\u escape");
              return false;
            }
            if (cp >= 0xd800 && cp <= 0xdbff) {
              if (peek() != '\\' || pos_ + 1 >= text_.size() || text_[pos_ + 1] != 'u') {
                fail("expected a \\u low surrogate after a high surrogate");
                return false;
              }
              advance();
              advance();
              std::uint32_t low = 0;
              if (!hex4(low)) return false;
              if (low < 0xdc00 || low > 0xdfff) {
                fail("expected a low surrogate (\\udc00-\\udfff) after a high surrogate");
                return false;
              }
              cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
            }
            append_utf8(out, cp);
            continue;  // hex4 already advanced
          }
          default:
            fail("invalid escape " + describe(e) + " (expected one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u)");
            return false;
        }
        advance();
        continue;
      }
      if (c < 0x80) {
        out += static_cast<char>(c);
        advance();
        continue;
      }
      const std::size_t n = utf8_length();
      if (n == 0) {
        fail("invalid UTF-8 in a string");
        return false;
      }
      out.append(text_.substr(pos_, n));
      for (std::size_t i = 0; i < n; ++i) advance();
    }
  }

  bool array(json_value& out, std::size_t depth) {
    if (depth >= max_json_depth) {
      fail("nesting deeper than " + std::to_string(max_json_depth) + " levels");
      return false;
    }
    out.type = json_value::kind::array;
    advance();
    skip_space();
    if (peek() == ']') {
      advance();
      return true;
    }
    for (;;) {
      json_value item;
      if (!value(item, depth + 1)) return false;
      out.items.push_back(std::move(item));
      skip_space();
      if (peek() == ',') {
        advance();
        skip_space();
        if (peek() == ']') {
          fail("trailing comma: expected a value after ','");
          return false;
        }
        continue;
      }
      if (peek() == ']') {
        advance();
        return true;
      }
      fail(at_end() ? std::string("expected ',' or ']' in the array, found the end of the input")
                    : "expected ',' or ']' in the array, found " + describe(peek()));
      return false;
    }
  }

  bool object(json_value& out, std::size_t depth) {
    if (depth >= max_json_depth) {
      fail("nesting deeper than " + std::to_string(max_json_depth) + " levels");
      return false;
    }
    out.type = json_value::kind::object;
    advance();
    skip_space();
    if (peek() == '}') {
      advance();
      return true;
    }
    for (;;) {
      if (peek() != '"') {
        fail(at_end() ? std::string("expected a '\"'-quoted object key, found the end of the input")
                      : "expected a '\"'-quoted object key, found " + describe(peek()));
        return false;
      }
      const std::size_t key_line = line_, key_column = pos_ - line_start_ + 1;
      std::string key;
      if (!string(key)) return false;
      if (out.find(key) != nullptr) {
        error_ = diagnostic{key_line, key_column, "duplicate object key \"" + key + "\"", {}};
        return false;
      }
      skip_space();
      if (peek() != ':') {
        fail("expected ':' after the object key \"" + key + "\"");
        return false;
      }
      advance();
      skip_space();
      json_value member;
      if (!value(member, depth + 1)) return false;
      out.keys.push_back(std::move(key));
      out.values.push_back(std::move(member));
      skip_space();
      if (peek() == ',') {
        advance();
        skip_space();
        if (peek() == '}') {
          fail("trailing comma: expected an object key after ','");
          return false;
        }
        continue;
      }
      if (peek() == '}') {
        advance();
        return true;
      }
      fail(at_end() ? std::string("expected ',' or '}' in the object, found the end of the input")
                    : "expected ',' or '}' in the object, found " + describe(peek()));
      return false;
    }
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  std::size_t line_ = 1;
  std::size_t line_start_ = 0;
  diagnostic error_;
};

}  // namespace detail

/// Parses `text` as one strict JSON value (see the file comment), or says
/// where and why it is not one. Only std::bad_alloc can escape.
[[nodiscard]] inline parsed<json_value> parse_json(std::string_view text) {
  return detail::json_reader(text).run();
}

}  // namespace sim

CAUSAL_END_NAMESPACE
