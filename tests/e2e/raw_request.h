// A client request driven by hand over the client protocol (daemon/client_protocol.h over
// TLS with the client certificate): what an honest client sends, or anything else. For the
// e2e tests of the client link (malicious_client_test.cc, queue_test.cc).
#pragma once

#include <gtest/gtest.h>
#include <openssl/sha.h>

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/config.h"
#include "daemon/client_protocol.h"
#include "daemon/sync_link.h"
#include "net/tls/mesh_config.h"
#include "net/tls/tls_context.h"
#include "preproc/in_process_dealer.h"

namespace mpcache::e2e {

namespace cp = daemon::client_proto;

constexpr std::uint32_t kVocab = 512;  // stories260K / tok512

// One request driven by hand.
class RawRequest {
 public:
  RawRequest(const config::ClientConfig& cfg, net::asio::io_context& io,
             net::asio::ssl::context& tls, std::uint64_t session)
      : session_(session) {
    for (int p = 0; p < 3; ++p) {
      auto link = daemon::SyncLink::Connect(
          io, tls, net::ToEndpoint(cfg.parties[static_cast<std::size_t>(p)]), net::PartyName(p), 0,
          std::size_t{64} << 20, std::chrono::seconds(10), "party " + std::to_string(p));
      EXPECT_TRUE(link.ok()) << link.error().ToString();
      if (link.ok()) links_[static_cast<std::size_t>(p)] = std::move(link).value();
    }
  }
  bool ok() const { return links_[0] && links_[1] && links_[2]; }
  std::uint64_t session() const { return session_; }

  void SendAll(const std::vector<std::uint8_t>& bytes) {
    for (auto& l : links_) ASSERT_TRUE(l->Send(bytes).ok());
  }
  void Generate(std::uint32_t prompt_len, std::uint32_t steps) {
    SendAll(cp::Encode(cp::Generate{session_, prompt_len, steps, kVocab}));
  }
  // The Generate to one party only (to fix the order in which the parties receive requests).
  void GenerateTo(int p, std::uint32_t prompt_len, std::uint32_t steps) {
    ASSERT_TRUE(links_[static_cast<std::size_t>(p)]
                    ->Send(cp::Encode(cp::Generate{session_, prompt_len, steps, kVocab}))
                    .ok());
  }
  // The most requests party p said were ahead of this one (its Queued messages), if any.
  std::optional<std::uint32_t> most_ahead(int p) const {
    return most_ahead_[static_cast<std::size_t>(p)];
  }
  // The next message but the queue heartbeats (noted in most_ahead).
  Result<std::vector<std::uint8_t>> Recv(
      int p, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    // One deadline for the call: heartbeats do not extend it.
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return Timeout("party " + std::to_string(p) + " sent only Queued");
      auto m = links_[static_cast<std::size_t>(p)]->Recv(left);
      if (!m.ok() || cp::TypeOf(*m) != cp::kQueued) return m;
      auto q = cp::Decode<cp::Queued>(*m);
      if (!q.ok() || q->session != session_) return ProtocolError("a bad Queued message");
      auto& most = most_ahead_[static_cast<std::size_t>(p)];
      most = std::max(most.value_or(0), q->ahead);
    }
  }

  // The three seed shares (checked against their hash) and the client's clear masks.
  bool ReadSeed(std::uint32_t prompt_len, std::uint32_t steps) {
    Seed seed{};
    std::array<std::uint8_t, 32> hash{};
    for (int p = 0; p < 3; ++p) {
      auto m = Recv(p);
      if (!m.ok() || cp::TypeOf(*m) != cp::kSeedShare) return false;
      auto s = cp::Decode<cp::SeedShare>(*m);
      if (!s.ok()) return false;
      for (std::size_t i = 0; i < 16; ++i) seed[i] ^= s->share[i];
      hash = s->hash;
    }
    std::array<std::uint8_t, 32> h{};
    SHA256(seed.data(), seed.size(), h.data());
    if (h != hash) return false;
    preproc::Batch b;
    b.party = mpc::kClient;
    b.request.type = preproc::ItemType::kInputMask;
    b.request.owner = mpc::kClient;
    b.request.count = std::uint64_t{prompt_len} * kVocab;
    auto r = preproc::ExpandClientMasks(seed, b);
    b.seq = 1;
    b.request.count = steps;
    auto o = preproc::ExpandClientMasks(seed, b);
    if (!r.ok() || !o.ok()) return false;
    prompt_masks_ = std::move(r).value();
    out_masks_ = std::move(o).value();
    return true;
  }

  // d = x - r for rows x (one-hot of `tokens`, then edited).
  cp::Prompt MaskedPrompt(const std::vector<int>& tokens,
                          const std::function<void(std::vector<std::uint64_t>&)>& edit = {}) {
    std::vector<std::uint64_t> x(tokens.size() * kVocab, 0);
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      x[i * kVocab + static_cast<std::size_t>(tokens[i])] = 1;
    }
    if (edit) edit(x);
    cp::Prompt m{session_, std::vector<std::uint64_t>(x.size())};
    for (std::size_t i = 0; i < x.size(); ++i) m.d[i] = x[i] - prompt_masks_[i];
    return m;
  }

  // The next message but this request's step heartbeats (Progress: a running step's, sent
  // until the party's Done or Error).
  Result<std::vector<std::uint8_t>> RecvPastProgress(int p) {
    for (;;) {
      auto m = Recv(p);
      if (!m.ok() || cp::TypeOf(*m) != cp::kProgress) return m;
      auto g = cp::Decode<cp::Progress>(*m);
      if (!g.ok() || g->session != session_) return ProtocolError("a bad Progress message");
    }
  }

  // Every party's next message is a Token for `pos`: the unmasked token (-1 if not).
  int ReadTokens(std::uint32_t pos) {
    std::optional<std::uint64_t> masked;
    for (int p = 0; p < 3; ++p) {
      auto m = Recv(p);
      // Heartbeats come first (the prompt's positions, and a running step's every second:
      // daemon/step_heartbeat.h), each for this request and never ahead of the token.
      while (m.ok() && cp::TypeOf(*m) == cp::kProgress) {
        auto g = cp::Decode<cp::Progress>(*m);
        if (!g.ok() || g->session != session_ || g->pos > pos) return -1;
        m = Recv(p);
      }
      if (!m.ok() || cp::TypeOf(*m) != cp::kToken) return -1;
      auto t = cp::Decode<cp::Token>(*m);
      if (!t.ok() || t->pos != pos || (masked && *masked != t->masked)) return -1;
      masked = t->masked;
    }
    return static_cast<int>(*masked - out_masks_.at(pos - prompt_masks_.size() / kVocab));
  }

  // Every party's Error (after any other messages); "" for a party that sent none.
  std::array<std::string, 3> Errors() {
    std::array<std::string, 3> out;
    for (int p = 0; p < 3; ++p) {
      for (;;) {
        auto m = Recv(p);
        if (!m.ok()) break;
        if (cp::TypeOf(*m) == cp::kError) {
          auto e = cp::Decode<cp::ErrorMsg>(*m);
          if (e.ok()) out[static_cast<std::size_t>(p)] = e->message;
          break;
        }
      }
    }
    return out;
  }

 private:
  std::uint64_t session_;
  std::array<std::unique_ptr<daemon::SyncLink>, 3> links_;
  std::vector<std::uint64_t> prompt_masks_, out_masks_;
  std::array<std::optional<std::uint32_t>, 3> most_ahead_;
};

// What a test needs to drive requests by hand: the client config's identity and an io thread.
class RawClient {
 public:
  RawClient() = default;
  ~RawClient() {
    work_.reset();
    io_.stop();
    if (io_thread_.joinable()) io_thread_.join();
  }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  // Loads `client_yaml` (its parties and certificate) and starts the io thread.
  ::testing::AssertionResult Open(const std::string& client_yaml) {
    auto cfg = config::LoadClientConfig(client_yaml);
    if (!cfg.ok()) return ::testing::AssertionFailure() << cfg.error().ToString();
    cfg_ = *cfg;
    auto tls = net::MakeTlsContext(net::TlsFilesFromConfig(cfg_.tls));
    if (!tls.ok()) return ::testing::AssertionFailure() << tls.error().ToString();
    tls_ = std::move(tls).value();
    work_.emplace(net::asio::make_work_guard(io_));
    io_thread_ = std::thread([this] { io_.run(); });
    return ::testing::AssertionSuccess();
  }
  // A request connected to the three parties (nothing sent yet).
  std::unique_ptr<RawRequest> Request(std::uint64_t session) {
    return std::make_unique<RawRequest>(cfg_, io_, *tls_, session);
  }

 private:
  config::ClientConfig cfg_;
  net::asio::io_context io_;
  std::optional<net::asio::executor_work_guard<net::asio::io_context::executor_type>> work_;
  std::thread io_thread_;
  std::unique_ptr<net::asio::ssl::context> tls_;
};

}  // namespace mpcache::e2e
