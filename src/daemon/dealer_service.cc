#include "daemon/dealer_service.h"

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <future>
#include <list>
#include <map>
#include <mutex>
#include <thread>

#include "daemon/dealer_session.h"
#include "daemon/http_server.h"
#include "daemon/metrics.h"
#include "daemon/sync_link.h"
#include "net/tls/mesh_config.h"
#include "net/tls/tls_context.h"

namespace mpcache::daemon {

namespace asio = net::asio;

struct DealerService::Impl {
  config::DealerConfig cfg;
  std::shared_ptr<spdlog::logger> log;
  DealerHook fault_for_testing;  // TEST ONLY: empty in production
  Metrics metrics;
  asio::io_context io;
  std::unique_ptr<asio::ssl::context> tls;
  std::unique_ptr<net::TlsListener> listener;
  std::unique_ptr<HttpServer> http;

  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  int connections = 0;
  std::map<std::uint64_t, std::weak_ptr<DealerSession>> sessions;
  std::list<SyncLink*> links;  // open links, closed at shutdown

  void OnAccepted(net::AcceptedTls a);
  void ServeParty(net::AcceptedTls a);
  Status Handle(SyncLink& link, int party, std::uint64_t& session_id);
  HttpReply Http(std::string_view target);
};

HttpReply DealerService::Impl::Http(std::string_view target) {
  if (target == "/metrics")
    return {200, "text/plain; version=0.0.4; charset=utf-8", metrics.Render()};
  if (target == "/healthz" || target == "/health") {
    std::lock_guard<std::mutex> lock(mu);
    return stopping ? HttpReply{503, "text/plain", "stopping\n"}
                    : HttpReply{200, "text/plain", "ok\n"};
  }
  return {404, "text/plain", "not found: try /metrics or /healthz\n"};
}

void DealerService::Impl::OnAccepted(net::AcceptedTls a) {
  std::lock_guard<std::mutex> lock(mu);
  if (stopping) return;
  ++connections;
  // One thread per party connection (three per request); detached, counted in connections.
  std::thread([this, a = std::move(a)]() mutable { ServeParty(std::move(a)); }).detach();
}

void DealerService::Impl::ServeParty(net::AcceptedTls a) {
  int party = -1;
  for (int p = 0; p < 3; ++p) {
    if (a.peer_name == net::PartyName(p)) party = p;
  }
  // Links use frame session id 0: the request's session id comes with the Join.
  std::uint64_t session_id = 0;
  {
    SyncLink link(io, std::move(a.stream), 0, cfg.max_frame_bytes,
                  "party " + std::to_string(party) + " (" + a.peer_name + ")");
    {
      std::lock_guard<std::mutex> lock(mu);
      links.push_back(&link);
    }
    Status s = Handle(link, party, session_id);
    if (!s.ok()) {
      log->warn("[session {:016x}] party {}: {}", session_id, party, s.error().ToString());
      (void)link.Send(dealer_proto::EncodeError(s.error().message()));
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      links.remove(&link);
    }
    link.Close();
  }
  std::lock_guard<std::mutex> lock(mu);
  --connections;
  cv.notify_all();
}

Status DealerService::Impl::Handle(SyncLink& link, int party, std::uint64_t& session_id) {
  const std::chrono::milliseconds idle(cfg.timeouts.request_ms);
  MPCACHE_ASSIGN_OR_RETURN(auto first, link.Recv(std::chrono::milliseconds(cfg.timeouts.recv_ms)));
  const auto want = cfg.security == config::Security::kMalicious ? preproc::Security::kMalicious
                                                                 : preproc::Security::kSemiHonest;
  if (!first.empty() && first[0] == dealer_proto::kHello) {  // a party's start-up check
    MPCACHE_ASSIGN_OR_RETURN(dealer_proto::Hello hello, dealer_proto::DecodeHello(first));
    if (static_cast<int>(hello.party) != party) {
      return ProtocolError("says hello as party " + std::to_string(hello.party) +
                           " with the certificate of party " + std::to_string(party));
    }
    if (hello.security != want) {
      return ProtocolError(std::string("security mode differs: the dealer runs ") +
                           std::string(config::ToString(cfg.security)));
    }
    log->info("party {} checked in (its start-up check)", party);
    return link.Send(dealer_proto::Encode(dealer_proto::HelloReply{want}));
  }
  MPCACHE_ASSIGN_OR_RETURN(dealer_proto::Join join, dealer_proto::DecodeJoin(first));
  session_id = join.session;
  if (static_cast<int>(join.party) != party) {
    return ProtocolError("joined as party " + std::to_string(join.party) +
                         " with the certificate of party " + std::to_string(party));
  }
  if (join.security != want) {
    return ProtocolError(std::string("security mode differs: the dealer runs ") +
                         std::string(config::ToString(cfg.security)));
  }
  std::shared_ptr<DealerSession> session;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (stopping) return Aborted("the dealer is shutting down");
    if (auto it = sessions.find(session_id); it != sessions.end()) session = it->second.lock();
    for (auto it = sessions.begin(); it != sessions.end();) {
      it = it->second.expired() ? sessions.erase(it) : std::next(it);
    }
    if (!session && static_cast<int>(sessions.size()) >= cfg.max_sessions) {
      metrics.Add("mpcache_dealer_sessions_refused_total", 1);
      return Exhausted(
          "the dealer serves " + std::to_string(sessions.size()) +
          " sessions already (limits.max_sessions: " + std::to_string(cfg.max_sessions) +
          "); retry when one ends, or raise limits.max_sessions in the dealer's "
          "config");
    }
    if (!session) {
      DealerLimits limits;
      limits.chunk_items = cfg.batch_items;
      limits.max_request_items = cfg.pool_capacity_items;
      limits.max_matrix_elements = cfg.pool_max_matrix_elements;
      limits.threads = cfg.pool_threads;
      MPCACHE_ASSIGN_OR_RETURN(session, DealerSession::Create(join, limits));
      sessions[session_id] = session;
      metrics.Add("mpcache_dealer_sessions_total", 1);
      log->info("[session {:016x}] new session ({} prompt tokens, {} steps)", session_id,
                join.prompt_len, join.steps);
    }
  }
  const dealer_proto::Join& j = session->join();
  if (j.prompt_len != join.prompt_len || j.steps != join.steps || j.vocab != join.vocab ||
      j.noise != join.noise) {
    return ProtocolError("party " + std::to_string(party) +
                         " joined with other session parameters than its peers");
  }
  MPCACHE_ASSIGN_OR_RETURN(dealer_proto::Setup setup, session->SetupFor(party));
  MPCACHE_RETURN_IF_ERROR(link.Send(dealer_proto::Encode(setup)));
  const std::string pl = Label("party", std::to_string(party));
  std::uint64_t answers = 0;
  MPCACHE_RETURN_IF_ERROR(ServeRequests(
      link, *session, party, idle,
      [&](const std::vector<std::uint8_t>& request, std::size_t answer_bytes) {
        if (fault_for_testing) fault_for_testing(session_id, party, ++answers);
        metrics.Add("mpcache_dealer_bytes_sent_total", static_cast<double>(answer_bytes), pl);
        if (request[0] == dealer_proto::kBatchRequest) {
          auto req = dealer_proto::DecodeBatchRequest(request);
          metrics.Add("mpcache_dealer_batches_total", 1,
                      pl + "," + Label("type", preproc::ItemTypeName(req->request.type)));
        } else {
          auto req = dealer_proto::DecodeBitRequest(request);
          metrics.Add("mpcache_dealer_bit_requests_total", 1,
                      pl + "," + Label("item", preproc::BitItemName(req->item)));
        }
      }));
  const DealerSessionStats st = session->stats();
  log->info("[session {:016x}] party {} done: {} bytes sent to it, {} batches, {} binary requests",
            session_id, party, st.bytes_to_party[static_cast<std::size_t>(party)], st.batches,
            st.bit_requests);
  return Status::Ok();
}

DealerService::DealerService(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DealerService::~DealerService() = default;

Result<std::unique_ptr<DealerService>> DealerService::Create(config::DealerConfig cfg,
                                                             std::shared_ptr<spdlog::logger> log,
                                                             DealerHook fault_for_testing) {
  auto impl = std::make_unique<Impl>();
  impl->cfg = std::move(cfg);
  impl->log = std::move(log);
  impl->fault_for_testing = std::move(fault_for_testing);
  MPCACHE_ASSIGN_OR_RETURN(impl->tls, net::MakeTlsContext(net::TlsFilesFromConfig(impl->cfg.tls)));
  auto& m = impl->metrics;
  m.Describe("mpcache_dealer_sessions_total", "counter", "Preprocessing sessions created");
  m.Describe("mpcache_dealer_batches_total", "counter", "Arithmetic batches streamed per party");
  m.Describe("mpcache_dealer_bit_requests_total", "counter",
             "Comparison-material requests per party");
  m.Describe("mpcache_dealer_bytes_sent_total", "counter", "Preprocessing bytes sent per party");
  m.Describe("mpcache_dealer_active_connections", "gauge", "Party connections open");
  m.Add("mpcache_dealer_sessions_total", 0);
  m.Describe("mpcache_dealer_sessions_refused_total", "counter",
             "Sessions refused at limits.max_sessions");
  m.Add("mpcache_dealer_sessions_refused_total", 0);
  return std::unique_ptr<DealerService>(new DealerService(std::move(impl)));
}

Status DealerService::Run() {
  Impl& s = *impl_;
  MPCACHE_ASSIGN_OR_RETURN(s.listener,
                           net::TlsListener::Bind(s.io, *s.tls, net::ToEndpoint(s.cfg.listen)));
  s.listener->Start({net::PartyName(0), net::PartyName(1), net::PartyName(2)},
                    std::chrono::milliseconds(s.cfg.timeouts.handshake_ms),
                    [&s](Result<net::AcceptedTls> a) {
                      if (!a.ok()) {
                        s.log->warn("refused a connection: {}", a.error().message());
                        return;
                      }
                      s.OnAccepted(std::move(a).value());
                    });
  if (s.cfg.metrics_port > 0) {
    MPCACHE_ASSIGN_OR_RETURN(
        s.http,
        HttpServer::Start(s.io, s.cfg.listen.host, static_cast<std::uint16_t>(s.cfg.metrics_port),
                          [&s](std::string_view t) {
                            {
                              std::lock_guard<std::mutex> l(s.mu);
                              s.metrics.Set("mpcache_dealer_active_connections", s.connections);
                            }
                            return s.Http(t);
                          }));
  }
  asio::signal_set signals(s.io, SIGTERM, SIGINT);
  signals.async_wait([&s](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    s.log->info("signal {} received: shutting down", sig);
    std::lock_guard<std::mutex> lock(s.mu);
    s.stopping = true;
    for (SyncLink* l : s.links) l->CloseNow();
    s.cv.notify_all();
  });
  auto work = asio::make_work_guard(s.io);
  std::thread io_thread([&s] { s.io.run(); });
  for (const std::string& field : s.cfg.unused_fields) {
    s.log->warn(
        "{}: field '{}' is not used by the dealer (a truncation pair's shift comes with "
        "each party's request, from the parties' model.frac_bits); remove it",
        s.cfg.file, field);
  }
  s.log->info("dealer ready on {} ({}), metrics on port {}", s.cfg.listen.ToString(),
              config::ToString(s.cfg.security), s.cfg.metrics_port);
  {
    std::unique_lock<std::mutex> lock(s.mu);
    s.cv.wait(lock, [&s] { return s.stopping; });
    s.cv.wait_for(lock, std::chrono::seconds(5), [&s] { return s.connections == 0; });
  }
  std::promise<void> closed;
  asio::post(s.io, [&] {
    s.listener->Close();
    if (s.http) s.http->Stop();
    closed.set_value();
  });
  closed.get_future().wait_for(std::chrono::seconds(2));
  work.reset();
  s.io.stop();
  io_thread.join();
  s.log->info("dealer stopped");
  return Status::Ok();
}

}  // namespace mpcache::daemon
