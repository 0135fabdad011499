// The daemons' plain-HTTP operations endpoint (Boost.Beast): GET /metrics (Prometheus
// text) and GET /healthz, answered by a caller-supplied handler. One session object per
// connection, a timeout on the stream before each operation, one request per connection.
// Runs on the daemon's io_context; Stop() on that io thread or before it runs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"
#include "net/tls/asio.h"

namespace mpcache::daemon {

struct HttpReply {
  int status = 200;
  std::string content_type = "text/plain; version=0.0.4; charset=utf-8";
  std::string body;
};

class HttpServer {
 public:
  using Handler = std::function<HttpReply(std::string_view target)>;
  // Binds host:port (port 0 = any free port, see port()) and starts accepting.
  static Result<std::unique_ptr<HttpServer>> Start(net::asio::io_context& io,
                                                   const std::string& host, std::uint16_t port,
                                                   Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  std::uint16_t port() const { return port_; }
  void Stop();

 private:
  struct State;
  explicit HttpServer(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
  std::uint16_t port_ = 0;
};

}  // namespace mpcache::daemon
