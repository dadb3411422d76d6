// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Links the two generated ODR TUs (odr_a.cpp, odr_b.cpp) into one program.

int causal_odr_a();
int causal_odr_b();

int main() { return causal_odr_a() + causal_odr_b(); }
