#include "common/prg.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cstring>
#include <vector>

namespace mpcache {

namespace {
constexpr std::size_t kBufferBytes = 4096;
}  // namespace

Result<Seed> OsSeed() {
  Seed s{};
  if (RAND_bytes(s.data(), static_cast<int>(s.size())) != 1) {
    return IoError("the OS random generator (OpenSSL RAND_bytes) failed to produce a seed");
  }
  return s;
}

Seed TestSeed(std::uint64_t n) {
  Seed s{};
  std::memcpy(s.data(), &n, sizeof(n));
  s[15] = 0x5a;  // never the all-zero key
  return s;
}

struct Prg::Impl {
  EVP_CIPHER_CTX* ctx = nullptr;
  std::vector<std::uint8_t> zeros = std::vector<std::uint8_t>(kBufferBytes, 0);
  std::vector<std::uint8_t> buf = std::vector<std::uint8_t>(kBufferBytes, 0);
  std::size_t pos = kBufferBytes;

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    if (ctx != nullptr) EVP_CIPHER_CTX_free(ctx);
  }

  void Refill() {
    int len = 0;
    EVP_EncryptUpdate(ctx, buf.data(), &len, zeros.data(), static_cast<int>(kBufferBytes));
    pos = 0;
  }
};

Prg::Prg(const Seed& seed) : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_CIPHER_CTX_new();
  std::array<std::uint8_t, 16> iv{};
  EVP_EncryptInit_ex(impl_->ctx, EVP_aes_128_ctr(), nullptr, seed.data(), iv.data());
}

// The cipher context is owned by Impl, so destruction and move-assignment (which destroys
// the previous Impl) both free it.
Prg::~Prg() = default;
Prg::Prg(Prg&&) noexcept = default;
Prg& Prg::operator=(Prg&&) noexcept = default;

void Prg::Fill(std::span<std::uint8_t> out) {
  Impl& s = *impl_;
  std::size_t done = 0;
  // Serve from the buffer first, then encrypt large requests straight into the output.
  const std::size_t avail = kBufferBytes - s.pos;
  const std::size_t first = out.size() < avail ? out.size() : avail;
  std::memcpy(out.data(), s.buf.data() + s.pos, first);
  s.pos += first;
  done = first;
  while (out.size() - done >= kBufferBytes) {
    int len = 0;
    EVP_EncryptUpdate(s.ctx, out.data() + done, &len, s.zeros.data(),
                      static_cast<int>(kBufferBytes));
    done += kBufferBytes;
  }
  if (done < out.size()) {
    s.Refill();
    const std::size_t rest = out.size() - done;
    std::memcpy(out.data() + done, s.buf.data(), rest);
    s.pos = rest;
  }
}

std::uint64_t Prg::NextU64() {
  std::uint64_t v = 0;
  Fill(&v, sizeof(v));
  return v;
}

unsigned __int128 Prg::NextU128() {
  unsigned __int128 v = 0;
  Fill(&v, sizeof(v));
  return v;
}

std::uint64_t Prg::Uniform(std::uint64_t bound) {
  // Rejection sampling on the top of the range.
  const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % bound);
  for (;;) {
    const std::uint64_t v = NextU64();
    if (v < limit) {
      return v % bound;
    }
  }
}

double Prg::NextDouble() {
  return static_cast<double>(NextU64() >> 11) * 0x1.0p-53;
}

Seed DeriveSeed(const Seed& parent, std::uint64_t label) {
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  EVP_EncryptInit_ex(ctx, EVP_aes_128_ecb(), nullptr, parent.data(), nullptr);
  EVP_CIPHER_CTX_set_padding(ctx, 0);
  std::array<std::uint8_t, 16> in{};
  std::memcpy(in.data(), &label, sizeof(label));
  in[15] = 0xd5;
  Seed out{};
  int len = 0;
  EVP_EncryptUpdate(ctx, out.data(), &len, in.data(), 16);
  EVP_CIPHER_CTX_free(ctx);
  return out;
}

}  // namespace mpcache
