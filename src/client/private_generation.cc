#include "client/private_generation.h"

#include <openssl/sha.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "client/output_check.h"
#include "daemon/client_protocol.h"
#include "daemon/sync_link.h"
#include "model/generate.h"
#include "model/tokenizer.h"
#include "model/utf8_text.h"
#include "net/tls/mesh_config.h"
#include "net/tls/tls_context.h"
#include "preproc/in_process_dealer.h"

namespace mpcache::client {

namespace cp = daemon::client_proto;
namespace asio = net::asio;
using std::chrono::milliseconds;

namespace {

// The parties' messages, merged into one queue by one reader thread per party.
class Inbox {
 public:
  struct Event {
    int party = 0;
    Result<std::vector<std::uint8_t>> payload{std::vector<std::uint8_t>{}};
  };
  void Push(Event e) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(e));
    cv_.notify_all();
  }
  std::optional<Event> Pop(milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, timeout, [this] { return !events_.empty(); })) return std::nullopt;
    Event e = std::move(events_.front());
    events_.pop_front();
    return e;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> events_;
};

struct Party {
  std::unique_ptr<daemon::SyncLink> link;
  std::optional<cp::SeedShare> seed;
  std::optional<cp::Done> done;
  PartyOutcome outcome;  // where, and the Error it sent or how its link failed
  bool finished() const { return done || outcome.error || outcome.lost; }
};

class Run {
 public:
  Run(const config::ClientConfig& cfg, const model::Tokenizer& tok, const TextSink& on_text,
      std::shared_ptr<spdlog::logger> log)
      : cfg_(cfg), tok_(tok), on_text_(on_text), log_(std::move(log)) {}

  ~Run() {
    for (auto& p : parties_) {
      if (p.link) p.link->CloseNow();
    }
    for (auto& t : readers_) t.join();
    work_.reset();
    io_.stop();
    if (io_thread_.joinable()) io_thread_.join();
  }

  Result<GenerateResult> Go(std::vector<int> prompt, int max_tokens, const SamplingParams& sampling,
                            std::uint64_t seed);

 private:
  Status Connect(std::uint64_t session);
  Error Failure() const;
  Status OnToken(int party, const cp::Token& t);
  void Emit();
  void Print(const std::string& piece);

  const config::ClientConfig& cfg_;
  const model::Tokenizer& tok_;
  const TextSink& on_text_;
  std::shared_ptr<spdlog::logger> log_;
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::thread io_thread_;
  std::unique_ptr<asio::ssl::context> tls_;
  std::array<Party, 3> parties_;
  std::vector<std::thread> readers_;
  Inbox inbox_;

  std::uint64_t session_ = 0;
  int prompt_len_ = 0;
  SamplingParams sampling_;
  std::uint64_t seed_ = 0;
  std::vector<std::uint64_t> out_masks_;
  cp::Generate generate_;
  std::optional<TokenReleases> releases_;  // once the output masks are known
  GenerateResult result_;
  std::size_t emitted_ = 0;  // tokens whose pieces went through utf8_
  model::Utf8Text utf8_;
};

Status Run::Connect(std::uint64_t session) {
  MPCACHE_ASSIGN_OR_RETURN(tls_, net::MakeTlsContext(net::TlsFilesFromConfig(cfg_.tls)));
  work_.emplace(asio::make_work_guard(io_));
  io_thread_ = std::thread([this] { io_.run(); });
  std::array<std::optional<Result<std::unique_ptr<daemon::SyncLink>>>, 3> links;
  std::vector<std::thread> connectors;
  std::mutex connect_mu;  // guards links: a party's slot is filled once its Connect returned
  std::condition_variable connect_cv;
  for (int p = 0; p < 3; ++p) {
    parties_[static_cast<std::size_t>(p)].outcome.where =
        "party " + std::to_string(p) + " (" + cfg_.parties[static_cast<std::size_t>(p)].ToString() +
        ")";
    connectors.emplace_back([this, p, &links, &connect_mu, &connect_cv] {
      auto link = daemon::SyncLink::Connect(
          io_, *tls_, net::ToEndpoint(cfg_.parties[static_cast<std::size_t>(p)]), net::PartyName(p),
          0, std::size_t{64} << 20, milliseconds(cfg_.timeouts.connect_ms),
          "party " + std::to_string(p));
      std::lock_guard<std::mutex> lock(connect_mu);
      links[static_cast<std::size_t>(p)] = std::move(link);
      connect_cv.notify_all();
    });
  }
  // A party that does not accept within a second is probably not running: say so while the
  // connection is retried (up to timeouts.connect_ms), rather than wait in silence.
  {
    std::unique_lock<std::mutex> lock(connect_mu);
    const auto all_answered = [&] {
      return std::all_of(links.begin(), links.end(), [](const auto& l) { return l.has_value(); });
    };
    if (!connect_cv.wait_for(lock, std::chrono::seconds(1), all_answered)) {
      for (int p = 0; p < 3; ++p) {
        if (links[static_cast<std::size_t>(p)]) continue;
        log_->warn(
            "waiting for party {} at {} (not accepting connections yet); retrying for up "
            "to {} ms (timeouts.connect_ms)",
            p, cfg_.parties[static_cast<std::size_t>(p)].ToString(), cfg_.timeouts.connect_ms);
      }
    }
  }
  for (auto& t : connectors) t.join();
  for (int p = 0; p < 3; ++p) {
    auto& r = *links[static_cast<std::size_t>(p)];
    if (!r.ok()) return r.error();
    parties_[static_cast<std::size_t>(p)].link = std::move(r).value();
  }
  cp::Generate g;
  g.session = session;
  g.prompt_len = static_cast<std::uint32_t>(prompt_len_);
  g.vocab = static_cast<std::uint32_t>(tok_.vocab_size());
  g.steps = static_cast<std::uint32_t>(out_masks_.size());
  g.temperature = sampling_.temperature;
  g.top_p = sampling_.top_p;
  g.top_k = static_cast<std::uint32_t>(sampling_.top_k);
  generate_ = g;
  for (int p = 0; p < 3; ++p) {
    MPCACHE_RETURN_IF_ERROR(parties_[static_cast<std::size_t>(p)].link->Send(cp::Encode(g)));
  }
  // Longer than the parties' own receive timeout, so that when a party stalls its peers
  // report it (and whom they blame) before this client gives up on them.
  const milliseconds recv(cfg_.timeouts.recv_ms + 3000);
  for (int p = 0; p < 3; ++p) {
    daemon::SyncLink* link = parties_[static_cast<std::size_t>(p)].link.get();
    readers_.emplace_back([this, p, link, recv] {
      // A party's messages have fixed sizes (an Error's text is capped): nothing bigger is
      // taken in from a party.
      const daemon::MessageLimits limits = cp::PartyMessageLimits();
      for (;;) {
        auto r = link->Recv(recv, limits);
        const std::uint8_t type = r.ok() ? cp::TypeOf(*r) : 0;
        inbox_.Push({p, std::move(r)});
        if (type == 0 || type == cp::kDone || type == cp::kError) return;
      }
    });
  }
  return Status::Ok();
}

Error Run::Failure() const {
  std::array<PartyOutcome, 3> outcomes;
  for (std::size_t p = 0; p < 3; ++p) outcomes[p] = parties_[p].outcome;
  return ChooseFailure(outcomes);
}

void Run::Emit() {
  // Tokens after BOS, as they arrive, through one Utf8Text (a character split over byte
  // tokens prints once whole); a final BOS is not text.
  for (; emitted_ + 1 < result_.tokens.size(); ++emitted_) {
    const int prev = result_.tokens[emitted_], token = result_.tokens[emitted_ + 1];
    if (token == tok_.bos_id() && emitted_ + 2 == result_.tokens.size()) break;
    Print(utf8_.Add(tok_.Decode(prev, token)));
  }
}

void Run::Print(const std::string& piece) {
  if (piece.empty()) return;
  result_.text += piece;
  if (on_text_) on_text_(piece);
}

Status Run::OnToken(int party, const cp::Token& t) {
  if (!releases_) {
    return ProtocolError("party " + std::to_string(party) +
                         " released a token before the prompt was sent: refusing the output");
  }
  MPCACHE_ASSIGN_OR_RETURN(std::optional<int> token, releases_->Add(party, t));
  if (!token) return Status::Ok();  // waiting for the other parties
  result_.tokens.push_back(*token);
  result_.generated += 1;
  Emit();
  cp::Continue c{session_, t.pos, *token != tok_.bos_id()};
  for (auto& p : parties_) MPCACHE_RETURN_IF_ERROR(p.link->Send(cp::Encode(c)));
  return Status::Ok();
}

Result<GenerateResult> Run::Go(std::vector<int> prompt, int max_tokens,
                               const SamplingParams& sampling, std::uint64_t seed) {
  sampling_ = sampling;
  seed_ = seed;
  const auto t0 = std::chrono::steady_clock::now();
  MPCACHE_ASSIGN_OR_RETURN(Seed rnd, OsSeed());
  std::memcpy(&session_, rnd.data(), 8);
  result_.session_id = session_;
  result_.seed = seed;
  prompt_len_ = static_cast<int>(prompt.size());
  result_.prompt_tokens = prompt_len_;
  result_.tokens = prompt;
  out_masks_.resize(static_cast<std::size_t>(std::max(max_tokens, prompt_len_)));
  if (Status s = Connect(session_); !s.ok()) return s.error();
  log_->info("session {:016x}: connected to the three parties", session_);

  const milliseconds wait(cfg_.timeouts.recv_ms + 5000);
  // timeouts.request_ms bounds the request from its start: a wait in the parties' queue
  // (bounded there by limits.queue_timeout_ms) does not count.
  auto deadline = t0 + milliseconds(cfg_.timeouts.request_ms);
  bool started = false;
  std::optional<std::uint32_t> told_ahead;  // party 0's last Queued
  const int vocab = tok_.vocab_size();
  bool prompt_sent = false;
  std::optional<Error> failure;
  for (;;) {
    int finished = 0;
    for (const Party& p : parties_) finished += p.finished() ? 1 : 0;
    if (finished == 3) break;
    if (std::chrono::steady_clock::now() > deadline) {
      failure = Timeout("the request took longer than timeouts.request_ms");
      break;
    }
    // Once something failed, the others get a short grace period to report (who is to
    // blame), not a whole receive timeout: a stalled party must not hold the answer up.
    auto ev = inbox_.Pop(failure ? std::min(wait, milliseconds(1500)) : wait);
    if (!ev) {
      if (!failure) {
        failure = Timeout("no party answered within " + std::to_string(wait.count()) + " ms");
      }
      break;
    }
    Party& party = parties_[static_cast<std::size_t>(ev->party)];
    if (!ev->payload.ok()) {
      party.outcome.lost = ev->payload.error();
      const std::string& lost = ev->payload.error().message();
      if (!party.seed && (lost.find("closed without TLS close") != std::string::npos ||
                          lost.find("Connection reset by peer") != std::string::npos)) {
        // Closed before its first answer, right after the handshake: a party drops a client
        // whose certificate does not name mpcache-client (TLS 1.3 finishes the client's
        // side of the handshake before the server has judged its certificate). The client
        // sees the close as a truncated stream or, when its request was still unread at
        // the party, as a reset (net/tls/framed_connection.cc, ReadError).
        party.outcome.lost = ev->payload.error().WithContext(
            "party " + std::to_string(ev->party) +
            " closed the connection before its first answer: it probably rejected this "
            "client's certificate; fix: tls.cert and tls.key in " +
            cfg_.file +
            " must be a client certificate naming mpcache-client from the parties' CA "
            "(deploy/gen-certs.sh writes client.crt and client.key)");
      }
      failure = Failure();
      continue;  // let the others report (they abort within their timeout)
    }
    const auto& payload = *ev->payload;
    const auto bad = [&](const Error& e) {
      party.outcome.lost = e;
      failure = Failure();
    };
    switch (cp::TypeOf(payload)) {
      case cp::kSeedShare: {
        auto m = cp::Decode<cp::SeedShare>(payload);
        if (!m.ok()) {
          bad(m.error());
          break;
        }
        party.seed = *m;
        if (!started) {
          started = true;
          deadline = std::chrono::steady_clock::now() + milliseconds(cfg_.timeouts.request_ms);
          if (told_ahead) log_->warn("session {:016x}: its turn came; started", session_);
        }
        if (prompt_sent || !parties_[0].seed || !parties_[1].seed || !parties_[2].seed) break;
        Seed seed{};
        for (const Party& p : parties_) {
          for (std::size_t i = 0; i < 16; ++i) seed[i] ^= p.seed->share[i];
        }
        std::array<std::uint8_t, 32> h{};
        SHA256(seed.data(), seed.size(), h.data());
        for (int p = 0; p < 3; ++p) {
          if (parties_[static_cast<std::size_t>(p)].seed->hash != h) {
            return ProtocolError("party " + std::to_string(p) +
                                 " relayed a mask seed share that does not match the dealer's "
                                 "hash: refusing to continue");
          }
        }
        preproc::Batch pb;
        pb.party = mpc::kClient;
        pb.seq = 0;
        pb.request.type = preproc::ItemType::kInputMask;
        pb.request.owner = mpc::kClient;
        pb.request.count =
            static_cast<std::uint64_t>(prompt_len_) * static_cast<std::uint64_t>(vocab);
        MPCACHE_ASSIGN_OR_RETURN(auto r, preproc::ExpandClientMasks(seed, pb));
        cp::Prompt msg;
        msg.session = session_;
        msg.d.resize(r.size());
        for (std::size_t i = 0; i < r.size(); ++i) msg.d[i] = 0 - r[i];
        for (int pos = 0; pos < prompt_len_; ++pos) {
          msg.d[static_cast<std::size_t>(pos) * static_cast<std::size_t>(vocab) +
                static_cast<std::size_t>(prompt[static_cast<std::size_t>(pos)])] += 1;
        }
        std::uint64_t next_batch = 1;
        if (const std::uint64_t n = cp::SampleNoiseValues(generate_); n > 0) {
          // The sampling noise of every position that may sample, in order, masked with
          // batch 1 (the parties take it right after the prompt's).
          preproc::Batch nb = pb;
          nb.seq = next_batch++;
          nb.request.count = n;
          MPCACHE_ASSIGN_OR_RETURN(auto rn, preproc::ExpandClientMasks(seed, nb));
          const std::uint32_t f = parties_[0].seed->frac_bits;
          for (int p = 1; p < 3; ++p) {
            if (parties_[static_cast<std::size_t>(p)].seed->frac_bits != f) {
              return ProtocolError(
                  "the parties compute at different fixed-point precisions (" + std::to_string(f) +
                  " and " + std::to_string(parties_[static_cast<std::size_t>(p)].seed->frac_bits) +
                  " fractional bits): give them the same model.frac_bits");
            }
          }
          if (f < 8 || f > 30) {
            return ProtocolError("the parties announced " + std::to_string(f) +
                                 " fractional bits: outside 8..30");
          }
          SamplingNoise noise(seed_, sampling_.temperature, static_cast<int>(f));
          // One stream in position order (Next(positions x vocab) is Next(vocab) per position).
          const std::vector<Ring64> x = noise.Next(n);
          msg.d.reserve(msg.d.size() + n);
          for (std::size_t i = 0; i < n; ++i) msg.d.push_back(x[i] - rn[i]);
        }
        preproc::Batch ob = pb;
        ob.seq = next_batch;
        ob.request.count = out_masks_.size();
        MPCACHE_ASSIGN_OR_RETURN(out_masks_, preproc::ExpandClientMasks(seed, ob));
        releases_.emplace(session_, prompt_len_, vocab, out_masks_,
                          static_cast<int>(next_batch) - 1);
        const auto bytes = cp::Encode(msg);
        for (auto& p : parties_) MPCACHE_RETURN_IF_ERROR(p.link->Send(bytes));
        prompt_sent = true;
        Emit();  // the prompt, as llama2.c prints it
        break;
      }
      case cp::kToken: {
        auto m = cp::Decode<cp::Token>(payload);
        if (!m.ok()) {
          bad(m.error());
          break;
        }
        if (Status s = OnToken(ev->party, *m); !s.ok()) return s.error();
        break;
      }
      case cp::kProgress: {
        // A heartbeat (the prompt's positions, and every second of a running step): its
        // arrival restarted this party's receive timer.
        auto m = cp::Decode<cp::Progress>(payload);
        if (!m.ok()) {
          bad(m.error());
        } else if (m->session != session_) {
          bad(ProtocolError("party " + std::to_string(ev->party) +
                            " sent a Progress of another session"));
        }
        break;
      }
      case cp::kQueued: {
        // Waiting for its turn (the running request and those queued before it).
        auto m = cp::Decode<cp::Queued>(payload);
        if (!m.ok()) {
          bad(m.error());
        } else if (m->session != session_) {
          bad(ProtocolError("party " + std::to_string(ev->party) +
                            " sent a Queued of another session"));
        } else if (party.seed) {
          bad(ProtocolError("party " + std::to_string(ev->party) +
                            " said the request is queued after it started"));
        } else if (ev->party == 0 && (!told_ahead || m->ahead < *told_ahead)) {
          // Party 0's queue order is the service order (daemon/session_order.h). Honestly the
          // count only falls (later requests queue behind this one): a rise is not printed, so
          // that a party cannot flood the terminal.
          told_ahead = m->ahead;
          log_->warn("session {:016x}: queued, {} request(s) ahead; waiting for its turn", session_,
                     m->ahead);
        }
        break;
      }
      case cp::kDone: {
        auto m = cp::Decode<cp::Done>(payload);
        if (!m.ok()) {
          bad(m.error());
          break;
        }
        party.done = *m;
        break;
      }
      case cp::kError: {
        auto m = cp::Decode<cp::ErrorMsg>(payload);
        if (!m.ok()) {
          bad(m.error());
          break;
        }
        party.outcome.error = *m;
        failure = Failure();
        break;
      }
      default:
        bad(ProtocolError("unexpected message type " + std::to_string(cp::TypeOf(payload))));
    }
  }
  if (failure) return Failure();
  Print(utf8_.Finish());  // a character cut off by the end of the generation: U+FFFD
  for (int p = 0; p < 3; ++p) {
    const cp::Done& d = *parties_[static_cast<std::size_t>(p)].done;
    PartyReport r;
    r.party = p;
    r.positions = static_cast<int>(d.positions);
    r.released = static_cast<int>(d.released);
    r.decode_positions = static_cast<int>(d.decode_positions);
    r.seconds = d.seconds;
    r.decode_seconds = d.decode_seconds;
    r.decode_bytes_sent = d.decode_bytes_sent;
    r.decode_rounds = d.decode_rounds;
    r.mpcache = d.cache == 1;
    r.attended = static_cast<int>(d.attended);
    r.revealed = d.revealed;
    r.epsilon = d.epsilon;
    result_.parties.push_back(r);
  }
  for (auto& p : parties_) p.link->Close();
  result_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result_;
}

}  // namespace

Result<GenerateResult> GeneratePrivately(const config::ClientConfig& cfg,
                                         const GenerateOptions& options, const TextSink& on_text,
                                         std::shared_ptr<spdlog::logger> log) {
  if (options.max_tokens < 1) return InvalidArgument("--max-tokens must be at least 1");
  if (cfg.parties.size() != 3) return InvalidArgument(cfg.file + ": needs three parties");
  MPCACHE_ASSIGN_OR_RETURN(model::Tokenizer tok, model::Tokenizer::LoadLlama2c(cfg.tokenizer, 0));
  MPCACHE_ASSIGN_OR_RETURN(std::vector<int> prompt, tok.Encode(options.prompt, true, false));
  if (static_cast<int>(prompt.size()) > options.max_tokens) {
    // The parties run the whole prompt (RequestPositions): say what --max-tokens changed.
    log->warn("{}",
              model::PromptOverStepsNote(static_cast<int>(prompt.size()), options.max_tokens));
  }
  MPCACHE_RETURN_IF_ERROR(options.sampling.Validate(tok.vocab_size()));
  std::uint64_t seed = 0;
  if (options.seed) {
    seed = *options.seed;
  } else {
    MPCACHE_ASSIGN_OR_RETURN(seed, RandomSamplingSeed());
  }
  Run run(cfg, tok, on_text, std::move(log));
  return run.Go(std::move(prompt), options.max_tokens, options.sampling, seed);
}

}  // namespace mpcache::client
