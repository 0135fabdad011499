// Getting values into and out of the shared world.
//
// Input(owner): dealer-made input masks [r] with r known to the owner; the owner sends
//   d = x - r to both peers (1 round, 8n bytes to each peer from the owner; the others
//   send nothing); everyone sets [x] = [r] + d. In Spdz2k mode d is folded into the
//   transcript hash that the next CheckMacs() compares, so an owner that sends different
//   d to different parties is caught.
// InputSum: every party inputs its own n values at once and the parties get [sum_p x_p]:
//   1 round, 8n bytes from each party to each peer; the three d vectors are folded into the
//   transcript hash in party order (each party's own noise share in MPCache's reveal: dp).
// InputFromClient: same, with masks whose clear value the dealer gave to the client; the
//   parties receive d from the client out of band and call this with it.
// OutputTo(receiver): Spdz2k: open x + r with r an input mask owned by the receiver
//   (1 round), then CheckMacs() over everything opened so far (3 rounds): nothing leaves
//   before every earlier opening passed; the receiver gets x, the others an empty vector.
//   Semi-honest: the others send their shares to the receiver (1 round, 8n bytes each).
// OutputToClient: Spdz2k and semi-honest: open x + r with a client-owned mask, check MACs,
//   and return x + r (identical at every party); the client subtracts r.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "mpc/context.h"

namespace mpcache::mpc {

// `values` is read at the owner only (size n); other parties pass an empty span.
template <typename P>
Result<Shares<P>> Input(Context<P>& ctx, PartyId owner, std::span<const std::uint64_t> values,
                        std::size_t n);

// `mine`: this party's n values.
template <typename P>
Result<Shares<P>> InputSum(Context<P>& ctx, std::span<const std::uint64_t> mine);

template <typename P>
Result<Shares<P>> InputFromClient(Context<P>& ctx, InputMasks<P>&& masks,
                                  std::span<const std::uint64_t> d);

template <typename P>
Result<std::vector<std::uint64_t>> OutputTo(Context<P>& ctx, const Shares<P>& x, PartyId receiver);

template <typename P>
Result<std::vector<std::uint64_t>> OutputToClient(Context<P>& ctx, const Shares<P>& x);

}  // namespace mpcache::mpc
