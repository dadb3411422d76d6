// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// log_tag: appends the push-constant tag to a device-side log, so a test
// can read back the order in which operations ran on the device.
#version 450
layout(local_size_x = 1) in;

layout(std430, set = 0, binding = 0) buffer Log {
  uint count;
  uint tags[];
} log_buffer;

layout(push_constant) uniform Push {
  uint tag;
} push;

void main() {
  uint slot = atomicAdd(log_buffer.count, 1u);
  log_buffer.tags[slot] = push.tag;
}
