// Recording harness for the view tests (view_test.cc): one private generation of three
// parties in one process, like infer::RunInProcess, but with
//   * every opening of both domains recorded per party through the test-only Adversary
//     hook (mpc/adversary.h: it sees the exact bytes a party sends, changes nothing) and
//     reconstructed (sum / XOR of the three parties' shares), in program order, together
//     with the client's input broadcasts (what the parties receive from the client);
//   * every message a party receives (and sends to the client) recorded in order;
//   * the dealer material passing through a wrapper that logs which items each opening
//     used and can apply test mutations to it (a zeroed mask = an unmasked opening, a
//     mask handed out a second time = a reused mask), identically at every party so the
//     sharings stay consistent and the run completes;
//   * dealer seeds, local seeds and a "burn" count (batches of the chosen item types taken
//     and thrown away before the session: same MAC keys, different masks) set separately.
#pragma once

#include <array>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "infer/in_process.h"
#include "mpc/adversary.h"
#include "mpc/compare/binary_context.h"
#include "net/mem_mesh.h"
#include "net/run_parties.h"
#include "preproc/bit_dealer.h"
#include "unit/infer/view_mutations.h"

namespace mpcache::infer::viewtest {

using mpc::u128;

// A request to the dealer: item type, elements, and the truncation's fractional bits.
struct Request {
  Item item = Item::kTriple;
  std::size_t n = 0;
  int frac_bits = 0;
  bool operator==(const Request&) const = default;
};

enum class Kind : std::uint8_t { kArith = 0, kBinary = 1, kClientIn = 2 };
inline const char* KindName(Kind k) {
  return k == Kind::kArith ? "arith" : k == Kind::kBinary ? "binary" : "client-input";
}

// One reconstructed opening (or client broadcast), in program order.
struct Opening {
  Kind kind = Kind::kArith;
  std::uint64_t index = 0;         // per kind, from 0 (the Adversary's index for both domains)
  std::size_t n = 0;               // values (bits for kBinary)
  std::size_t width = 0;           // bytes per value on the wire (0 for kBinary)
  std::uint32_t sources = 0;       // items requested since the previous opening (Bit(Item))
  std::vector<Request> requests;   // those requests, in order
  std::string label;               // the same as text, e.g. "trunc(8)"
  std::vector<u128> values;        // arithmetic / client: the opened values mod 2^(8 width)
  std::vector<std::uint8_t> bits;  // binary: one opened bit per byte

  std::string Name() const {
    return std::string(KindName(kind)) + " opening #" + std::to_string(index) + " (" +
           std::to_string(n) + (kind == Kind::kBinary ? " bits" : " values") +
           (width ? " x " + std::to_string(width) + " B" : std::string()) +
           (label.empty() ? std::string() : ", after " + label) + ")";
  }
};

// A message in a party's view: received from a peer, from the client, or sent to it.
struct Message {
  int from = 0;  // peer id, or kFromClient / kToClient
  std::vector<std::uint8_t> bytes;
};
inline constexpr int kFromClient = -1;
inline constexpr int kToClient = -2;

struct PartyLog {
  std::uint32_t pending_sources = 0;
  std::vector<Request> pending;
  std::string pending_label;
  struct Raw {
    Kind kind;
    std::uint64_t index;
    std::size_t n;
    std::uint32_t sources;
    std::vector<Request> requests;
    std::string label;
    std::vector<std::uint8_t> bytes;
  };
  std::vector<Raw> opens;
  std::vector<Message> messages;
  std::vector<std::pair<int, std::size_t>> sent;      // (peer, size) of every send, in order
  std::vector<mpc::AttentionShape> announced, taken;  // attention plans; triples taken
  static std::string Label(const Request& q) {
    std::string out = ItemName(q.item);
    out.append("(");
    out.append(std::to_string(q.n));
    if (q.frac_bits != 0) {
      // (For comparison tuples the third field is the group count.)
      out.append(q.item == Item::kLtzTuple ? ", g " : ", f ");
      out.append(std::to_string(q.frac_bits));
    }
    out.append(")");
    return out;
  }
  void Source(Item t, std::size_t n, int frac_bits) {
    pending_sources |= Bit(t);
    pending.push_back({t, n, frac_bits});
    if (!pending_label.empty()) pending_label += "+";
    pending_label += Label(pending.back());
  }
  // Deferred openings (mpc/context.h) ride the next opening. Lazy truncations are masked by
  // the truncation pairs they took just before (the last requests, as many values as the
  // truncation parts: fixed in the exact family, checked by the noisy one); a KV row's D by
  // its block's matrix mask, drawn when the block was made (moved by the exact family's burn
  // like any matrix mask). Each kind is recorded as one opening (same index), its values in
  // wire order; the items requested before stay with the opening the values ride.
  void OpenDeferred(std::uint64_t index, std::size_t n, std::span<const std::uint8_t> b,
                    std::span<const mpc::Adversary::DeferredPart> parts) {
    const std::size_t width = n == 0 ? 0 : b.size() / n;
    std::vector<std::uint8_t> trunc_bytes, other_bytes;
    std::size_t n_trunc = 0, at = 0;
    for (const auto& part : parts) {
      auto& to = part.truncation ? trunc_bytes : other_bytes;
      to.insert(to.end(), b.begin() + static_cast<std::ptrdiff_t>(at * width),
                b.begin() + static_cast<std::ptrdiff_t>((at + part.n) * width));
      if (part.truncation) n_trunc += part.n;
      at += part.n;
    }
    // The latest truncation pairs asked for: a comparison that takes truncations in asks for
    // their pairs before its own tuples, so other requests may come after them.
    std::vector<Request> mine;
    std::size_t got = 0;
    for (std::size_t k = pending.size(); k-- > 0 && got < n_trunc;) {
      if (pending[k].item != Item::kTrunc) continue;
      got += pending[k].n;
      mine.insert(mine.begin(), pending[k]);
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(k));
    }
    if (n_trunc > 0) {
      std::string label = "deferred";
      for (const Request& q : mine) {
        label.append(" ");
        label.append(Label(q));
      }
      opens.push_back({Kind::kArith, index, n_trunc, Bit(Item::kTrunc), std::move(mine), label,
                       std::move(trunc_bytes)});
    }
    if (n_trunc < n) {
      opens.push_back({Kind::kArith,
                       index,
                       n - n_trunc,
                       Bit(Item::kMatrixMask),
                       {},
                       "deferred KV rows",
                       std::move(other_bytes)});
    }
    pending_sources = 0;
    pending_label.clear();
    for (const Request& q : pending) {
      pending_sources |= Bit(q.item);
      if (!pending_label.empty()) pending_label += "+";
      pending_label += Label(q);
    }
  }
  void Open(Kind kind, std::uint64_t index, std::size_t n, std::span<const std::uint8_t> b) {
    opens.push_back(
        {kind, index, n, pending_sources, std::move(pending), pending_label, {b.begin(), b.end()}});
    pending_sources = 0;
    pending.clear();
    pending_label.clear();
  }
};

// One party's preprocessing (both domains): logs the item types each opening follows and
// applies the mutations.
template <typename P>
class TestPrep final : public mpc::Preprocessing<P>, public mpc::BitPreprocessing<P> {
 public:
  // ltz_burn: run k of the exact family moves the comparison tuples' masks (view_ltz.h).
  TestPrep(mpc::Preprocessing<P>& arith, mpc::BitPreprocessing<P>& bits,
           const std::vector<Mutation>& muts, PartyLog& log, int ltz_burn = 0)
      : arith_(arith), bits_(bits), mut_(muts), log_(log), ltz_burn_(ltz_burn) {}
  mpc::PartyId party() const override { return arith_.party(); }
  u128 mac_key_share() const override { return arith_.mac_key_share(); }
  std::uint64_t bit_mac_key_share() const override { return bits_.bit_mac_key_share(); }

  Result<mpc::Triples<P>> GetTriples(std::size_t n) override {
    return Pass(Item::kTriple, n, arith_.GetTriples(n));
  }
  Result<mpc::SquarePairs<P>> GetSquares(std::size_t n) override {
    return Pass(Item::kSquare, n, arith_.GetSquares(n));
  }
  Result<mpc::TruncPairs<P>> GetTruncPairs(std::size_t n, int f) override {
    return Pass(Item::kTrunc, n, arith_.GetTruncPairs(n, f), f);
  }
  Result<mpc::Shares<P>> GetBits(std::size_t n) override {
    return Pass(Item::kBit, n, arith_.GetBits(n));
  }
  Result<mpc::Shares<P>> GetRandoms(std::size_t n) override {
    return Pass(Item::kRandom, n, arith_.GetRandoms(n));
  }
  Result<mpc::InputMasks<P>> GetInputMasks(std::size_t n, mpc::PartyId owner) override {
    return Pass(owner == mpc::kClient ? Item::kClientMask : Item::kInputMask, n,
                arith_.GetInputMasks(n, owner));
  }
  Result<mpc::MatrixMask<P>> GetMatrixMask(std::size_t rows, std::size_t cols) override {
    return Pass(Item::kMatrixMask, rows * cols, arith_.GetMatrixMask(rows, cols));
  }
  Result<mpc::MatrixTriple<P>> GetMatrixTriple(std::uint64_t id, mpc::MaskSide side,
                                               std::size_t other) override {
    auto r = arith_.GetMatrixTriple(id, side, other);
    const std::size_t n = r.ok() ? r->b.size() : 0;
    return Pass(Item::kMatrixTriple, n, std::move(r));
  }
  Result<mpc::AttentionTriple<P>> GetAttentionTriple(const mpc::AttentionShape& shape) override {
    log_.taken.push_back(shape);
    auto r = arith_.GetAttentionTriple(shape);
    const std::size_t n = r.ok() ? r->b.size() : 0;
    return Pass(Item::kAttention, n, std::move(r));
  }
  Result<mpc::FusedTriples<P>> GetFusedTriples(std::size_t n,
                                               const mpc::FusedShape& shape) override {
    return Pass(Item::kFused, n, arith_.GetFusedTriples(n, shape), static_cast<int>(shape.Code()));
  }
  Status Announce(const std::vector<mpc::AttentionShape>& plan) override {
    log_.announced.insert(log_.announced.end(), plan.begin(), plan.end());
    return arith_.Announce(plan);
  }
  Result<mpc::BitTriples<P>> GetBitTriples(std::size_t n) override {
    return Pass(Item::kBitTriple, n, bits_.GetBitTriples(n));
  }
  Result<mpc::EdaBits<P>> GetEdaBits(std::size_t n) override {
    return Pass(Item::kEdaBit, n, bits_.GetEdaBits(n));
  }
  Result<mpc::DaBits<P>> GetDaBits(std::size_t n) override {
    return Pass(Item::kDaBit, n, bits_.GetDaBits(n));
  }
  Result<mpc::RootTuples<P>> GetRootTuples(std::size_t n) override {
    return Pass(Item::kRootTuple, n, bits_.GetRootTuples(n));
  }
  Result<mpc::BitShares<P>> GetBitRandoms(std::size_t n) override {
    return Pass(Item::kBitRandom, n, bits_.GetBitRandoms(n));
  }
  Result<mpc::LtzTuples<P>> GetLtzTuples(std::size_t n, int groups) override {
    auto r = bits_.GetLtzTuples(n, groups);
    const int call = ltz_calls_++;
    if (r.ok() && ltz_burn_ > 0) {
      const LtzKeys keys{static_cast<int>(arith_.party()), bits_.bit_mac_key_share(),
                         arith_.mac_key_share()};
      const mpc::ltz::LtzLayout& l = mpc::ltz::LtzLayoutFor(groups);
      for (std::size_t e = 0; e < r->size(); ++e) {
        LtzElem<P> x{*r, l, e};
        LtzShift(x, LtzDelta(ltz_burn_, call, e), keys);
      }
    }
    return Pass(Item::kLtzTuple, n, std::move(r), groups);
  }

 private:
  template <typename T>
  Result<T> Pass(Item item, std::size_t n, Result<T> r, int frac_bits = 0) {
    if (!r.ok()) return r;
    // Arithmetic randoms are the one-hot input check's coin (opened: a source like any
    // mask); bit randoms mask no opening.
    if (item != Item::kBitRandom) log_.Source(item, n, frac_bits);
    mut_.Apply(item, *r);
    return r;
  }
  mpc::Preprocessing<P>& arith_;
  mpc::BitPreprocessing<P>& bits_;
  Mutator<P> mut_;
  PartyLog& log_;
  int ltz_burn_ = 0;
  int ltz_calls_ = 0;
};

// Sees every opening's outgoing bytes (this party's shares); records, changes nothing.
class RecordingAdversary final : public mpc::Adversary {
 public:
  explicit RecordingAdversary(PartyLog& log) : log_(log) {}
  void OnOpen(mpc::Domain d, std::uint64_t index, std::size_t n,
              std::span<std::uint8_t> out) override {
    log_.Open(d == mpc::Domain::kArith ? Kind::kArith : Kind::kBinary, index, n, out);
  }
  void OnDeferredOpen(mpc::Domain, std::uint64_t index, std::size_t n, std::span<std::uint8_t> out,
                      std::span<const mpc::Adversary::DeferredPart> parts) override {
    log_.OpenDeferred(index, n, out, parts);
  }

 private:
  PartyLog& log_;
};

// Forwards to the party's MemMesh channel, recording what it receives.
class RecordingChannel final : public net::Channel {
 public:
  RecordingChannel(net::Channel& inner, PartyLog& log, bool keep)
      : inner_(inner), log_(log), keep_(keep) {}
  net::PartyId self() const override { return inner_.self(); }
  int num_parties() const override { return inner_.num_parties(); }
  Status Flush() override { return inner_.Flush(); }

 protected:
  Status DoSend(net::PartyId peer, std::span<const std::uint8_t> data) override {
    if (keep_) log_.sent.emplace_back(peer, data.size());
    return inner_.Send(peer, data);
  }
  Status DoRecv(net::PartyId peer, std::span<std::uint8_t> data) override {
    MPCACHE_RETURN_IF_ERROR(inner_.Recv(peer, data));
    if (keep_) log_.messages.push_back({peer, {data.begin(), data.end()}});
    return Status::Ok();
  }

 private:
  net::Channel& inner_;
  PartyLog& log_;
  bool keep_;
};

inline std::vector<std::uint8_t> WordBytes(std::span<const std::uint64_t> w) {
  std::vector<std::uint8_t> b(w.size_bytes());
  if (!w.empty()) std::memcpy(b.data(), w.data(), b.size());
  return b;
}

// The party's side of the client link: records the broadcasts it receives (as openings
// and as messages) and the masked tokens it sends.
class RecordingLink final : public ClientLink {
 public:
  RecordingLink(ClientLink& inner, PartyLog& log, bool keep)
      : inner_(inner), log_(log), keep_(keep) {}
  Result<std::vector<std::uint64_t>> PromptInput(int pos, std::uint64_t seq,
                                                 std::size_t n) override {
    MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> d, inner_.PromptInput(pos, seq, n));
    const std::vector<std::uint8_t> b = WordBytes(d);
    log_.Open(Kind::kClientIn, inputs_++, n, b);
    if (keep_) log_.messages.push_back({kFromClient, b});
    return d;
  }
  Result<std::vector<std::uint64_t>> NoiseInput(std::uint64_t seq, std::size_t n) override {
    MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> d, inner_.NoiseInput(seq, n));
    const std::vector<std::uint8_t> b = WordBytes(d);
    log_.Open(Kind::kClientIn, inputs_++, n, b);
    if (keep_) log_.messages.push_back({kFromClient, b});
    return d;
  }
  Result<bool> TokenOutput(int pos, std::uint64_t seq, std::uint64_t masked) override {
    if (keep_) log_.messages.push_back({kToClient, WordBytes({&masked, 1})});
    return inner_.TokenOutput(pos, seq, masked);
  }

 private:
  ClientLink& inner_;
  PartyLog& log_;
  bool keep_;
  std::uint64_t inputs_ = 0;
};

struct RunConfig {
  std::uint64_t dealer_seed = 1;  // both dealers (arithmetic and binary)
  std::uint64_t local_seed = 1;   // the parties' own randomness (coins, nonces)
  // Before the session, take and discard `burn` batches of every item type in `burn_items`
  // at every party: the same dealers (same MAC keys), later masks from other batches.
  int burn = 0;
  std::uint32_t burn_items = 0;
  bool record_messages = false;
  std::vector<Mutation> mutations;
  SessionOptions session;           // e.g. MPCache's policy, or sampling
  std::uint64_t sampling_seed = 1;  // the client's noise seed when session.sampling samples
};

struct RunRecord {
  std::vector<int> tokens;
  std::vector<Opening> openings;                                 // program order
  std::array<std::vector<Message>, 3> messages;                  // per party, in order
  std::array<std::vector<std::pair<int, std::size_t>>, 3> sent;  // per party: (peer, size)
  std::array<std::uint64_t, 3> rounds{};
  std::array<std::vector<mpc::AttentionShape>, 3> announced, taken;  // per party
};

template <typename P>
Status Burn(preproc::InProcessDealer<P>& d, preproc::InProcessBitDealer<P>& b, int times,
            std::uint32_t items) {
  using BI = preproc::BitItem;
  for (int k = 0; k < times; ++k) {
    for (int p = 0; p < 3; ++p) {
      auto& s = d.store(p);
      auto& t = b.store(p);
      auto units = [&](BI i) { return preproc::InProcessBitDealer<P>::UnitItems(i); };
      if (items & Bit(Item::kTriple)) MPCACHE_RETURN_IF_ERROR(s.GetTriples(1));
      if (items & Bit(Item::kSquare)) MPCACHE_RETURN_IF_ERROR(s.GetSquares(1));
      if (items & Bit(Item::kTrunc)) MPCACHE_RETURN_IF_ERROR(s.GetTruncPairs(1, 18));
      if (items & Bit(Item::kBit)) MPCACHE_RETURN_IF_ERROR(s.GetBits(1));
      if (items & Bit(Item::kRandom)) MPCACHE_RETURN_IF_ERROR(s.GetRandoms(1));
      if (items & Bit(Item::kClientMask)) {
        MPCACHE_RETURN_IF_ERROR(s.GetInputMasks(1, mpc::kClient));
      }
      if (items & Bit(Item::kMatrixMask)) {
        MPCACHE_ASSIGN_OR_RETURN(auto mask, s.GetMatrixMask(1, 1));
        if (items & Bit(Item::kMatrixTriple)) {
          MPCACHE_RETURN_IF_ERROR(s.GetMatrixTriple(mask.id, mpc::MaskSide::kRight, 1));
        }
        if (items & Bit(Item::kAttention)) {
          MPCACHE_RETURN_IF_ERROR(s.GetAttentionTriple({.side = mpc::MaskSide::kRight,
                                                        .n_heads = 1,
                                                        .head_size = 1,
                                                        .kv_dim = 1,
                                                        .masks = {mask.id},
                                                        .lens = {1}}));
        }
      }
      if (items & Bit(Item::kBitTriple)) {
        MPCACHE_RETURN_IF_ERROR(t.GetBitTriples(units(BI::kBitTriple)));
      }
      if (items & Bit(Item::kEdaBit)) MPCACHE_RETURN_IF_ERROR(t.GetEdaBits(units(BI::kEdaBit)));
      if (items & Bit(Item::kDaBit)) MPCACHE_RETURN_IF_ERROR(t.GetDaBits(units(BI::kDaBit)));
      if (items & Bit(Item::kRootTuple)) {
        MPCACHE_RETURN_IF_ERROR(t.GetRootTuples(units(BI::kRootTuple)));
      }
      // Comparison tuples are not burnt (that would change their r too): TestPrep moves
      // their masks instead (view_ltz.h).
    }
    if (items & Bit(Item::kClientMask)) MPCACHE_RETURN_IF_ERROR(d.NextClientMasks());
  }
  return Status::Ok();
}

inline u128 LoadLe(const std::uint8_t* p, std::size_t width) {
  u128 v = 0;
  std::memcpy(&v, p, width);  // little-endian host (x86-64, as the wire format assumes)
  return v;
}

// Rebuilds the opened values from the three parties' sends (all-to-all openings: every
// party sends its share; the opened value is their sum, or XOR for bits).
inline Result<std::vector<Opening>> Reconstruct(const std::array<PartyLog, 3>& logs) {
  const auto& l0 = logs[0].opens;
  for (const auto& l : logs) {
    if (l.opens.size() != l0.size()) return ProtocolError("parties recorded different openings");
  }
  std::vector<Opening> out;
  out.reserve(l0.size());
  for (std::size_t i = 0; i < l0.size(); ++i) {
    Opening o;
    o.kind = l0[i].kind;
    o.index = l0[i].index;
    o.n = l0[i].n;
    o.sources = l0[i].sources;
    o.requests = l0[i].requests;
    o.label = l0[i].label;
    for (const auto& l : logs) {
      const auto& r = l.opens[i];
      if (r.kind != o.kind || r.index != o.index || r.n != o.n ||
          r.bytes.size() != l0[i].bytes.size()) {
        return ProtocolError("opening " + std::to_string(i) + " differs between parties");
      }
    }
    if (o.kind == Kind::kBinary) {
      o.bits.assign(o.n, 0);
      for (std::size_t j = 0; j < o.n; ++j) {
        for (const auto& l : logs) o.bits[j] ^= (l.opens[i].bytes[j / 8] >> (j % 8)) & 1;
      }
    } else if (o.kind == Kind::kClientIn) {  // a broadcast: every party got the same d
      o.width = 8;
      for (std::size_t j = 0; j < o.n; ++j) o.values.push_back(LoadLe(&l0[i].bytes[8 * j], 8));
    } else {
      o.width = o.n ? l0[i].bytes.size() / o.n : 0;
      const u128 mask = o.width >= 16 ? ~u128{0} : (u128{1} << (8 * o.width)) - 1;
      for (std::size_t j = 0; j < o.n; ++j) {
        u128 v = 0;
        for (const auto& l : logs) v += LoadLe(&l.opens[i].bytes[o.width * j], o.width);
        o.values.push_back(v & mask);
      }
    }
    out.push_back(std::move(o));
  }
  return out;
}

// One private generation (public weights) recorded as above.
template <typename P>
Result<RunRecord> RunRecorded(const std::shared_ptr<const RingModel>& model,
                              const std::vector<int>& prompt, int steps, const RunConfig& cfg) {
  constexpr int kParties = 3;
  if (!model) return InvalidArgument("no model");
  MPCACHE_ASSIGN_OR_RETURN(
      auto mesh, net::MemMesh::Create(kParties, {.recv_timeout = std::chrono::seconds(300)}));
  const Seed dseed = TestSeed(cfg.dealer_seed), lseed = TestSeed(1000 + cfg.local_seed);
  MPCACHE_ASSIGN_OR_RETURN(
      auto dealer, preproc::InProcessDealer<P>::Create(DeriveSeed(dseed, 1), kParties, true));
  MPCACHE_ASSIGN_OR_RETURN(auto bit_dealer,
                           preproc::InProcessBitDealer<P>::Create(
                               DeriveSeed(dseed, 2), dealer->dealer().mac_key(), kParties));
  MPCACHE_RETURN_IF_ERROR(Burn(*dealer, *bit_dealer, cfg.burn, cfg.burn_items));
  ClientMasks masks([&dealer] { return dealer->NextClientMasks(); }, cfg.mutations);
  InProcessClient client(
      prompt, model->config.vocab_size, /*bos_id=*/1, [&masks] { return masks.Next(); }, kParties);
  if (!cfg.session.sampling.Greedy()) {
    auto noise = std::make_shared<SamplingNoise>(
        cfg.sampling_seed, cfg.session.sampling.temperature, cfg.session.math.frac_bits);
    client.SetNoise([noise](std::size_t n) { return noise->Next(n); });
  }
  std::array<PartyLog, kParties> logs;
  std::array<std::uint64_t, kParties> rounds{};
  auto outcomes = net::RunParties(*mesh, [&](net::Channel& inner) -> Result<int> {
    const int self = inner.self();
    PartyLog& log = logs[static_cast<std::size_t>(self)];
    RecordingChannel ch(inner, log, cfg.record_messages);
    TestPrep<P> prep(dealer->store(self), bit_dealer->store(self), cfg.mutations, log,
                     (cfg.burn_items & Bit(Item::kLtzTuple)) != 0 ? cfg.burn : 0);
    RecordingAdversary adversary(log);
    MPCACHE_ASSIGN_OR_RETURN(auto ctx,
                             mpc::Context<P>::Create(ch, prep, DeriveSeed(lseed, 100 + self)));
    ctx->set_adversary_for_testing(&adversary);
    MPCACHE_ASSIGN_OR_RETURN(
        auto bctx, mpc::BinaryContext<P>::Create(*ctx, prep, DeriveSeed(lseed, 200 + self)));
    bctx->set_adversary_for_testing(&adversary);
    MPCACHE_ASSIGN_OR_RETURN(SecureWeights<P> weights, PublicWeights<P>(*ctx, model));
    MPCACHE_ASSIGN_OR_RETURN(auto session,
                             GenerationSession<P>::Create(*bctx, weights, cfg.session));
    RecordingLink link(client.Link(self), log, cfg.record_messages);
    MPCACHE_RETURN_IF_ERROR(session->Generate(link, static_cast<int>(prompt.size()), steps));
    rounds[static_cast<std::size_t>(self)] = ch.stats().Total().rounds;
    return self;
  });
  for (std::size_t p = 0; p < outcomes.size(); ++p) {
    if (!outcomes[p].ok()) return outcomes[p].error().WithContext("party " + std::to_string(p));
  }
  RunRecord rec;
  rec.tokens = client.Tokens();
  MPCACHE_ASSIGN_OR_RETURN(rec.openings, Reconstruct(logs));
  for (std::size_t p = 0; p < kParties; ++p) {
    rec.messages[p] = std::move(logs[p].messages);
    rec.sent[p] = std::move(logs[p].sent);
    rec.rounds[p] = rounds[p];
    rec.announced[p] = std::move(logs[p].announced);
    rec.taken[p] = std::move(logs[p].taken);
  }
  return rec;
}

}  // namespace mpcache::infer::viewtest
