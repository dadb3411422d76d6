// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// copy_words (fragment): the fragment at pixel (x, y) of the 16x8
// attachment, i = y * 16 + x, reads v = src[127 - i] (the word of the
// mirrored pixel: one that another fragment, in another framebuffer
// region, writes when an earlier draw wrote this buffer), writes
// dst[i] = v + 1, each when inside its descriptor range, and writes v to
// the color attachment. The draws of check_vs_validation_test.cpp:
// binding 0 is only read (a FRAGMENT_SHADER SHADER_READ of its descriptor
// range), binding 1 only written (a FRAGMENT_SHADER SHADER_WRITE),
// location 0 a color attachment write (COLOR_ATTACHMENT_OUTPUT).
#version 450

layout(std430, set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst { uint dst[]; };

layout(location = 0) out uint color;

void main() {
  const uint i = uint(gl_FragCoord.y) * 16u + uint(gl_FragCoord.x);
  const uint j = 127u - i;
  const uint v = j < uint(src.length()) ? src[j] : 0u;
  if (i < uint(dst.length())) dst[i] = v + 1u;
  color = v;
}
