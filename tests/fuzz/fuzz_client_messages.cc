// Client protocol messages (daemon/client_protocol.h), as a party or the client receives
// them: one payload. Property: whatever decodes re-encodes to the same bytes (one encoding
// per message), and nothing else is accepted.
#include <cstdint>
#include <vector>

#include "daemon/client_protocol.h"
#include "fuzz_util.h"

namespace {

using namespace mpcache::daemon::client_proto;

template <typename M>
void RoundTrip(const std::vector<std::uint8_t>& payload) {
  auto m = Decode<M>(payload);
  if (!m.ok()) return;
  if (Encode(*m) != payload) mpcache::fuzz::Violated("a decoded client message re-encodes alike");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::uint8_t> payload(data, data + size);
  switch (TypeOf(payload)) {
    case kGenerate:
      RoundTrip<Generate>(payload);
      break;
    case kSeedShare:
      RoundTrip<SeedShare>(payload);
      break;
    case kPrompt:
      RoundTrip<Prompt>(payload);
      break;
    case kToken:
      RoundTrip<Token>(payload);
      break;
    case kContinue:
      RoundTrip<Continue>(payload);
      break;
    case kDone:
      RoundTrip<Done>(payload);
      break;
    case kError:
      RoundTrip<ErrorMsg>(payload);
      break;
    case kProgress:
      RoundTrip<Progress>(payload);
      break;
    case kQueued:
      RoundTrip<Queued>(payload);
      break;
    default:
      // Every decoder refuses a payload of another type.
      if (Decode<Generate>(payload).ok() || Decode<ErrorMsg>(payload).ok()) {
        mpcache::fuzz::Violated("a payload of an unknown type is refused");
      }
      break;
  }
  (void)TypeName(TypeOf(payload));
  return 0;
}
