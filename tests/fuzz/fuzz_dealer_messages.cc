// Dealer protocol messages (daemon/dealer_protocol.h) as the dealer or a party receives
// them: one payload, dispatched on its type byte. Property: whatever decodes re-encodes to
// the same bytes.
#include <cstdint>
#include <vector>

#include "daemon/dealer_protocol.h"
#include "fuzz_util.h"

namespace {

namespace dp = mpcache::daemon::dealer_proto;

void Same(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b,
          const char* what) {
  if (a != b) mpcache::fuzz::Violated(what);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::uint8_t> p(data, data + size);
  if (p.empty()) return 0;
  switch (p[0]) {
    case dp::kHello:
      if (auto m = dp::DecodeHello(p); m.ok()) Same(dp::Encode(*m), p, "Hello re-encodes alike");
      break;
    case dp::kHelloReply:
      if (auto m = dp::DecodeHelloReply(p); m.ok()) {
        Same(dp::Encode(*m), p, "HelloReply re-encodes alike");
      }
      break;
    case dp::kJoin:
      if (auto m = dp::DecodeJoin(p); m.ok()) {
        Same(dp::Encode(*m), p, "Join re-encodes alike");
        (void)dp::ClientMaskBatches(*m);
      }
      break;
    case dp::kSetup:
      if (auto m = dp::DecodeSetup(p); m.ok()) Same(dp::Encode(*m), p, "Setup re-encodes alike");
      break;
    case dp::kBatchRequest:
      if (auto m = dp::DecodeBatchRequest(p); m.ok()) {
        Same(dp::Encode(*m), p, "BatchRequest re-encodes alike");
      }
      break;
    case dp::kBatch:
      if (auto m = dp::DecodeBatch(p); m.ok())
        Same(dp::EncodeBatch(*m), p, "Batch re-encodes alike");
      break;
    case dp::kBitRequest:
      if (auto m = dp::DecodeBitRequest(p); m.ok()) {
        Same(dp::Encode(*m), p, "BitRequest re-encodes alike");
      }
      break;
    case dp::kBits:
      if (auto m = dp::DecodeBitBatch(p); m.ok()) {
        Same(dp::EncodeBitBatch(*m), p, "BitBatch re-encodes alike");
      }
      break;
    default:
      (void)dp::UnexpectedMessage(p, "Batch");
      break;
  }
  return 0;
}
