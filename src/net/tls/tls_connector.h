// Establishing authenticated TLS connections, for the party mesh and for the dealer and
// client links alike: connect (with retry and backoff until a deadline) or accept, run
// the TLS 1.3 handshake, and check that the peer's certificate names the expected role
// ("mpcache-party-<id>", "mpcache-dealer", "mpcache-client"; in its SAN DNS names, or in
// its CN only when it has no SANs: CertificateIdentities in tls_context.h).
//
// Everything here is asynchronous on a caller-supplied io_context; handlers run on the
// thread(s) running it. Objects given to these functions must outlive the io_context's
// pending handlers (keep the ssl::context alive until the io_context is destroyed).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "net/tls/asio.h"

namespace mpcache::net {

using Clock = std::chrono::steady_clock;

struct Endpoint {
  std::string host;
  std::uint16_t port = 0;
  std::string ToString() const { return host + ":" + std::to_string(port); }
};

// Connects to `endpoint`, retrying refused or unreachable TCP connects with exponential
// backoff (50 ms doubling to 1 s) until `deadline`, then runs the client handshake and
// checks that the server's certificate names `expected_name`. TLS failures are not
// retried. Calls `handler` exactly once.
using ConnectHandler = std::function<void(Result<std::unique_ptr<TlsStream>>)>;
void AsyncConnectTls(asio::io_context& io, asio::ssl::context& ctx, Endpoint endpoint,
                     std::string expected_name, Clock::time_point deadline, ConnectHandler handler);

struct AcceptedTls {
  std::unique_ptr<TlsStream> stream;
  std::string peer_name;  // which of the allowed names the certificate carries
  std::string remote;     // "ip:port" of the peer, for logs
  // One of the listener's max_open_connections places, given back when the last copy of
  // this is destroyed: keep it (or the whole AcceptedTls) as long as the connection is
  // served or queued.
  std::shared_ptr<void> slot;
};

// A listening socket that accepts TLS connections from peers whose certificates name
// one of a set of allowed roles.
class TlsListener {
 public:
  // Binds `at` (port 0 picks a free port; read it back with port()).
  static Result<std::unique_ptr<TlsListener>> Bind(asio::io_context& io, asio::ssl::context& ctx,
                                                   const Endpoint& at);
  // Accepts on a duplicate of `listening_fd`, a socket already listening (another
  // listener's native_handle(): a daemon holds its mesh address for its life and each
  // request's mesh accepts on it). Closing this listener leaves the original listening.
  static Result<std::unique_ptr<TlsListener>> Adopt(asio::io_context& io, asio::ssl::context& ctx,
                                                    int listening_fd);
  ~TlsListener();
  TlsListener(const TlsListener&) = delete;
  TlsListener& operator=(const TlsListener&) = delete;

  std::uint16_t port() const { return port_; }
  int native_handle() { return acceptor_.native_handle(); }

  // Connections in their handshake or handed out (their AcceptedTls::slot alive) at most;
  // more are closed at once and reported as kExhausted. Bounds the sockets and the
  // per-connection work a flood of connections (or of authenticated peers opening
  // connections they never use) can tie up. Set before Start().
  static constexpr std::size_t kDefaultMaxOpenConnections = 256;
  void set_max_open_connections(std::size_t n) { max_open_ = n; }
  std::size_t open_connections() const { return open_->load(); }

  // Accepts connections until Close(); after a failed accept (out of file descriptors,
  // say) it tries again after 100 ms rather than at once. Each accepted connection runs
  // its server handshake (bounded by `handshake_timeout`) and its name check concurrently
  // with the others; `handler` is called once per connection attempt, with the stream or
  // with the reason it was refused (refused connections are already closed). A
  // certificate that names more than one of `allowed_names` is refused.
  using AcceptHandler = std::function<void(Result<AcceptedTls>)>;
  void Start(std::vector<std::string> allowed_names, std::chrono::milliseconds handshake_timeout,
             AcceptHandler handler);
  // Stops accepting (io thread or before the io_context runs).
  void Close();

 private:
  TlsListener(asio::io_context& io, asio::ssl::context& ctx);
  void AcceptOne();

  asio::ssl::context& ctx_;
  asio::ip::tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  std::vector<std::string> allowed_names_;
  std::chrono::milliseconds handshake_timeout_{5000};
  AcceptHandler handler_;
  std::shared_ptr<bool> alive_;
  std::shared_ptr<std::atomic<std::size_t>> open_;
  std::size_t max_open_ = kDefaultMaxOpenConnections;
  asio::steady_timer retry_timer_;
};

}  // namespace mpcache::net
