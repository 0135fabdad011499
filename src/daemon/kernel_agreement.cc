#include "daemon/kernel_agreement.h"

#include <array>
#include <cstdint>

namespace mpcache::daemon {
namespace {

constexpr std::size_t kFields = config::kKernelPriceFields.size();
using Wire = std::array<std::uint8_t, 4 * kFields>;

std::array<std::uint32_t, kFields> Values(const config::KernelPrices& k) {
  std::array<std::uint32_t, kFields> v{};
  for (std::size_t i = 0; i < kFields; ++i) {
    v[i] = static_cast<std::uint32_t>(k.*config::kKernelPriceFields[i].price);
  }
  return v;
}

Wire Encode(const std::array<std::uint32_t, kFields>& v) {
  Wire w{};
  for (std::size_t i = 0; i < kFields; ++i) {
    for (std::size_t b = 0; b < 4; ++b) w[4 * i + b] = static_cast<std::uint8_t>(v[i] >> (8 * b));
  }
  return w;
}

std::array<std::uint32_t, kFields> Decode(const Wire& w) {
  std::array<std::uint32_t, kFields> v{};
  for (std::size_t i = 0; i < kFields; ++i) {
    for (std::size_t b = 0; b < 4; ++b) v[i] |= static_cast<std::uint32_t>(w[4 * i + b]) << (8 * b);
  }
  return v;
}

}  // namespace

Status AgreeOnKernelPrices(net::Channel& channel, const config::KernelPrices& mine,
                           const std::string& my_file) {
  const auto ours = Values(mine);
  MPCACHE_ASSIGN_OR_RETURN(const auto all, net::ExchangeWithPeers(channel, Encode(ours)));
  for (int p = 0; p < channel.num_parties(); ++p) {
    if (p == channel.self()) continue;
    const auto theirs = Decode(all[static_cast<std::size_t>(p)]);
    for (std::size_t i = 0; i < kFields; ++i) {
      if (theirs[i] == ours[i]) continue;
      return InvalidArgument(
          "the parties' kernel prices differ: party " + std::to_string(p) + " has kernels." +
          config::kKernelPriceFields[i].key + ": " + std::to_string(theirs[i]) + ", party " +
          std::to_string(channel.self()) + " (" + my_file + ") " + std::to_string(ours[i]) +
          "; fix: the same kernels section in the three parties' configs "
          "(the parties must run the same protocol)");
    }
  }
  return Status::Ok();
}

}  // namespace mpcache::daemon
