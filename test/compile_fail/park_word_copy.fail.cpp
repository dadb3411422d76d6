// expect-error: deleted (function|constructor)
// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// A park_word is an address that threads sleep on; a copy would be a second
// address that nobody notifies, so copying must not compile.

#include <causal/ext/park_word.hpp>

int main() {
  causal::ext::park_word word{0};
  causal::ext::park_word copy = word;
  return static_cast<int>(copy.load());
}
