// A corrupt party's deviations, for the attacker tests only (tests/unit/mpc/attack_test.cc,
// tests/unit/compare/attack_test.cc, the lying-party end-to-end test). A party that runs
// the protocol honestly has no Adversary: Context and BinaryContext hold a null pointer
// and pay one branch per opening and per MAC-check round.
//
// The hooks see the bytes this party is about to send and may change them. An opening
// sends the same bytes to every peer, so a change there is a *consistent* lie (the
// strongest kind: the honest parties agree on the wrong value), and the liar's own view of
// the opened value includes the lie as well — it then runs the check with that view, as a
// corrupt party that controls its own state would. The check hook lets a test change the
// liar's check messages after it has seen the check coefficients (e.g. add a correction to
// its check value, or open a coin share other than the committed one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace mpcache::mpc {

enum class Domain : std::uint8_t { kArith = 0, kBinary = 1 };

class Adversary {
 public:
  virtual ~Adversary() = default;
  // Opening number `index` (counted per domain from 0 in this context) of `n` values is
  // about to send `outgoing` to every peer: arithmetic openings carry `outgoing.size() / n`
  // little-endian bytes per value, binary ones the n bits packed 8 per byte (bit i of the
  // opening is bit i % 8 of byte i / 8). In king mode the king sends no share: its hook
  // sees the sum it is about to relay to both peers (a lying king), under the same index.
  // A split-king opening calls it twice under one index: first with every value (this
  // party's shares, the deferred values that ride it in front), then with the sums of its
  // own segment that it is about to relay.
  virtual void OnOpen(Domain /*domain*/, std::uint64_t /*index*/, std::size_t /*n*/,
                      std::span<std::uint8_t> /*outgoing*/) {}
  // Deferred openings (mpc/context.h: Context::Defer), about to ride the exchange of opening
  // `index`'s successor: `parts` splits the n values, in order, by what masks them — lazy
  // truncations' pairs drawn for this exchange, or a KV row's block mask drawn when the block
  // was made (mpc/attention_product.h: DeferRows). By default the same hook as any opening (a
  // liar treats them as its own opening).
  struct DeferredPart {
    bool truncation = true;
    std::size_t n = 0;
  };
  virtual void OnDeferredOpen(Domain domain, std::uint64_t index, std::size_t n,
                              std::span<std::uint8_t> outgoing,
                              std::span<const DeferredPart> /*parts*/) {
    OnOpen(domain, index, n, outgoing);
  }
  // A split-king opening (mpc/context.h, OpenMode::kSplitKing): as king of `n` of opening
  // `index`'s values this party is about to relay their sums to peer `to` (after OnOpen
  // changed them for both peers alike). A change here reaches `to` only: an inconsistent
  // relay, the two honest parties then hold different opened values.
  virtual void OnRelay(Domain /*domain*/, std::uint64_t /*index*/, int /*to*/, std::size_t /*n*/,
                       std::span<std::uint8_t> /*outgoing*/) {}
  // This party's part of round `round` of a MAC check of `domain` (layout in the context's
  // header), after it was computed and before it is sent to every peer.
  virtual void OnCheckMessage(Domain /*domain*/, int /*round*/, std::span<std::uint8_t> /*msg*/) {}
};

}  // namespace mpcache::mpc
