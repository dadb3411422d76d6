// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// add: dst[i] = a[i] + b[i] * factor, for i < count.
#version 450
layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { float b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Dst { float dst[]; };

layout(push_constant) uniform Push {
  uint count;
  float factor;
} push;

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < push.count) dst[i] = a[i] + b[i] * push.factor;
}
