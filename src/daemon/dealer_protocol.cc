#include "daemon/dealer_protocol.h"

namespace mpcache::daemon::dealer_proto {

using wire::Reader;
using wire::Writer;

namespace {

Status Expect(Reader& r, Type t, const char* name) {
  MPCACHE_ASSIGN_OR_RETURN(std::uint8_t got, r.U8());
  if (got != t) return ProtocolError(std::string("expected a dealer ") + name + " message");
  return Status::Ok();
}

template <typename P>
void Put(Writer& w, const mpc::Shares<P>& s) {
  w.Vec(s.v);
  w.Vec(s.m);
}
template <typename P>
void Put(Writer& w, const mpc::BitShares<P>& s) {
  w.U64(s.n);
  w.Vec(s.v);
  w.Vec(s.m);
}
template <typename P>
Status Get(Reader& r, mpc::Shares<P>& s) {
  MPCACHE_ASSIGN_OR_RETURN(s.v, r.Vec<typename P::Word>());
  MPCACHE_ASSIGN_OR_RETURN(s.m, r.Vec<mpc::u128>());
  if (P::kMalicious && s.m.size() != s.v.size()) return CorruptData("dealer: MACs missing");
  return Status::Ok();
}
template <typename P>
Status Get(Reader& r, mpc::BitShares<P>& s) {
  MPCACHE_ASSIGN_OR_RETURN(std::uint64_t n, r.U64());
  s.n = static_cast<std::size_t>(n);
  MPCACHE_ASSIGN_OR_RETURN(s.v, r.Vec<std::uint64_t>());
  MPCACHE_ASSIGN_OR_RETURN(s.m, r.Vec<std::uint64_t>());
  const std::size_t want = P::kMalicious ? s.n : mpc::WordsFor(s.n);
  if (s.v.size() != want) return CorruptData("dealer: binary shares of the wrong size");
  return Status::Ok();
}

}  // namespace

std::vector<std::uint8_t> Encode(const Join& m) {
  Writer w(kJoin);
  w.U64(m.session)
      .U32(m.party)
      .U8(static_cast<std::uint8_t>(m.security))
      .U32(m.prompt_len)
      .U32(m.steps)
      .U32(m.vocab);
  return w.Take();
}

std::vector<std::uint8_t> Encode(const Setup& m) {
  Writer w(kSetup);
  w.Raw(m.party_seed.data(), 16).U64(m.bit_key_share);
  w.Raw(m.client_seed_share.data(), 16).Raw(m.client_seed_hash.data(), 32);
  w.U32(static_cast<std::uint32_t>(m.client_batches.size()));
  for (const auto& b : m.client_batches) w.Bytes(b.Serialize());
  return w.Take();
}

std::vector<std::uint8_t> Encode(const BatchRequest& m) {
  const auto& q = m.request;
  return Writer(kBatchRequest)
      .U8(static_cast<std::uint8_t>(q.type))
      .U64(q.count)
      .I32(q.frac_bits)
      .I32(q.owner)
      .U64(q.mask_id)
      .U8(static_cast<std::uint8_t>(q.side))
      .U64(q.rows)
      .U64(q.cols)
      .U64(q.other)
      .U64(m.seq)
      .Take();
}

std::vector<std::uint8_t> EncodeBatch(const preproc::Batch& b) {
  return Writer(kBatch).Bytes(b.Serialize()).Take();
}

std::vector<std::uint8_t> Encode(const BitRequest& m) {
  return Writer(kBitRequest).U8(static_cast<std::uint8_t>(m.item)).U64(m.n).Take();
}

std::vector<std::uint8_t> EncodeError(const std::string& message) {
  return Writer(kError).Str(message).Take();
}

Result<Join> DecodeJoin(const std::vector<std::uint8_t>& p) {
  Reader r(p);
  MPCACHE_RETURN_IF_ERROR(Expect(r, kJoin, "Join"));
  Join m;
  MPCACHE_ASSIGN_OR_RETURN(m.session, r.U64());
  MPCACHE_ASSIGN_OR_RETURN(m.party, r.U32());
  MPCACHE_ASSIGN_OR_RETURN(std::uint8_t sec, r.U8());
  if (sec > 1) return ProtocolError("Join: unknown security mode");
  m.security = static_cast<preproc::Security>(sec);
  MPCACHE_ASSIGN_OR_RETURN(m.prompt_len, r.U32());
  MPCACHE_ASSIGN_OR_RETURN(m.steps, r.U32());
  MPCACHE_ASSIGN_OR_RETURN(m.vocab, r.U32());
  MPCACHE_RETURN_IF_ERROR(r.End());
  return m;
}

Result<Setup> DecodeSetup(const std::vector<std::uint8_t>& p) {
  Reader r(p);
  if (!p.empty() && p[0] == kError) return UnexpectedMessage(p, "Setup");
  MPCACHE_RETURN_IF_ERROR(Expect(r, kSetup, "Setup"));
  Setup m;
  MPCACHE_RETURN_IF_ERROR(r.Raw(m.party_seed.data(), 16));
  MPCACHE_ASSIGN_OR_RETURN(m.bit_key_share, r.U64());
  MPCACHE_RETURN_IF_ERROR(r.Raw(m.client_seed_share.data(), 16));
  MPCACHE_RETURN_IF_ERROR(r.Raw(m.client_seed_hash.data(), 32));
  MPCACHE_ASSIGN_OR_RETURN(std::uint32_t n, r.U32());
  if (n > 16) return ProtocolError("Setup: too many client batches");
  for (std::uint32_t i = 0; i < n; ++i) {
    MPCACHE_ASSIGN_OR_RETURN(auto bytes, r.Bytes());
    MPCACHE_ASSIGN_OR_RETURN(preproc::Batch b, preproc::Batch::Parse(bytes));
    m.client_batches.push_back(std::move(b));
  }
  MPCACHE_RETURN_IF_ERROR(r.End());
  return m;
}

Result<BatchRequest> DecodeBatchRequest(const std::vector<std::uint8_t>& p) {
  Reader r(p);
  MPCACHE_RETURN_IF_ERROR(Expect(r, kBatchRequest, "BatchRequest"));
  BatchRequest m;
  auto& q = m.request;
  MPCACHE_ASSIGN_OR_RETURN(std::uint8_t type, r.U8());
  if (type < 1 || type >= preproc::kNumItemTypes) return ProtocolError("unknown item type");
  q.type = static_cast<preproc::ItemType>(type);
  MPCACHE_ASSIGN_OR_RETURN(q.count, r.U64());
  MPCACHE_ASSIGN_OR_RETURN(q.frac_bits, r.I32());
  MPCACHE_ASSIGN_OR_RETURN(q.owner, r.I32());
  MPCACHE_ASSIGN_OR_RETURN(q.mask_id, r.U64());
  MPCACHE_ASSIGN_OR_RETURN(std::uint8_t side, r.U8());
  if (side > 1) return ProtocolError("unknown matrix side");
  q.side = static_cast<mpc::MaskSide>(side);
  MPCACHE_ASSIGN_OR_RETURN(q.rows, r.U64());
  MPCACHE_ASSIGN_OR_RETURN(q.cols, r.U64());
  MPCACHE_ASSIGN_OR_RETURN(q.other, r.U64());
  MPCACHE_ASSIGN_OR_RETURN(m.seq, r.U64());
  MPCACHE_RETURN_IF_ERROR(r.End());
  return m;
}

Result<preproc::Batch> DecodeBatch(const std::vector<std::uint8_t>& p) {
  if (!p.empty() && p[0] == kError) return UnexpectedMessage(p, "Batch");
  Reader r(p);
  MPCACHE_RETURN_IF_ERROR(Expect(r, kBatch, "Batch"));
  MPCACHE_ASSIGN_OR_RETURN(auto bytes, r.Bytes());
  MPCACHE_RETURN_IF_ERROR(r.End());
  return preproc::Batch::Parse(bytes);
}

Result<BitRequest> DecodeBitRequest(const std::vector<std::uint8_t>& p) {
  Reader r(p);
  MPCACHE_RETURN_IF_ERROR(Expect(r, kBitRequest, "BitRequest"));
  BitRequest m;
  MPCACHE_ASSIGN_OR_RETURN(std::uint8_t item, r.U8());
  if (item >= preproc::kNumBitItems) return ProtocolError("unknown binary item");
  m.item = static_cast<preproc::BitItem>(item);
  MPCACHE_ASSIGN_OR_RETURN(m.n, r.U64());
  MPCACHE_RETURN_IF_ERROR(r.End());
  return m;
}

Error UnexpectedMessage(const std::vector<std::uint8_t>& p, const char* wanted) {
  if (!p.empty() && p[0] == kError) {
    Reader r(p);
    (void)r.U8();
    auto msg = r.Str();
    return ProtocolError("the dealer refused: " + (msg.ok() ? *msg : std::string("?")));
  }
  return ProtocolError(std::string("expected a dealer ") + wanted + " message");
}

template <typename P>
std::vector<std::uint8_t> EncodeBits(const mpc::BitTriples<P>& x) {
  Writer w(kBits);
  Put(w, x.a), Put(w, x.b), Put(w, x.c);
  return w.Take();
}
template <typename P>
std::vector<std::uint8_t> EncodeBits(const mpc::EdaBits<P>& x) {
  Writer w(kBits);
  Put(w, x.r);
  for (const auto& b : x.bits) Put(w, b);
  w.U64(x.prods.size());
  for (const auto& b : x.prods) Put(w, b);
  return w.Take();
}
template <typename P>
std::vector<std::uint8_t> EncodeBits(const mpc::DaBits<P>& x) {
  Writer w(kBits);
  Put(w, x.b), Put(w, x.a);
  return w.Take();
}
template <typename P>
std::vector<std::uint8_t> EncodeBits(const mpc::RootTuples<P>& x) {
  Writer w(kBits);
  Put(w, x.u), Put(w, x.v), Put(w, x.w);
  for (const auto& m : x.mono) Put(w, m);
  return w.Take();
}
template <typename P>
std::vector<std::uint8_t> EncodeBits(const mpc::BitShares<P>& x) {
  Writer w(kBits);
  Put(w, x);
  return w.Take();
}

namespace {
template <typename P>
Status DecodeInto(Reader& r, mpc::BitTriples<P>& x) {
  MPCACHE_RETURN_IF_ERROR(Get(r, x.a));
  MPCACHE_RETURN_IF_ERROR(Get(r, x.b));
  return Get(r, x.c);
}
template <typename P>
Status DecodeInto(Reader& r, mpc::EdaBits<P>& x) {
  MPCACHE_RETURN_IF_ERROR(Get(r, x.r));
  for (auto& b : x.bits) MPCACHE_RETURN_IF_ERROR(Get(r, b));
  MPCACHE_ASSIGN_OR_RETURN(std::uint64_t n, r.U64());
  if (n > 4096) return CorruptData("dealer: too many edaBit products");
  x.prods.resize(static_cast<std::size_t>(n));
  for (auto& b : x.prods) MPCACHE_RETURN_IF_ERROR(Get(r, b));
  return Status::Ok();
}
template <typename P>
Status DecodeInto(Reader& r, mpc::DaBits<P>& x) {
  MPCACHE_RETURN_IF_ERROR(Get(r, x.b));
  return Get(r, x.a);
}
template <typename P>
Status DecodeInto(Reader& r, mpc::RootTuples<P>& x) {
  MPCACHE_RETURN_IF_ERROR(Get(r, x.u));
  MPCACHE_RETURN_IF_ERROR(Get(r, x.v));
  MPCACHE_RETURN_IF_ERROR(Get(r, x.w));
  for (auto& m : x.mono) MPCACHE_RETURN_IF_ERROR(Get(r, m));
  return Status::Ok();
}
template <typename P>
Status DecodeInto(Reader& r, mpc::BitShares<P>& x) {
  return Get(r, x);
}
}  // namespace

template <typename T>
Result<T> DecodeBits(const std::vector<std::uint8_t>& p) {
  if (!p.empty() && p[0] == kError) return UnexpectedMessage(p, "Bits");
  Reader r(p);
  MPCACHE_RETURN_IF_ERROR(Expect(r, kBits, "Bits"));
  T x;
  MPCACHE_RETURN_IF_ERROR(DecodeInto(r, x));
  MPCACHE_RETURN_IF_ERROR(r.End());
  return x;
}

#define MPCACHE_DEALER_BITS(P)                                                                    \
  template std::vector<std::uint8_t> EncodeBits<P>(const mpc::BitTriples<P>&);                    \
  template std::vector<std::uint8_t> EncodeBits<P>(const mpc::EdaBits<P>&);                       \
  template std::vector<std::uint8_t> EncodeBits<P>(const mpc::DaBits<P>&);                        \
  template std::vector<std::uint8_t> EncodeBits<P>(const mpc::RootTuples<P>&);                    \
  template std::vector<std::uint8_t> EncodeBits<P>(const mpc::BitShares<P>&);                     \
  template Result<mpc::BitTriples<P>> DecodeBits<mpc::BitTriples<P>>(                             \
      const std::vector<std::uint8_t>&);                                                          \
  template Result<mpc::EdaBits<P>> DecodeBits<mpc::EdaBits<P>>(const std::vector<std::uint8_t>&); \
  template Result<mpc::DaBits<P>> DecodeBits<mpc::DaBits<P>>(const std::vector<std::uint8_t>&);   \
  template Result<mpc::RootTuples<P>> DecodeBits<mpc::RootTuples<P>>(                             \
      const std::vector<std::uint8_t>&);                                                          \
  template Result<mpc::BitShares<P>> DecodeBits<mpc::BitShares<P>>(                               \
      const std::vector<std::uint8_t>&);
MPCACHE_DEALER_BITS(mpc::SemiHonest)
MPCACHE_DEALER_BITS(mpc::Spdz2k)

}  // namespace mpcache::daemon::dealer_proto
