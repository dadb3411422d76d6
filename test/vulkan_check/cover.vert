// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// cover: one triangle that covers the whole framebuffer, from
// gl_VertexIndex alone (no vertex input, no descriptor). The vertex shader
// of check_vs_validation_test.cpp's draws: it accesses no memory.
#version 450

void main() {
  const vec2 corners[3] = vec2[](vec2(-1.0, -1.0), vec2(3.0, -1.0), vec2(-1.0, 3.0));
  gl_Position = vec4(corners[gl_VertexIndex], 0.0, 1.0);
}
