#include "daemon/request_queue.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace mpcache::daemon {
namespace {

constexpr std::size_t kMaxGone = 256;

std::string AddressOf(const std::string& remote) {
  const auto colon = remote.rfind(':');
  return colon == std::string::npos ? remote : remote.substr(0, colon);
}

}  // namespace

RequestQueue::RequestQueue(net::asio::io_context& io, Options options)
    : io_(io), options_(std::move(options)) {
  if (options_.metrics) {
    options_.metrics->Describe("mpcache_queued_requests", "gauge",
                               "Requests waiting for their turn");
    options_.metrics->Describe("mpcache_requests_refused_total", "counter",
                               "Requests refused before they ran (limits, queue timeout, replays)");
    options_.metrics->Set("mpcache_queued_requests", 0);
    options_.metrics->Add("mpcache_requests_refused_total", 0);
  }
  keeper_ = std::thread([this] { Keeper(); });
}

RequestQueue::~RequestQueue() {
  Close(Who() + " is shutting down");
}

void RequestQueue::Add(net::AcceptedTls accepted) {
  std::lock_guard<std::mutex> lock(mu_);
  // Beyond this many connections still reading their Generate or queued, a connection is
  // closed without a word (an Error needs a thread to send it: that is what is exhausted).
  const std::size_t hard = 2 * static_cast<std::size_t>(options_.limits.max_queued_clients) + 8;
  if (closed_ || static_cast<std::size_t>(intakes_) + entries_.size() >= hard) {
    boost::system::error_code ignored;
    accepted.stream->lowest_layer().close(ignored);
    if (!closed_ && options_.log) {
      options_.log->warn(
          "closed a client connection from {} at once: {} connections wait "
          "already (twice limits.max_queued_clients, plus 8)",
          accepted.remote, hard);
    }
    return;
  }
  ++intakes_;
  std::thread([this, a = std::move(accepted)]() mutable { Intake(std::move(a)); }).detach();
}

void RequestQueue::Refuse(SyncLink& link, std::uint64_t session, const std::string& why) {
  if (options_.metrics) options_.metrics->Add("mpcache_requests_refused_total", 1);
  if (options_.log) options_.log->warn("[session {:016x}] refused: {}", session, why);
  client_proto::ErrorMsg e;
  e.session = session;
  e.reporter = static_cast<std::uint32_t>(options_.party_id);
  e.message = why.substr(0, client_proto::kMaxErrorText);
  (void)link.Send(client_proto::Encode(e));
  link.Close();
}

void RequestQueue::NoteGone(std::uint64_t session) {
  gone_.push_back(session);
  if (gone_.size() > kMaxGone) gone_.pop_front();
}

void RequestQueue::Intake(net::AcceptedTls accepted) {
  // Counted until the very end (its link, on io_, is gone then): Close waits for it.
  struct Counted {
    RequestQueue* q;
    ~Counted() {
      std::lock_guard<std::mutex> lock(q->mu_);
      --q->intakes_;
      q->cv_.notify_all();
    }
  } counted{this};
  auto entry = std::make_shared<Entry>();
  entry->request.remote = accepted.remote;
  entry->request.client =
      std::make_unique<SyncLink>(io_, std::move(accepted.stream), 0, options_.max_client_frame,
                                 "the client at " + accepted.remote);
  SyncLink& link = *entry->request.client;
  {
    std::lock_guard<std::mutex> lock(mu_);
    reading_.push_back(&link);
  }
  auto payload = link.Recv(options_.recv_timeout, client_proto::GenerateLimits());
  Result<client_proto::Generate> req = payload.ok()
                                           ? client_proto::Decode<client_proto::Generate>(*payload)
                                           : Result<client_proto::Generate>(payload.error());
  if (req.ok() && (req->session == 0 || req->session == kLobbySession)) {
    req = InvalidArgument("session id " + std::to_string(req->session) +
                          " is reserved; a client draws a random one");
  }
  if (req.ok() && options_.use_session) {
    if (Status s = options_.use_session(req->session); !s.ok()) req = s.error();
  }
  std::string refusal;
  std::uint64_t session = req.ok() ? req->session : 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    reading_.erase(std::remove(reading_.begin(), reading_.end(), &link), reading_.end());
    if (closed_) {
      refusal = Who() + " is shutting down";
    } else if (!req.ok()) {
      refusal = req.error().ToString();
    } else if (entries_.size() >= static_cast<std::size_t>(options_.limits.max_queued_clients)) {
      refusal = Who() + ": " + std::to_string(entries_.size()) +
                " requests are queued already (limits.max_queued_clients: " +
                std::to_string(options_.limits.max_queued_clients) +
                "); try again later, or raise limits.max_queued_clients in the party's config";
    } else {
      const std::string address = AddressOf(entry->request.remote);
      const auto same = std::count_if(entries_.begin(), entries_.end(), [&](const auto& e) {
        return AddressOf(e->request.remote) == address;
      });
      if (same >= options_.limits.max_queued_per_client) {
        refusal = Who() + ": " + std::to_string(same) + " requests from " + address +
                  " are queued already (limits.max_queued_per_client: " +
                  std::to_string(options_.limits.max_queued_per_client) +
                  "); wait for one to finish";
      }
    }
    if (refusal.empty()) {
      entry->request.req = *req;
      entry->since = std::chrono::steady_clock::now();
      entry->told_at = entry->since;
      entries_.push_back(entry);
      if (options_.metrics) {
        options_.metrics->Set("mpcache_queued_requests", static_cast<double>(entries_.size()));
      }
      if (options_.log) {
        options_.log->info(
            "[session {:016x}] queued: request from {}, {} prompt tokens, {} "
            "steps ({} waiting)",
            session, entry->request.remote, req->prompt_len, req->steps, entries_.size());
      }
      cv_.notify_all();
      return;
    }
    if (session != 0) NoteGone(session);
  }
  // (A client that broke off before its Generate hears nothing: the send fails quietly.)
  Refuse(link, session, refusal);
}

bool RequestQueue::WaitForRequest(std::chrono::milliseconds max) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, max, [this] { return closed_ || !entries_.empty(); });
  return !closed_ && !entries_.empty();
}

Offer RequestQueue::MakeOffer() {
  std::lock_guard<std::mutex> lock(mu_);
  Offer o;
  for (const auto& e : entries_) o.queued.push_back(e->request.req.session);
  o.gone.assign(gone_.begin(), gone_.end());
  return o;
}

std::optional<QueuedRequest> RequestQueue::Take(std::uint64_t session) {
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find_if(entries_.begin(), entries_.end(),
                           [session](const auto& e) { return e->request.req.session == session; });
    if (it == entries_.end()) return std::nullopt;
    entry = *it;
    entries_.erase(it);
    if (options_.metrics) {
      options_.metrics->Set("mpcache_queued_requests", static_cast<double>(entries_.size()));
    }
  }
  std::lock_guard<std::mutex> sending(entry->send_mu);  // the keeper is done with it
  return std::move(entry->request);
}

void RequestQueue::Drop(const std::vector<std::uint64_t>& ids, const std::string& why) {
  std::vector<std::shared_ptr<Entry>> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (std::find(ids.begin(), ids.end(), (*it)->request.req.session) != ids.end()) {
        NoteGone((*it)->request.req.session);
        dropped.push_back(*it);
        it = entries_.erase(it);
      } else {
        ++it;
      }
    }
    if (options_.metrics) {
      options_.metrics->Set("mpcache_queued_requests", static_cast<double>(entries_.size()));
    }
  }
  for (auto& e : dropped) {
    std::lock_guard<std::mutex> sending(e->send_mu);
    Refuse(*e->request.client, e->request.req.session, why);
  }
}

void RequestQueue::SetRunning(bool running) {
  std::lock_guard<std::mutex> lock(mu_);
  running_ = running;
  cv_.notify_all();
}

std::size_t RequestQueue::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

void RequestQueue::Keeper() {
  const auto timeout = std::chrono::milliseconds(options_.limits.queue_timeout_ms);
  std::unique_lock<std::mutex> lock(mu_);
  while (!closed_) {
    cv_.wait_for(lock, std::min(options_.heartbeat, std::chrono::milliseconds(200)));
    if (closed_) break;
    const auto now = std::chrono::steady_clock::now();
    std::vector<std::pair<std::shared_ptr<Entry>, std::uint32_t>> tell;
    std::vector<std::shared_ptr<Entry>> expired;
    std::uint32_t ahead = running_ ? 1 : 0;
    for (auto it = entries_.begin(); it != entries_.end();) {
      auto& e = *it;
      if (now - e->since >= timeout) {
        NoteGone(e->request.req.session);
        expired.push_back(e);
        it = entries_.erase(it);
        continue;
      }
      // A request about to run (nothing ahead of it) hears nothing until its heartbeat is
      // due: the lobby usually starts it first.
      const bool changed = e->told_ahead ? *e->told_ahead != ahead : ahead > 0;
      if (changed || now - e->told_at >= options_.heartbeat) {
        e->told_ahead = ahead;
        e->told_at = now;
        tell.emplace_back(e, ahead);
      }
      ++ahead;
      ++it;
    }
    if (options_.metrics && !expired.empty()) {
      options_.metrics->Set("mpcache_queued_requests", static_cast<double>(entries_.size()));
    }
    lock.unlock();
    for (auto& [e, n] : tell) {
      std::lock_guard<std::mutex> sending(e->send_mu);
      if (!e->request.client) continue;  // taken meanwhile
      (void)e->request.client->Send(
          client_proto::Encode(client_proto::Queued{e->request.req.session, n}));
    }
    for (auto& e : expired) {
      std::lock_guard<std::mutex> sending(e->send_mu);
      Refuse(*e->request.client, e->request.req.session,
             Who() + ": the request waited " + std::to_string(timeout.count()) +
                 " ms in the queue without its turn coming (limits.queue_timeout_ms); the "
                 "parties may not all have received it, or they are overloaded: try again");
    }
    lock.lock();
  }
}

void RequestQueue::Close(const std::string& why) {
  std::deque<std::shared_ptr<Entry>> left;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (!closed_) {
      closed_ = true;
      cv_.notify_all();
    }
    for (SyncLink* l : reading_) l->CloseNow();
    left.swap(entries_);
  }
  if (keeper_.joinable()) keeper_.join();
  for (auto& e : left) Refuse(*e->request.client, e->request.req.session, why);
  // The intake threads end within their receive (their links are closed now).
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return intakes_ == 0; });
}

}  // namespace mpcache::daemon
