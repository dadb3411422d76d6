// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// inference_model: the toy model the inference examples run -- a
// tokenizer, an encoder split into tiles and a decoder, all integer
// arithmetic so every output can be checked exactly against reference().
// Shared by examples/10_inference_pipeline.cpp (one process) and
// examples/mpi/13_inference_split.cpp (three ranks), which differ only in
// how the stages are scheduled, never in what they compute.
//
// Thread safety: the functions touch only the request they are given;
//                encode_tile's tiles write disjoint parts of `hidden`.
// Memory order:  not applicable (the examples order the stages).
// Blocking/allocation: reference() allocates its scratch buffers; the
//                stage functions never allocate.
// Size:          a request needs tokens_bytes + hidden_bytes of buffers.
#pragma once

#include <causal/block_processor.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace inference_model {

inline constexpr std::size_t tokens_per_request = 256;
inline constexpr std::size_t hidden_size = 1024;
inline constexpr std::uint32_t encoder_tiles = 64;
inline constexpr std::size_t tokens_bytes = tokens_per_request * sizeof(std::uint32_t);
inline constexpr std::size_t hidden_bytes = hidden_size * sizeof(std::uint64_t);

/// What one request's operations read and write (pointers into the arena).
struct request_state {
  std::uint64_t id = 0;
  std::uint32_t* tokens = nullptr;
  std::uint64_t* hidden = nullptr;
  std::uint64_t output = 0;
};

inline std::uint32_t token_of(std::uint64_t request, std::size_t i) {
  return static_cast<std::uint32_t>((request * 2654435761u + i * 40503u) % 50257u);
}

inline void tokenize(request_state& r) {
  for (std::size_t i = 0; i < tokens_per_request; ++i) r.tokens[i] = token_of(r.id, i);
}

// Tile t of the encoder computes hidden[t * 16, t * 16 + 16).
inline void encode_tile(void* user, causal::tile t) noexcept {
  auto& r = *static_cast<request_state*>(user);
  const std::size_t per_tile = hidden_size / encoder_tiles;
  for (std::size_t j = t.index * per_tile; j < (t.index + 1) * per_tile; ++j) {
    std::uint64_t acc = 0;
    for (std::size_t k = 0; k < tokens_per_request; ++k) acc += r.tokens[k] * ((j + k) % 7 + 1);
    r.hidden[j] = acc;
  }
}

inline std::uint64_t decode(const std::uint64_t* hidden, const std::uint32_t* tokens) {
  std::uint64_t out = tokens[0];
  for (std::size_t j = 0; j < hidden_size; ++j) out = out * 31 + hidden[j];
  return out;
}

/// The output of `request`, computed directly with no scheduling.
inline std::uint64_t reference(std::uint64_t request) {
  std::vector<std::uint32_t> tokens(tokens_per_request);
  std::vector<std::uint64_t> hidden(hidden_size);
  request_state r{request, tokens.data(), hidden.data(), 0};
  tokenize(r);
  for (std::uint32_t t = 0; t < encoder_tiles; ++t) encode_tile(&r, causal::tile{t, encoder_tiles, 1, 0});
  return decode(hidden.data(), tokens.data());
}

}  // namespace inference_model
