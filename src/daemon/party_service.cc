#include "daemon/party_service.h"

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

#include "daemon/http_server.h"
#include "daemon/party_session.h"
#include "daemon/request_queue.h"
#include "daemon/session_order.h"
#include "daemon/start_checks.h"
#include "infer/share_file.h"
#include "model/checkpoint.h"
#include "model/mpcache_policy.h"
#include "net/tls/mesh_config.h"
#include "net/tls/tls_context.h"
#include "net/tls/tls_mesh.h"

namespace mpcache::daemon {

namespace asio = net::asio;

struct PartyService::Impl {
  config::PartyConfig cfg;
  std::shared_ptr<spdlog::logger> log;
  std::shared_ptr<const infer::RingModel> model;
  infer::ModelIdentity identity;  // compared with the peers' at every session
  Metrics metrics;
  std::mutex used_mu;                          // (the intake threads use it)
  UsedSessions used_sessions;                  // replayed session ids are refused
  AdversaryHook adversary_for_testing;         // TEST ONLY: empty in production
  balancer::CorrectionMeter correction_meter;  // the balancer's price, across sessions

  asio::io_context io;
  std::unique_ptr<asio::ssl::context> tls;
  std::unique_ptr<net::TlsListener> listener;
  std::unique_ptr<net::TlsListener> mesh_address;  // held from start to stop (start_checks.h)
  std::unique_ptr<HttpServer> http;

  std::mutex mu;
  std::condition_variable cv;
  std::unique_ptr<RequestQueue> queue;  // requests waiting for their turn
  bool stopping = false;
  bool busy = false;
  net::TlsMesh* active_mesh = nullptr;
  SyncLink* active_client = nullptr;

  Status LoadModel();
  void DescribeMetrics();
  HttpReply Http(std::string_view target);
  // "party N is shutting down" once Shutdown ran (polled by mesh and dealer-link setups).
  std::optional<std::string> ShutdownReason();
  std::optional<QueuedRequest> AgreeOnNext();
  void Serve(QueuedRequest queued);
  void Shutdown();
};

Status PartyService::Impl::LoadModel() {
  if (cfg.weights == config::Weights::kPrivate) {
    MPCACHE_ASSIGN_OR_RETURN(infer::ShareFile f, infer::ReadShareFile(cfg.model.checkpoint));
    if (f.party != cfg.party_id) {
      return InvalidArgument(cfg.file + ": field 'model.checkpoint': " + cfg.model.checkpoint +
                             " is the share of party " + std::to_string(f.party) +
                             "; fix: point it at party" + std::to_string(cfg.party_id) + ".mpcw");
    }
    if (f.share.frac_bits != cfg.model.frac_bits) {
      return InvalidArgument(cfg.file +
                             ": field 'model.frac_bits': " + std::to_string(cfg.model.frac_bits) +
                             ", but " + cfg.model.checkpoint + " is encoded with " +
                             std::to_string(f.share.frac_bits) + " fractional bits; fix: write " +
                             "frac_bits: " + std::to_string(f.share.frac_bits));
    }
    identity = f.identity;
    model = std::make_shared<const infer::RingModel>(std::move(f.share));
    log->info("model: {} ({})", cfg.model.checkpoint, identity.ToString());
    return Status::Ok();
  }
  // A GGUF of Q8_0/F16 matrices stays compact (one read-only map shared with the other
  // processes through the page cache); other checkpoints are encoded wide.
  int last_percent = -1;
  MPCACHE_ASSIGN_OR_RETURN(
      model, infer::LoadRingModel(cfg.model.checkpoint, cfg.model.frac_bits,
                                  [&](std::uint64_t done, std::uint64_t total) {
                                    const int pct = static_cast<int>(100.0 * done / total);
                                    if (pct / 25 != last_percent / 25) {
                                      log->info("model: checked {}% of {} ({} MB)", pct,
                                                cfg.model.checkpoint, total >> 20);
                                      last_percent = pct;
                                    }
                                  }));
  identity.model_hash = infer::ModelHash(*model);
  log->info("model: {} ({})", cfg.model.checkpoint, identity.ToString());
  return Status::Ok();
}

void PartyService::Impl::DescribeMetrics() {
  auto& m = metrics;
  m.Describe("mpcache_requests_total", "counter", "Client requests received");
  m.Describe("mpcache_requests_failed_total", "counter", "Client requests that failed");
  m.Describe("mpcache_active_sessions", "gauge", "Requests being served now");
  m.Describe("mpcache_tokens_generated_total", "counter", "Tokens released to clients");
  m.Describe("mpcache_tokens_per_second", "gauge", "Decoding speed of the last request");
  m.Describe("mpcache_decode_seconds_total", "counter", "Wall time of decode positions");
  m.Describe("mpcache_phase_bytes_sent_total", "counter", "Bytes sent to peers per phase (decode)");
  m.Describe("mpcache_phase_rounds_total", "counter", "Communication rounds per phase (decode)");
  m.Describe("mpcache_phase_seconds_total", "counter", "Wall time per phase (decode)");
  m.Describe("mpcache_mac_check_failures_total", "counter", "Requests aborted by a MAC check");
  m.Describe("mpcache_dealer_requests_total", "counter", "Preprocessing requests to the dealer");
  m.Describe("mpcache_dealer_bytes_received_total", "counter", "Preprocessing bytes received");
  m.Describe("mpcache_dealer_wait_seconds_total", "counter",
             "Time spent reading the dealer's answers");
  m.Describe("mpcache_dealer_requests_prefetched_total", "counter",
             "Preprocessing requests sent ahead of need");
  m.Describe("mpcache_dealer_requests_waited_total", "counter",
             "Preprocessing requests the online phase had to wait for");
  m.Describe("mpcache_preprocessing_pool_items", "gauge",
             "Preprocessing items left in the pool after the last request");
  m.Set("mpcache_active_sessions", 0);
  m.Add("mpcache_requests_total", 0);
  m.Add("mpcache_requests_failed_total", 0);
  m.Add("mpcache_mac_check_failures_total", 0);
  m.Add("mpcache_tokens_generated_total", 0);
  m.Describe("mpcache_dealer_corrected_bytes_total", "counter",
             "Dealer answers carrying corrections to this party (its corrector role), bytes");
  m.Describe("mpcache_dealer_corrected_seconds_total", "counter",
             "Time reading and expanding the answers with corrections");
  m.Describe("mpcache_balancer_auctions_total", "counter", "Balancer auctions run");
  m.Describe("mpcache_balancer_excluded_bids_total", "counter",
             "Parties' bids that did not count (abstained, reveal not matching its commitment)");
  m.Describe("mpcache_balancer_wins_total", "counter", "Units of work won per party");
  m.Describe("mpcache_balancer_payments_us_total", "counter",
             "Second prices paid to each party for the units it won, microseconds");
  m.Describe("mpcache_balancer_load_us", "gauge",
             "Each party's load in the last auction (its online traffic's time plus its own "
             "bids for the units it won), us");
  m.Describe("mpcache_balancer_base_load_us", "gauge",
             "Each party's base load in the last auction: its time for the interval's online "
             "traffic at the price per byte its bids state, us");
  m.Describe("mpcache_balancer_winners_load_spread", "gauge",
             "(max - min) / max of the loads of the parties that won work in the last auction");
  m.Describe("mpcache_balancer_correction_bytes", "gauge",
             "Correction bytes of the units each party won in the last auction (per interval)");
  m.Describe("mpcache_balancer_load_spread", "gauge",
             "(max - min) / max of the parties' loads in the last auction");
  m.Describe("mpcache_balancer_price_seconds_per_byte", "gauge",
             "This party's measured price of a byte of dealer corrections");
  m.Describe("mpcache_revealed_selections_total", "counter",
             "MPCache selections revealed to the parties (reveal: plain | dp)");
  m.Describe("mpcache_dp_epsilon_spent_total", "counter",
             "Differential-privacy budget spent by revealed selections (reveal: dp)");
  m.Add("mpcache_revealed_selections_total", 0);
  m.Add("mpcache_dp_epsilon_spent_total", 0);
}

HttpReply PartyService::Impl::Http(std::string_view target) {
  if (target == "/metrics")
    return {200, "text/plain; version=0.0.4; charset=utf-8", metrics.Render()};
  if (target == "/healthz" || target == "/health") {
    std::lock_guard<std::mutex> lock(mu);
    if (stopping) return {503, "text/plain", "stopping\n"};
    return {200, "text/plain", busy ? "ok busy\n" : "ok idle\n"};
  }
  return {404, "text/plain", "not found: try /metrics or /healthz\n"};
}

std::optional<std::string> PartyService::Impl::ShutdownReason() {
  std::lock_guard<std::mutex> lock(mu);
  if (!stopping) return std::nullopt;
  return "party " + std::to_string(cfg.party_id) + " is shutting down";
}

// One lobby round with the peers (daemon/session_order.h): the request all three serve
// next, taken out of the queue, or none yet.
std::optional<QueuedRequest> PartyService::Impl::AgreeOnNext() {
  const Offer mine = queue->MakeOffer();
  // Quiet (no logger): a round that finds a peer busy or not in the lobby is retried, not news.
  net::TlsMeshOptions o = net::MeshOptionsFromConfig(cfg, kLobbySession, nullptr);
  o.connect_timeout = std::min(o.connect_timeout, std::chrono::milliseconds(1000));
  o.recv_timeout = std::chrono::milliseconds(cfg.timeouts.handshake_ms);
  o.listen_fd = mesh_address->native_handle();
  o.cancelled = [this] { return ShutdownReason(); };
  auto mesh = net::TlsMesh::Create(std::move(o));
  if (!mesh.ok()) {
    log->debug("lobby: {}", mesh.error().message());
    return std::nullopt;
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    active_mesh = mesh->get();
  }
  Result<LobbyResult> round = RunLobbyRound(**mesh, mine);
  (void)(*mesh)->Close();
  {
    std::lock_guard<std::mutex> lock(mu);
    active_mesh = nullptr;
  }
  if (!round.ok()) {
    if (round.error().code() == ErrorCode::kProtocol)
      log->warn("lobby: {}", round.error().message());
    return std::nullopt;
  }
  if (cfg.party_id == 0) {
    // What a follower refused is dropped here too: its client is told at once.
    for (std::size_t f = 0; f < round->offers.size(); ++f) {
      queue->Drop(round->offers[f].gone, "party " + std::to_string(f + 1) +
                                             " refused this request (its client had its "
                                             "answer); dropped at party 0 too");
    }
  } else {
    queue->Drop(round->pick.drop, "a peer refused or ended this request; dropped at party " +
                                      std::to_string(cfg.party_id) + " too");
  }
  if (round->pick.session == 0) return std::nullopt;
  std::optional<QueuedRequest> taken = queue->Take(round->pick.session);
  if (!taken) {
    log->warn(
        "[session {:016x}] picked by the lobby but no longer queued here (it timed out "
        "meanwhile); the peers will time out setting it up",
        round->pick.session);
  }
  return taken;
}

void PartyService::Impl::Serve(QueuedRequest queued) {
  const int self = cfg.party_id;
  SyncLink& client = *queued.client;
  const std::string remote = queued.remote;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (stopping) return;
    active_client = &client;
  }
  metrics.Add("mpcache_requests_total", 1);
  metrics.Add("mpcache_active_sessions", 1);
  // The Generate was read and checked (replays, limits) when the request was queued.
  const client_proto::Generate& req = queued.req;
  SessionEnd end;
  PartyRuntime rt;
  rt.cfg = &cfg;
  rt.io = &io;
  rt.tls = tls.get();
  rt.model = model;
  rt.identity = identity;
  rt.log = log;
  rt.metrics = &metrics;
  rt.adversary_for_testing = adversary_for_testing;
  rt.correction_meter = &correction_meter;
  rt.mesh_listen_fd = mesh_address->native_handle();
  rt.cancelled = [this] { return ShutdownReason(); };
  rt.on_mesh = [this](net::TlsMesh* m) {
    std::lock_guard<std::mutex> lock(mu);
    active_mesh = m;
    if (m && stopping) m->Abort("party " + std::to_string(cfg.party_id) + " is shutting down");
  };
  log->info("[session {:016x}] request from {}: {} prompt tokens, {} steps", req.session, remote,
            req.prompt_len, req.steps);
  // Watchdog: a request that outlives timeouts.request_ms is aborted (mesh abort: the
  // peers stop too; the client is told below).
  std::mutex wd_mu;
  std::condition_variable wd_cv;
  bool finished = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(wd_mu);
    if (wd_cv.wait_for(lock, std::chrono::milliseconds(cfg.timeouts.request_ms),
                       [&] { return finished; })) {
      return;
    }
    std::lock_guard<std::mutex> guard(mu);
    if (active_mesh) {
      active_mesh->Abort("the request exceeded timeouts.request_ms (" +
                         std::to_string(cfg.timeouts.request_ms) + " ms) at party " +
                         std::to_string(self));
    }
  });
  Result<client_proto::Done> done = RunPartySession(rt, client, req, &end);
  {
    std::lock_guard<std::mutex> lock(wd_mu);
    finished = true;
  }
  wd_cv.notify_all();
  watchdog.join();
  const std::uint64_t session = req.session;
  if (done.ok()) {
    (void)client.Send(client_proto::Encode(*done));
  } else {
    metrics.Add("mpcache_requests_failed_total", 1);
    client_proto::ErrorMsg e;
    e.session = session;
    e.reporter = static_cast<std::uint32_t>(self);
    e.blamed = end.blamed ? *end.blamed : -1;
    e.message = done.error().ToString();
    if (e.message.size() > client_proto::kMaxErrorText) {  // the client takes no more
      e.message.resize(client_proto::kMaxErrorText - 3);
      e.message += "...";
    }
    log->error("[session {:016x}] failed{}: {}", session,
               end.blamed ? " (blames party " + std::to_string(*end.blamed) + ")" : "", e.message);
    (void)client.Send(client_proto::Encode(e));
    if (end.before_mesh) {
      // The peers may be waiting for this party on the request's mesh: release them now (the
      // client has its answer already).
      if (Status told = TellPeersSetupFailed(rt, session, e.message); !told.ok()) {
        log->warn("[session {:016x}] {}", session, told.error().message());
      }
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    active_client = nullptr;
  }
  metrics.Add("mpcache_active_sessions", -1);
  client.Close();
}

void PartyService::Impl::Shutdown() {
  std::lock_guard<std::mutex> lock(mu);
  if (stopping) return;
  stopping = true;
  log->info("shutting down: {} request running", busy ? "aborting the" : "no");
  if (active_mesh)
    active_mesh->Abort("party " + std::to_string(cfg.party_id) + " is shutting down");
  if (active_client)
    active_client->SendAbort("party " + std::to_string(cfg.party_id) + " is shutting down");
  cv.notify_all();  // (Run closes the queue: that needs the io thread this runs on)
}

PartyService::PartyService(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PartyService::~PartyService() = default;

Result<std::unique_ptr<PartyService>> PartyService::Create(config::PartyConfig cfg,
                                                           std::shared_ptr<spdlog::logger> log,
                                                           AdversaryHook adversary_for_testing) {
  // Knobs of features this build does not have are refused, not ignored: a party must not
  // claim a leakage mode while it runs something else.
  if (cfg.mpcache.reveal == config::Reveal::kPlain && !cfg.debug) {
    return InvalidArgument(cfg.file +
                           ": field 'mpcache.reveal': 'plain' shows every party which tokens were "
                           "selected and is for debugging only; fix: write 'reveal: none' (or "
                           "dp), or set 'debug: true' on a test deployment");
  }
  auto impl = std::make_unique<Impl>();
  impl->cfg = std::move(cfg);
  // No logger given (a test, an embedding program): log nowhere rather than crash.
  impl->log = log ? std::move(log)
                  : std::make_shared<spdlog::logger>(
                        "party", std::make_shared<spdlog::sinks::null_sink_mt>());
  impl->adversary_for_testing = std::move(adversary_for_testing);
  if (impl->cfg.mpcache.cache == config::CacheMode::kMpcache) {
    const model::MpcachePolicy policy = model::PolicyFromConfig(impl->cfg.mpcache);
    if (Status s = policy.Validate(); !s.ok()) {
      return InvalidArgument(impl->cfg.file + ": section 'mpcache': " + s.error().message());
    }
    impl->log->info(
        "MPCache: clusters of {} tokens, {:.0f}% attended per step{}, {} representative{}; "
        "{:.0f}% of each prompt kept after the look-once eviction (window {:.0f}%)",
        policy.cluster_tokens, policy.keep_ratio * 100,
        policy.two_levels() ? fmt::format(", then sub-clusters of {} tokens, {:.0f}% of the "
                                          "context's attended",
                                          policy.level2_tokens, policy.level2_keep_ratio * 100)
                            : std::string(),
        model::ToString(policy.representative),
        (policy.share_layers
             ? fmt::format(", layer pairs share a selection (previous scores x {:.2f})",
                           policy.layer_share_decay)
             : std::string()) +
            (policy.residual ? ", skipped clusters through their means" : "") +
            (policy.eviction_score == model::EvictionScore::kSigmoid ? ", sigmoid eviction scores"
                                                                     : "") +
            (policy.impact_weight > 0
                 ? fmt::format(", kept rows re-weighted by impact x {:.2f}", policy.impact_weight)
                 : std::string()),
        policy.static_keep_ratio * 100, policy.observation_window * 100);
  }
  if (impl->adversary_for_testing) {
    impl->log->warn("TEST ONLY: this party deviates from the protocol on purpose (liar mode)");
  }
  // The identity first: a bad or world-readable key, or a bad certificate, is refused at once,
  // before the model is loaded (and before anything is logged: the refusal is the one line the
  // operator sees).
  MPCACHE_ASSIGN_OR_RETURN(impl->tls, net::MakeTlsContext(net::TlsFilesFromConfig(impl->cfg.tls)));
  MPCACHE_RETURN_IF_ERROR(impl->LoadModel());
  impl->DescribeMetrics();
  return std::unique_ptr<PartyService>(new PartyService(std::move(impl)));
}

Status PartyService::Run() {
  Impl& s = *impl_;
  // Refuse at start what would fail every request (daemon/start_checks.h).
  MPCACHE_ASSIGN_OR_RETURN(StartChecked checked, CheckPartyStart(s.cfg, s.io, *s.tls));
  s.mesh_address = std::move(checked.mesh_address);
  for (const std::string& w : checked.warnings) s.log->warn("{}", w);
  MPCACHE_ASSIGN_OR_RETURN(
      s.listener, net::TlsListener::Bind(s.io, *s.tls, net::ToEndpoint(s.cfg.client_listen)));
  {
    RequestQueue::Options q;
    q.party_id = s.cfg.party_id;
    q.limits = s.cfg.limits;
    q.recv_timeout = std::chrono::milliseconds(s.cfg.timeouts.recv_ms);
    // A client's frames are fragments of at most SyncLink's fragment size (plus its
    // continuation byte): nothing bigger is ever read from a client.
    q.max_client_frame = std::min<std::size_t>(s.cfg.max_frame_bytes, kFragmentBytes + 1);
    q.log = s.log;
    q.metrics = &s.metrics;
    q.use_session = [&s](std::uint64_t session) {
      std::lock_guard<std::mutex> lock(s.used_mu);
      return s.used_sessions.Use(session);
    };
    s.queue = std::make_unique<RequestQueue>(s.io, std::move(q));
  }
  s.listener->Start({std::string(net::kClientName)},
                    std::chrono::milliseconds(s.cfg.timeouts.handshake_ms),
                    [&s](Result<net::AcceptedTls> a) {
                      if (!a.ok()) {
                        s.log->warn("refused a client connection: {}", a.error().message());
                        return;
                      }
                      s.queue->Add(std::move(a).value());
                    });
  if (s.cfg.metrics_port > 0) {
    MPCACHE_ASSIGN_OR_RETURN(s.http,
                             HttpServer::Start(s.io, s.cfg.client_listen.host,
                                               static_cast<std::uint16_t>(s.cfg.metrics_port),
                                               [&s](std::string_view t) { return s.Http(t); }));
  }
  asio::signal_set signals(s.io, SIGTERM, SIGINT);
  signals.async_wait([&s](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    s.log->info("signal {} received", sig);
    s.Shutdown();
  });
  auto work = asio::make_work_guard(s.io);
  std::thread io_thread([&s] { s.io.run(); });
  s.log->info(
      "party {} ready: clients on {}, mesh on {}, dealer at {}, metrics on port {} ({}, {} "
      "weights)",
      s.cfg.party_id, s.cfg.client_listen.ToString(),
      s.cfg.parties[static_cast<std::size_t>(s.cfg.party_id)].ToString(), s.cfg.dealer.ToString(),
      s.cfg.metrics_port, config::ToString(s.cfg.security), config::ToString(s.cfg.weights));
  const auto is_stopping = [&s] {
    std::lock_guard<std::mutex> lock(s.mu);
    return s.stopping;
  };
  while (!is_stopping()) {
    if (!s.queue->WaitForRequest(std::chrono::milliseconds(200))) continue;
    std::optional<QueuedRequest> next = s.AgreeOnNext();
    if (!next) {
      // No agreement yet (a peer is still busy, or has not received the request): retry soon.
      std::unique_lock<std::mutex> lock(s.mu);
      s.cv.wait_for(lock, std::chrono::milliseconds(50), [&s] { return s.stopping; });
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(s.mu);
      s.busy = true;
    }
    s.queue->SetRunning(true);
    s.Serve(std::move(*next));
    s.queue->SetRunning(false);
    std::lock_guard<std::mutex> lock(s.mu);
    s.busy = false;
  }
  s.queue->Close("party " + std::to_string(s.cfg.party_id) + " is shutting down");
  std::promise<void> closed;
  asio::post(s.io, [&s, &signals, &closed] {
    s.listener->Close();

    if (s.http) s.http->Stop();
    boost::system::error_code ignored;
    signals.cancel(ignored);
    closed.set_value();
  });
  closed.get_future().wait_for(std::chrono::seconds(2));
  work.reset();
  s.io.stop();
  io_thread.join();
  s.log->info("party {} stopped", s.cfg.party_id);
  return Status::Ok();
}

}  // namespace mpcache::daemon
