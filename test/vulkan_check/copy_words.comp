// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// copy_words: dst[i] = src[i] + 1 for i < push.count. The dispatches of
// check_vs_validation_test.cpp: binding 0 is only read (a SHADER_READ of
// its descriptor range), binding 1 only written (a SHADER_WRITE).
#version 450
layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst { uint dst[]; };

layout(push_constant) uniform Push {
  uint count;
} push;

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < push.count) dst[i] = src[i] + 1u;
}
