// Cryptographic pseudo-random generator: AES-128 in counter mode (OpenSSL EVP, AES-NI),
// keyed by a 128-bit seed. Every random value in the system comes from one of these,
// seeded from the OS (production) or from a fixed seed (tests, deterministic transcripts).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "common/result.h"

namespace mpcache {

using Seed = std::array<std::uint8_t, 16>;

// A fresh seed from the operating system's CSPRNG.
Result<Seed> OsSeed();
// A seed derived from a 64-bit number: for tests and reproducible benchmarks only.
Seed TestSeed(std::uint64_t n);
// A child seed: AES_seed(label) — independent streams from one master seed.
Seed DeriveSeed(const Seed& parent, std::uint64_t label);

class Prg {
 public:
  explicit Prg(const Seed& seed);
  ~Prg();
  Prg(Prg&&) noexcept;
  Prg& operator=(Prg&&) noexcept;
  Prg(const Prg&) = delete;
  Prg& operator=(const Prg&) = delete;

  // Fill `out` with the next bytes of the keystream.
  void Fill(std::span<std::uint8_t> out);
  void Fill(void* out, std::size_t n) { Fill({static_cast<std::uint8_t*>(out), n}); }
  template <typename T>
  void FillValues(std::span<T> out) {
    Fill(out.data(), out.size_bytes());
  }
  std::uint64_t NextU64();
  unsigned __int128 NextU128();
  // Uniform in [0, bound) without modulo bias; bound > 0.
  std::uint64_t Uniform(std::uint64_t bound);
  // Uniform double in [0, 1).
  double NextDouble();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mpcache
