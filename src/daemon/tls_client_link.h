// infer::ClientLink over the client's TLS connection (daemon/client_protocol.h): prompt
// inputs are the masked one-hots (and sampling noise) the client sent up front (Prompt message);
// each released token goes to the client as token + r', and the client answers whether to go on.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "daemon/sync_link.h"
#include "infer/client_link.h"

namespace mpcache::daemon {

class TlsClientLink final : public infer::ClientLink {
 public:
  TlsClientLink(SyncLink& link, std::uint64_t session, int prompt_len, int vocab,
                std::vector<std::uint64_t> masked_prompt, std::vector<std::uint64_t> masked_noise,
                std::chrono::milliseconds timeout)
      : link_(link),
        session_(session),
        prompt_len_(prompt_len),
        vocab_(vocab),
        d_(std::move(masked_prompt)),
        noise_(std::move(masked_noise)),
        timeout_(timeout) {}

  Result<std::vector<std::uint64_t>> PromptInput(int pos, std::uint64_t mask_seq,
                                                 std::size_t n) override;
  // The noise the client sent after its prompt (one batch, mask number prompt_len).
  Result<std::vector<std::uint64_t>> NoiseInput(std::uint64_t mask_seq, std::size_t n) override;
  Result<bool> TokenOutput(int pos, std::uint64_t mask_seq, std::uint64_t masked) override;
  Status Progress(int pos) override;

 private:
  SyncLink& link_;
  std::uint64_t session_;
  int prompt_len_, vocab_;
  std::vector<std::uint64_t> d_;
  std::vector<std::uint64_t> noise_;
  std::chrono::milliseconds timeout_;
};

}  // namespace mpcache::daemon
