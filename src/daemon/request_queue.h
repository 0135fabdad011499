// A party's queue of client requests waiting for their turn (one request runs at a time;
// the order is agreed with the peers: daemon/session_order.h).
//
// Each accepted client gets an intake thread that reads its Generate (within recv_ms) and
// queues it, or refuses it with an Error naming the limit: more than
// limits.max_queued_clients waiting, more than limits.max_queued_per_client from one
// address, a replayed session id, or a malformed Generate. A keeper thread tells every
// queued client how many requests are ahead of it (a Queued message when that changes, and
// every second as a heartbeat, so that the client's receive timeout measures the party's
// silence, not the queue), and refuses requests that waited longer than
// limits.queue_timeout_ms.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/config.h"
#include "daemon/client_protocol.h"
#include "daemon/metrics.h"
#include "daemon/session_order.h"
#include "daemon/sync_link.h"
#include "net/tls/tls_connector.h"

namespace spdlog {
class logger;
}

namespace mpcache::daemon {

struct QueuedRequest {
  std::unique_ptr<SyncLink> client;
  client_proto::Generate req;
  std::string remote;  // the client's address:port
};

class RequestQueue {
 public:
  struct Options {
    int party_id = 0;
    config::PartyLimits limits;
    std::chrono::milliseconds recv_timeout{30000};  // for the Generate
    std::size_t max_client_frame = 0;
    std::chrono::milliseconds heartbeat{1000};
    std::shared_ptr<spdlog::logger> log;
    Metrics* metrics = nullptr;
    // Ok if a session id is fresh at this party (UsedSessions); an error otherwise.
    std::function<Status(std::uint64_t)> use_session;
  };

  RequestQueue(net::asio::io_context& io, Options options);
  ~RequestQueue();  // Close("shutting down")
  RequestQueue(const RequestQueue&) = delete;
  RequestQueue& operator=(const RequestQueue&) = delete;

  // A client connection (the listener's io thread): its Generate is read on an intake thread.
  void Add(net::AcceptedTls accepted);

  // Waits until a request is queued, the queue is closed or `max` passed; true if one is.
  bool WaitForRequest(std::chrono::milliseconds max);

  // The queued session ids in arrival order and those refused or dropped lately.
  Offer MakeOffer();

  // Takes the request of `session` out of the queue (it runs now), if queued.
  std::optional<QueuedRequest> Take(std::uint64_t session);

  // Refuses the queued requests among `ids` with `why` (a peer refused or served them).
  void Drop(const std::vector<std::uint64_t>& ids, const std::string& why);

  // Whether a request is running (it counts in every queued client's `ahead`).
  void SetRunning(bool running);

  std::size_t size();

  // Refuses every queued request with `why`, stops the intake and keeper threads.
  void Close(const std::string& why);

 private:
  struct Entry {
    QueuedRequest request;
    std::chrono::steady_clock::time_point since;
    std::chrono::steady_clock::time_point told_at;
    std::optional<std::uint32_t> told_ahead;
    std::mutex send_mu;  // the keeper's sends; Take waits for them
  };

  void Intake(net::AcceptedTls accepted);
  void Keeper();
  void Refuse(SyncLink& link, std::uint64_t session, const std::string& why);
  void NoteGone(std::uint64_t session);  // with mu_ held
  std::string Who() const { return "party " + std::to_string(options_.party_id); }

  net::asio::io_context& io_;
  Options options_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Entry>> entries_;
  std::deque<std::uint64_t> gone_;  // the last kMaxGone refused or dropped ids
  std::vector<SyncLink*> reading_;  // intake links still reading their Generate
  int intakes_ = 0;
  bool running_ = false;
  bool closed_ = false;
  std::thread keeper_;
};

}  // namespace mpcache::daemon
