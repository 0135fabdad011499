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

}  // namespace

std::vector<std::uint8_t> Encode(const Join& m) {
  Writer w(kJoin);
  w.U64(m.session)
      .U32(m.party)
      .U8(static_cast<std::uint8_t>(m.security))
      .U32(m.prompt_len)
      .U32(m.steps)
      .U32(m.vocab)
      .U64(m.noise);
  return w.Take();
}

std::vector<std::uint8_t> Encode(const Hello& m) {
  return Writer(kHello).U32(m.party).U8(static_cast<std::uint8_t>(m.security)).Take();
}

std::vector<std::uint8_t> Encode(const HelloReply& m) {
  return Writer(kHelloReply).U8(static_cast<std::uint8_t>(m.security)).Take();
}

Result<Hello> DecodeHello(const std::vector<std::uint8_t>& p) {
  Reader r(p);
  MPCACHE_RETURN_IF_ERROR(Expect(r, kHello, "Hello"));
  Hello m;
  MPCACHE_ASSIGN_OR_RETURN(m.party, r.U32());
  MPCACHE_ASSIGN_OR_RETURN(std::uint8_t sec, r.U8());
  if (sec > 1) return ProtocolError("Hello: unknown security mode");
  m.security = static_cast<preproc::Security>(sec);
  MPCACHE_RETURN_IF_ERROR(r.End());
  return m;
}

Result<HelloReply> DecodeHelloReply(const std::vector<std::uint8_t>& p) {
  if (!p.empty() && p[0] == kError) return UnexpectedMessage(p, "HelloReply");
  Reader r(p);
  MPCACHE_RETURN_IF_ERROR(Expect(r, kHelloReply, "HelloReply"));
  HelloReply m;
  MPCACHE_ASSIGN_OR_RETURN(std::uint8_t sec, r.U8());
  if (sec > 1) return ProtocolError("HelloReply: unknown security mode");
  m.security = static_cast<preproc::Security>(sec);
  MPCACHE_RETURN_IF_ERROR(r.End());
  return m;
}

std::vector<std::uint64_t> ClientMaskBatches(const Join& join) {
  std::vector<std::uint64_t> sizes{std::uint64_t{join.prompt_len} * join.vocab};
  if (join.noise > 0) sizes.push_back(join.noise);
  sizes.push_back(join.steps);
  return sizes;
}

std::vector<std::uint8_t> Encode(const Setup& m) {
  Writer w(kSetup);
  w.Raw(m.party_seed.data(), 16).U64(m.bit_key_share).Raw(m.bit_seed.data(), 16);
  w.Raw(m.client_seed_share.data(), 16).Raw(m.client_seed_hash.data(), 32);
  w.U32(static_cast<std::uint32_t>(m.client_batches.size()));
  for (const auto& b : m.client_batches) w.Bytes(b.Serialize());
  w.U64(m.chunk_items).U64(m.max_request_items);
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
      .Vec(q.masks)
      .Vec(q.lens)
      .I32(q.corrector)
      .Take();
}

std::vector<std::uint8_t> EncodeBatch(const preproc::Batch& b) {
  return Writer(kBatch).Bytes(b.Serialize()).Take();
}

std::vector<std::uint8_t> Encode(const BitRequest& m) {
  return Writer(kBitRequest).U8(static_cast<std::uint8_t>(m.item)).U64(m.n).I32(m.corrector).Take();
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
  MPCACHE_ASSIGN_OR_RETURN(m.noise, r.U64());
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
  MPCACHE_RETURN_IF_ERROR(r.Raw(m.bit_seed.data(), 16));
  MPCACHE_RETURN_IF_ERROR(r.Raw(m.client_seed_share.data(), 16));
  MPCACHE_RETURN_IF_ERROR(r.Raw(m.client_seed_hash.data(), 32));
  MPCACHE_ASSIGN_OR_RETURN(std::uint32_t n, r.U32());
  if (n > 16) return ProtocolError("Setup: too many client batches");
  for (std::uint32_t i = 0; i < n; ++i) {
    MPCACHE_ASSIGN_OR_RETURN(auto bytes, r.Bytes());
    MPCACHE_ASSIGN_OR_RETURN(preproc::Batch b, preproc::Batch::Parse(bytes));
    m.client_batches.push_back(std::move(b));
  }
  MPCACHE_ASSIGN_OR_RETURN(m.chunk_items, r.U64());
  MPCACHE_ASSIGN_OR_RETURN(m.max_request_items, r.U64());
  if (m.chunk_items < 64 || m.max_request_items < m.chunk_items) {
    return ProtocolError("Setup: chunk of " + std::to_string(m.chunk_items) +
                         " items with requests of at most " + std::to_string(m.max_request_items));
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
  MPCACHE_ASSIGN_OR_RETURN(q.masks, r.Vec<std::uint64_t>());
  MPCACHE_ASSIGN_OR_RETURN(q.lens, r.Vec<std::uint64_t>());
  if (q.masks.size() > preproc::kMaxAttentionBlocks || q.lens.size() != q.masks.size()) {
    return ProtocolError("BatchRequest lists " + std::to_string(q.masks.size()) +
                         " attention blocks and " + std::to_string(q.lens.size()) +
                         " lengths (at most " + std::to_string(preproc::kMaxAttentionBlocks) +
                         ", one length per block)");
  }
  MPCACHE_ASSIGN_OR_RETURN(q.corrector, r.I32());
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
  MPCACHE_ASSIGN_OR_RETURN(m.corrector, r.I32());
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

std::vector<std::uint8_t> EncodeBitBatch(const preproc::BitBatch& b) {
  // Writer(kBits).Bytes(b.Serialize()), with the batch written once, in place.
  std::vector<std::uint8_t> out = Writer(kBits).U64(b.WireSize()).Take();
  out.reserve(out.size() + b.WireSize());
  b.AppendTo(out);
  return out;
}

Result<preproc::BitBatch> DecodeBitBatch(const std::vector<std::uint8_t>& p) {
  if (!p.empty() && p[0] == kError) return UnexpectedMessage(p, "Bits");
  Reader r(p);
  MPCACHE_RETURN_IF_ERROR(Expect(r, kBits, "Bits"));
  MPCACHE_ASSIGN_OR_RETURN(auto bytes, r.BytesView());
  MPCACHE_RETURN_IF_ERROR(r.End());
  return preproc::BitBatch::Parse(bytes);
}

}  // namespace mpcache::daemon::dealer_proto
