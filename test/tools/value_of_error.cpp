// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// value_of_error: calls result::value() on an error, which must abort with
// the error's own code, message and position in the report (checked by
// check_abort_message.py in the 'result_value_of_error' test), not only
// "called on an error".

#include <causal/result.hpp>

#include <cstdio>

namespace {

causal::result<int> parse_width(const char* text) {
  if (text[0] == '\0') return causal::error{causal::errc::malformed, "width: empty text", 7};
  return 1;
}

}  // namespace

int main() {
  const causal::result<int> width = parse_width("");
  std::printf("%d\n", width.value());  // aborts: the result holds an error
  return 0;
}
