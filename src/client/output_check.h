// What the client accepts from the parties (SPEC §3: a corrupt party can make a request
// fail, never make the client accept a wrong token), as pure functions the client's run
// loop calls and tests play against:
//
// TokenReleases: each released token arrives from all three parties as
// Token {session, pos, mask_seq, token + r'}. The client unmasks it only when
//   - every Token is for this request's session and for the next position (one per party),
//   - all three parties sent the same masked value and mask number (when one differs, the
//     two that agree name it; when all three differ, nobody can be named),
//   - the mask number is the one of that position (mask_seq == pos: the prompt rows took
//     masks 0 .. prompt_len - 1, the k-th release takes prompt_len + k), and
//   - token = masked - r' is inside the vocabulary.
// Anything else is an error naming the party at fault when one can be named.
//
// ChooseFailure: which error a failed request ends with, from what each party reported
// (Error messages, with the party each one blames) or a lost connection: the party blamed
// by most reports, then a lost connection, then a MAC-check failure (kMacCheckFailed,
// naming no party: the check cannot tell who lied), then any report. A report is named by
// the link it came on, and its text is shown as printable ASCII (net::PrintableText).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "daemon/client_protocol.h"

namespace mpcache::client {

class TokenReleases {
 public:
  // out_masks[k]: the clear output mask of mask number prompt_len + skip + k, released at
  // position prompt_len + k (skip: client mask batches taken between the prompt's and the
  // outputs', i.e. 1 for the sampling noise).
  TokenReleases(std::uint64_t session, int prompt_len, int vocab,
                std::vector<std::uint64_t> out_masks, int skip = 0);

  // Party `party`'s Token. The token once all three released the same value for the next
  // position; nullopt while some have not; an error for anything the client must refuse.
  Result<std::optional<int>> Add(int party, const daemon::client_proto::Token& token);

  std::uint32_t next_position() const { return next_pos_; }

 private:
  std::uint64_t session_;
  int prompt_len_, vocab_, skip_;
  std::vector<std::uint64_t> out_masks_;
  std::uint32_t next_pos_;
  std::array<std::optional<daemon::client_proto::Token>, 3> slot_;
};

// One party's outcome of a failed request, as the client saw it.
struct PartyOutcome {
  std::string where;  // "party 1 (127.0.0.1:7111)"
  std::optional<daemon::client_proto::ErrorMsg> error;
  std::optional<Error> lost;  // the connection failed or the party broke the protocol
};

Error ChooseFailure(const std::array<PartyOutcome, 3>& parties);

}  // namespace mpcache::client
