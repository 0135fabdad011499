#include "daemon/party_session.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string_view>

#include "balancer/session_balancer.h"
#include "daemon/kernel_agreement.h"
#include "daemon/remote_preprocessing.h"
#include "daemon/step_heartbeat.h"
#include "daemon/tls_client_link.h"
#include "infer/secure_weights.h"
#include "infer/session.h"
#include "model/mpcache_policy.h"
#include "mpc/compare/binary_context.h"
#include "net/tls/mesh_config.h"
#include "net/tls/tls_context.h"

namespace mpcache::daemon {

std::optional<int> BlamedParty(const std::string& message, int self) {
  std::string_view text(message);
  const std::string_view abort_prefix = "session aborted by ";
  if (const std::size_t at = text.find(abort_prefix);
      at != std::string_view::npos && text.find("blames party ") == std::string_view::npos) {
    // Search the reason only, after "session aborted by party 1 (mpcache-party-1): ".
    const std::size_t colon = text.find(": ", at);
    const std::string_view by = text.substr(at + abort_prefix.size());
    text = colon == std::string_view::npos ? std::string_view() : text.substr(colon + 2);
    // A reason that starts with the sender's own name as its context ("party 1: ...",
    // "party 1 (binary domain): ...", as the MPC layer words its errors) does not blame the
    // sender: a MAC check that fails at the sender fails at every party alike, and says
    // nothing of who lied. ("party 1 is shutting down" still does.)
    const std::string_view sender = by.substr(0, std::min<std::size_t>(by.size(), 7));
    if (sender.size() == 7 && sender.substr(0, 6) == "party " && text.substr(0, 7) == sender) {
      std::string_view rest = text.substr(7);
      if (rest.substr(0, 2) == " (") {
        const std::size_t close = rest.find("): ");
        if (close != std::string_view::npos) rest = rest.substr(close + 1);
      }
      if (rest.substr(0, 2) == ": ") text = rest.substr(2);
    }
  }
  for (const char* key : {"blames party ", "mpcache-party-", "party "}) {
    std::size_t at = 0;
    const std::string_view k(key);
    while ((at = text.find(k, at)) != std::string_view::npos) {
      at += k.size();
      if (at < text.size() && text[at] >= '0' && text[at] <= '2') {
        const int p = text[at] - '0';
        if (p != self) return p;
      }
    }
  }
  return std::nullopt;
}

Status UsedSessions::Use(std::uint64_t session) {
  if (seen_.count(session) != 0) {
    return ProtocolError(fmt::format(
        "session {:016x} was already used by an earlier request to this party (a replayed "
        "request?); refused: a client draws a fresh random session id for every request",
        session));
  }
  seen_.insert(session);
  order_.push_back(session);
  if (order_.size() > capacity_) {
    seen_.erase(order_.front());
    order_.pop_front();
  }
  return Status::Ok();
}

SamplingParams RequestSampling(const client_proto::Generate& req) {
  SamplingParams s;
  s.temperature = req.temperature;
  s.top_p = req.top_p;
  s.top_k = static_cast<int>(std::min<std::uint32_t>(req.top_k, 1u << 30));
  return s;
}

Result<int> RequestPositions(const client_proto::Generate& req, const model::ModelConfig& model,
                             const std::string& model_file) {
  const std::string limit = std::to_string(model.seq_len);
  const std::string ctx =
      "the model's context of " + limit + " positions (seq_len of " + model_file + ")";
  if (static_cast<int>(req.vocab) != model.vocab_size) {
    return InvalidArgument("the client's tokenizer has " + std::to_string(req.vocab) +
                           " tokens, the model (" + model_file + ") " +
                           std::to_string(model.vocab_size) +
                           "; fix: give the client the tokenizer of the parties' model "
                           "(model.tokenizer in its config)");
  }
  if (req.prompt_len < 1) return InvalidArgument("the request has no prompt token (not even BOS)");
  if (req.prompt_len > static_cast<std::uint32_t>(model.seq_len)) {
    return InvalidArgument("the prompt has " + std::to_string(req.prompt_len) +
                           " tokens, more than " + ctx + "; fix: a prompt of at most " + limit +
                           " tokens");
  }
  if (req.steps < 1) return InvalidArgument("max tokens must be at least 1");
  if (Status s = RequestSampling(req).Validate(model.vocab_size); !s.ok()) {
    return InvalidArgument("the request's sampling: " + s.error().message());
  }
  if (req.steps > static_cast<std::uint32_t>(model.seq_len)) {
    return InvalidArgument("the request asks for " + std::to_string(req.steps) +
                           " positions (max tokens, the prompt's " +
                           std::to_string(req.prompt_len) + " included), more than " + ctx +
                           "; fix: --max-tokens " + limit + " or less");
  }
  return std::max(static_cast<int>(req.steps), static_cast<int>(req.prompt_len));
}

namespace {

using Clock = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;

balancer::BalancerSettings SettingsOf(const config::BalancerConfig& b) {
  balancer::BalancerSettings s;
  s.enabled = b.enabled;
  s.reauction_interval_steps = b.reauction_interval_steps;
  s.max_spread = b.max_spread;
  s.static_roles = mpc::Roles{b.static_king == -2 ? mpc::kSplitKing
                              : b.static_king < 0 ? mpc::kNoKing
                                                  : b.static_king,
                              b.static_corrector,
                              {}};
  return s;
}

// An auction's outcome on /metrics and in the log.
void Record(const PartyRuntime& rt, const std::string& tag, const balancer::AuctionReport& r,
            double price) {
  Metrics& m = *rt.metrics;
  m.Add("mpcache_balancer_auctions_total", 1);
  m.Add("mpcache_balancer_excluded_bids_total", static_cast<double>(r.excluded.size()));
  m.Set("mpcache_balancer_load_spread", r.spread);
  m.Set("mpcache_balancer_winners_load_spread", r.winners_spread);
  m.Set("mpcache_balancer_price_seconds_per_byte", price);
  std::string wins, loads, bases;
  for (std::size_t p = 0; p < r.wins.size(); ++p) {
    const std::string l = Label("party", std::to_string(p));
    m.Add("mpcache_balancer_wins_total", static_cast<double>(r.wins[p]), l);
    m.Add("mpcache_balancer_payments_us_total", static_cast<double>(r.paid_us[p]), l);
    m.Set("mpcache_balancer_load_us", static_cast<double>(r.load_us[p]), l);
    m.Set("mpcache_balancer_correction_bytes", static_cast<double>(r.bytes[p]), l);
    const std::int64_t base = p < r.base_us.size() ? r.base_us[p] : 0;
    m.Set("mpcache_balancer_base_load_us", static_cast<double>(base), l);
    wins += fmt::format("{}{}", p ? "/" : "", r.wins[p]);
    loads += fmt::format("{}{}", p ? "/" : "", r.load_us[p]);
    bases += fmt::format("{}{}", p ? "/" : "", base);
  }
  rt.log->info(
      "{} auction #{} after position {}: {} units, wins {}, loads {} us of which online "
      "traffic {} us ({} B opened; spread {:.1f}%, among winners {:.1f}%), price here {:.3g} "
      "s/byte{}",
      tag, r.auction, r.position, r.units, wins, loads, bases, r.online_bytes, 100 * r.spread,
      100 * r.winners_spread, price, r.applied ? "" : " (no counted bid: the table is unchanged)");
  for (const std::string& why : r.excluded) {
    rt.log->warn("{} auction #{}: excluded: {}", tag, r.auction, why);
  }
}

template <typename P>
Result<client_proto::Done> Run(const PartyRuntime& rt, SyncLink& client,
                               const client_proto::Generate& req, int steps,
                               std::unique_ptr<net::TlsMesh>& mesh, bool& reached_mesh) {
  const config::PartyConfig& cfg = *rt.cfg;
  const int self = cfg.party_id;
  const ms recv(cfg.timeouts.recv_ms);
  const auto tag = fmt::format("[session {:016x}]", req.session);

  // 1. The request's preprocessing session at the dealer.
  dealer_proto::Join join;
  join.session = req.session;
  join.party = static_cast<std::uint32_t>(self);
  join.security = P::kMalicious ? preproc::Security::kMalicious : preproc::Security::kSemiHonest;
  join.prompt_len = req.prompt_len;
  join.steps = static_cast<std::uint32_t>(steps);
  join.vocab = req.vocab;
  join.noise = client_proto::SampleNoiseValues(req);
  MPCACHE_ASSIGN_OR_RETURN(
      auto dealer_link, SyncLink::Connect(*rt.io, *rt.tls, net::ToEndpoint(cfg.dealer),
                                          std::string(net::kDealerName), 0, cfg.max_frame_bytes,
                                          ms(cfg.timeouts.connect_ms), "the dealer", rt.cancelled));
  // The party asks for and accepts no matrix item beyond what its model can need.
  std::optional<model::MpcachePolicy> policy;
  if (cfg.mpcache.cache == config::CacheMode::kMpcache) {
    policy = model::PolicyFromConfig(cfg.mpcache);
  }
  MPCACHE_ASSIGN_OR_RETURN(MatrixShapeLimits shapes, ShapeLimitsForModel(rt.model->config, policy));
  MPCACHE_ASSIGN_OR_RETURN(
      auto prep, RemotePreprocessing<P>::Open(std::move(dealer_link), join, recv, shapes));
  rt.log->debug("{} dealer session joined", tag);

  // 2. The client's share of its mask seed.
  client_proto::SeedShare share{req.session, prep->setup().client_seed_share,
                                prep->setup().client_seed_hash,
                                static_cast<std::uint32_t>(cfg.model.frac_bits)};
  MPCACHE_RETURN_IF_ERROR(client.Send(client_proto::Encode(share)));

  // 3. The mesh of this request.
  net::TlsMeshOptions mesh_options = net::MeshOptionsFromConfig(cfg, req.session, rt.log);
  mesh_options.cancelled = rt.cancelled;
  mesh_options.listen_fd = rt.mesh_listen_fd;
  reached_mesh = true;
  MPCACHE_ASSIGN_OR_RETURN(mesh, net::TlsMesh::Create(std::move(mesh_options)));
  if (rt.on_mesh) rt.on_mesh(mesh.get());
  rt.log->debug("{} mesh up", tag);
  // The three parties compute with the same model (for private weights: share files of one
  // split), or nobody does.
  MPCACHE_RETURN_IF_ERROR(infer::AgreeOnModel(*mesh, rt.identity, cfg.model.checkpoint));
  // ... and the same role tables: the same balancer settings.
  const balancer::BalancerSettings bal_settings = SettingsOf(cfg.balancer);
  MPCACHE_RETURN_IF_ERROR(balancer::AgreeOnSettings(*mesh, bal_settings, cfg.file));
  // ... and one protocol: the same kernel prices.
  MPCACHE_RETURN_IF_ERROR(AgreeOnKernelPrices(*mesh, cfg.kernels, cfg.file));

  // 4. The masked prompt: exactly prompt_len x vocab values (nothing bigger is taken in).
  MPCACHE_ASSIGN_OR_RETURN(auto payload, client.Recv(recv, client_proto::PromptLimits(req)));
  MPCACHE_ASSIGN_OR_RETURN(client_proto::Prompt prompt,
                           client_proto::Decode<client_proto::Prompt>(payload));
  if (prompt.session != req.session) {
    return ProtocolError(fmt::format(
        "the client's Prompt is for session {:016x}, not this request's {:016x} (replayed "
        "from another request?)",
        prompt.session, req.session));
  }
  const std::size_t prompt_values = std::size_t{req.prompt_len} * req.vocab;
  if (prompt.d.size() != prompt_values + join.noise) {
    return ProtocolError(
        "the client's Prompt has " + std::to_string(prompt.d.size()) +
        " values; its Generate announced " + std::to_string(req.prompt_len) + " tokens x " +
        std::to_string(req.vocab) + " (the vocabulary)" +
        (join.noise > 0 ? " + " + std::to_string(join.noise) + " noise values" : std::string()));
  }
  std::vector<std::uint64_t> noise(prompt.d.begin() + static_cast<std::ptrdiff_t>(prompt_values),
                                   prompt.d.end());
  prompt.d.resize(prompt_values);

  // 5. Contexts, weights, generation (as infer/in_process.cc, one party).
  MPCACHE_ASSIGN_OR_RETURN(Seed local, OsSeed());
  mpc::ContextOptions copts;
  copts.threads = cfg.model.threads;
  MPCACHE_ASSIGN_OR_RETURN(
      auto ctx, mpc::Context<P>::Create(*mesh, prep->store(), DeriveSeed(local, 1), copts));
  MPCACHE_ASSIGN_OR_RETURN(auto bctx,
                           mpc::BinaryContext<P>::Create(*ctx, prep->bits(), DeriveSeed(local, 2)));
  // The role table's static fill (config balancer.static_*), and its auctions when enabled:
  // this party's price of the corrector role from its own dealer answers.
  balancer::CorrectionMeter own_meter;
  balancer::CorrectionMeter& meter = rt.correction_meter ? *rt.correction_meter : own_meter;
  meter.StartSession();  // this session's dealer counters start from 0
  const auto prices = [&prep, &meter]() {
    const DealerTraffic& t = prep->traffic();
    return balancer::PartyPrices{
        meter.Update({t.corrected_answers, t.header_answers, t.corrected_bytes, t.corrected_seconds,
                      t.header_seconds})};
  };
  MPCACHE_ASSIGN_OR_RETURN(
      auto bal, balancer::SessionBalancer::Create(*mesh, ctx->roles(), bal_settings, prices,
                                                  DeriveSeed(local, 3)));
  infer::SecureWeights<P> weights;
  if (cfg.weights == config::Weights::kPrivate) {
    net::PhaseScope phase(mesh->stats(), "load_weights");
    MPCACHE_ASSIGN_OR_RETURN(weights, infer::PrivateWeights<P>(*ctx, infer::RingModel(*rt.model)));
    MPCACHE_RETURN_IF_ERROR(ctx->CheckMacs());
  } else {
    MPCACHE_ASSIGN_OR_RETURN(weights, infer::PublicWeights<P>(*ctx, rt.model));
  }
  mesh->stats().Reset();
  infer::SessionOptions options;
  options.math.frac_bits = cfg.model.frac_bits;
  cfg.kernels.ApplyTo(options.math);
  options.max_seq_len = steps;
  options.debug = cfg.debug;
  options.mpcache = policy;
  options.sampling = RequestSampling(req);
  MPCACHE_ASSIGN_OR_RETURN(auto session,
                           infer::GenerationSession<P>::Create(*bctx, weights, options));
  TlsClientLink link(client, req.session, static_cast<int>(req.prompt_len),
                     static_cast<int>(req.vocab), std::move(prompt.d), std::move(noise), recv);
  // After each position: the balancer's auction when one is due (the same position at every
  // party: between steps). TEST ONLY: the lying-party test binary deviates from here on
  // (adversary_for_testing is empty in production).
  const int prompt_len = static_cast<int>(req.prompt_len);
  // While the positions run, a heartbeat to the client (daemon/step_heartbeat.h): a step
  // slower than the client's receive timeout (a throttled dealer link) is not silence.
  std::optional<StepHeartbeat> heartbeat;
  heartbeat.emplace(StepHeartbeat::IntervalFor(recv),
                    [&link](int pos) { return link.Progress(pos).ok(); });
  const auto position_hook = [&](int pos, infer::SecureLlama<P>&) -> Status {
    heartbeat->At(pos + 1);
    if (rt.adversary_for_testing) {
      if (mpc::Adversary* a = rt.adversary_for_testing(req.session, pos)) {
        ctx->set_adversary_for_testing(a);
        bctx->set_adversary_for_testing(a);
      }
    }
    if (!bal_settings.enabled) return Status::Ok();
    net::PhaseScope phase(mesh->stats(), "balancer");
    mesh->set_recv_timeout(ms(cfg.balancer.bid_timeout_ms));
    Result<std::optional<balancer::AuctionReport>> auction = bal->AfterPosition(pos, prompt_len);
    mesh->set_recv_timeout(recv);
    if (!auction.ok()) {
      return auction.error().WithContext("balancer auction after position " + std::to_string(pos) +
                                         " (balancer.bid_timeout_ms bounds the wait)");
    }
    if (*auction) Record(rt, tag, **auction, meter.price());
    return Status::Ok();
  };
  Result<infer::SessionReport> generated =
      session->Generate(link, prompt_len, steps, position_hook);
  heartbeat.reset();  // no Progress after the Done or Error that follows
  if (!generated.ok()) return generated.error();
  const infer::SessionReport& report = *generated;

  client_proto::Done done;
  done.session = req.session;
  done.party = static_cast<std::uint32_t>(self);
  done.positions = static_cast<std::uint32_t>(report.positions);
  done.released = static_cast<std::uint32_t>(report.released);
  done.decode_positions = static_cast<std::uint32_t>(report.decode_positions);
  done.seconds = report.seconds;
  done.decode_seconds = report.decode_seconds;
  done.cache = options.mpcache ? 1 : 0;
  done.attended = static_cast<std::uint32_t>(
      options.mpcache ? model::ShapeFor(*options.mpcache, report.cached_rows).attended()
                      : report.cached_rows);
  done.revealed = report.revealed_selections;
  done.epsilon = report.epsilon_spent;
  Metrics& m = *rt.metrics;
  for (const auto& [name, c] : report.decode_phases) {
    done.decode_bytes_sent += c.bytes_sent;
    done.decode_rounds += c.rounds;
    const std::string l = Label("phase", name);
    m.Add("mpcache_phase_bytes_sent_total", static_cast<double>(c.bytes_sent), l);
    m.Add("mpcache_phase_rounds_total", static_cast<double>(c.rounds), l);
    m.Add("mpcache_phase_seconds_total", c.seconds, l);
  }
  m.Add("mpcache_tokens_generated_total", report.released);
  m.Add("mpcache_revealed_selections_total", static_cast<double>(report.revealed_selections));
  m.Add("mpcache_dp_epsilon_spent_total", report.epsilon_spent);
  m.Add("mpcache_decode_seconds_total", report.decode_seconds);
  if (report.decode_seconds > 0) {
    m.Set("mpcache_tokens_per_second", report.decode_positions / report.decode_seconds);
  }
  const DealerTraffic& t = prep->traffic();
  m.Add("mpcache_dealer_requests_total", static_cast<double>(t.requests));
  m.Add("mpcache_dealer_bytes_received_total", static_cast<double>(t.bytes_received));
  m.Add("mpcache_dealer_wait_seconds_total", t.wait_seconds);
  m.Add("mpcache_dealer_requests_prefetched_total", static_cast<double>(t.prefetched));
  m.Add("mpcache_dealer_requests_waited_total", static_cast<double>(t.waited));
  m.Add("mpcache_dealer_corrected_bytes_total", static_cast<double>(t.corrected_bytes));
  m.Add("mpcache_dealer_corrected_seconds_total", t.corrected_seconds);
  for (auto type : {preproc::ItemType::kTriple, preproc::ItemType::kTrunc,
                    preproc::ItemType::kInputMask, preproc::ItemType::kRandom}) {
    m.Set("mpcache_preprocessing_pool_items",
          static_cast<double>(prep->store().available(
              type, type == preproc::ItemType::kTrunc ? cfg.model.frac_bits : 0)),
          Label("type", preproc::ItemTypeName(type)));
  }
  rt.log->info(
      "{} done: {} positions, {} tokens released, {:.3f} s/token, {} dealer requests "
      "({} sent ahead of need, {} waited for; {:.2f} s reading answers)",
      tag, report.positions, report.released,
      report.decode_positions ? report.decode_seconds / report.decode_positions : 0.0, t.requests,
      t.prefetched, t.waited, t.wait_seconds);
  MPCACHE_RETURN_IF_ERROR(mesh->Close());
  return done;
}

}  // namespace

Result<client_proto::Done> RunPartySession(const PartyRuntime& rt, SyncLink& client,
                                           const client_proto::Generate& req, SessionEnd* end) {
  const config::PartyConfig& cfg = *rt.cfg;
  std::unique_ptr<net::TlsMesh> mesh;
  bool reached_mesh = false;
  Result<int> steps = RequestPositions(req, rt.model->config, cfg.model.checkpoint);
  Result<client_proto::Done> r =
      !steps.ok() ? Result<client_proto::Done>(steps.error())
      : cfg.security == config::Security::kMalicious
          ? Run<mpc::Spdz2k>(rt, client, req, *steps, mesh, reached_mesh)
          : Run<mpc::SemiHonest>(rt, client, req, *steps, mesh, reached_mesh);
  if (!r.ok()) {
    end->before_mesh = !reached_mesh;
    // A request that ran out of time is nobody's fault in particular.
    if (r.error().message().find("timeouts.request_ms") == std::string::npos) {
      end->blamed = BlamedParty(r.error().message(), cfg.party_id);
    }
    if (mesh)
      mesh->Abort(r.error().message(),
                  end->blamed ? std::optional<net::PartyId>(*end->blamed) : std::nullopt);
    if (r.error().code() == ErrorCode::kMacCheckFailed) {
      rt.metrics->Add("mpcache_mac_check_failures_total", 1);
    }
  }
  if (rt.on_mesh) rt.on_mesh(nullptr);
  return r;
}

Status TellPeersSetupFailed(const PartyRuntime& rt, std::uint64_t session,
                            const std::string& reason) {
  net::TlsMeshOptions o = net::MeshOptionsFromConfig(*rt.cfg, session, rt.log);
  o.cancelled = rt.cancelled;
  o.listen_fd = rt.mesh_listen_fd;
  return net::TlsMesh::TellSetupFailed(std::move(o), reason, kTellPeersWithin);
}

}  // namespace mpcache::daemon
