// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// replay_main: runs saved fuzz inputs through LLVMFuzzerTestOneInput without
// libFuzzer, so a starting corpus (and every reproducer added to it) is a plain
// regression test under any compiler.
//
// Usage: fuzz_replay <file-or-directory>...
// Directories are read one level deep, files in name order. Exits 0 after
// replaying every input, 1 when an argument cannot be read or names no
// input at all (a wrong path must not pass as "nothing failed"). A failing
// input aborts inside the target, after the target has said why; the name
// of the input being replayed is printed first.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

bool replay_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "fuzz_replay: cannot open %s\n", path.c_str());
    return false;
  }
  const std::vector<char> raw{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::vector<std::uint8_t> bytes(raw.size());
  std::transform(raw.begin(), raw.end(), bytes.begin(),
                 [](char c) { return static_cast<std::uint8_t>(c); });
  std::fprintf(stderr, "fuzz_replay: %s (%zu bytes)\n", path.c_str(), bytes.size());
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <file-or-directory>...\n", argv[0]);
    return 1;
  }
  std::size_t replayed = 0;
  for (int a = 1; a < argc; ++a) {
    const std::filesystem::path arg(argv[a]);
    std::error_code ec;
    std::vector<std::filesystem::path> files;
    if (std::filesystem::is_directory(arg, ec)) {
      for (const auto& entry : std::filesystem::directory_iterator(arg, ec)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
      std::sort(files.begin(), files.end());
    } else {
      files.push_back(arg);
    }
    if (ec) {
      std::fprintf(stderr, "fuzz_replay: cannot read %s: %s\n", argv[a], ec.message().c_str());
      return 1;
    }
    for (const auto& f : files) {
      if (!replay_file(f)) return 1;
      ++replayed;
    }
  }
  if (replayed == 0) {
    std::fprintf(stderr, "fuzz_replay: no inputs found\n");
    return 1;
  }
  std::printf("fuzz_replay: %zu inputs replayed, no failure\n", replayed);
  return 0;
}
