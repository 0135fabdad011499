#include "daemon/http_server.h"

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>

namespace mpcache::daemon {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = net::asio;
using tcp = asio::ip::tcp;

struct HttpServer::State : std::enable_shared_from_this<HttpServer::State> {
  explicit State(asio::io_context& io) : acceptor(io) {}
  tcp::acceptor acceptor;
  Handler handler;
  bool stopped = false;
  void Accept();
};

namespace {

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(tcp::socket socket, HttpServer::Handler& handler)
      : stream_(std::move(socket)), handler_(handler) {}

  void Run() {
    stream_.expires_after(std::chrono::seconds(5));
    http::async_read(
        stream_, buffer_, request_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->OnRead(ec); });
  }

 private:
  void OnRead(beast::error_code ec) {
    if (ec) return Fail();
    HttpReply reply;
    if (request_.method() != http::verb::get && request_.method() != http::verb::head) {
      reply = {405, "text/plain", "only GET\n"};
    } else {
      const auto target = request_.target();
      reply = handler_(std::string_view(target.data(), target.size()));
    }
    response_.version(request_.version());
    response_.result(static_cast<http::status>(reply.status));
    response_.set(http::field::server, "mpcache");
    response_.set(http::field::content_type, reply.content_type);
    response_.keep_alive(false);
    response_.body() = std::move(reply.body);
    response_.prepare_payload();
    stream_.expires_after(std::chrono::seconds(5));
    http::async_write(
        stream_, response_,
        [self = shared_from_this()](beast::error_code, std::size_t) { self->Fail(); });
  }
  void Fail() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  beast::tcp_stream stream_;
  HttpServer::Handler& handler_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  http::response<http::string_body> response_;
};

}  // namespace

void HttpServer::State::Accept() {
  acceptor.async_accept([self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
    if (self->stopped) return;
    if (!ec) std::make_shared<HttpSession>(std::move(socket), self->handler)->Run();
    self->Accept();
  });
}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(asio::io_context& io, const std::string& host,
                                                      std::uint16_t port, Handler handler) {
  auto state = std::make_shared<State>(io);
  state->handler = std::move(handler);
  beast::error_code ec;
  tcp::resolver resolver(io);
  const auto results = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
  if (ec || results.empty()) {
    return InvalidArgument("metrics endpoint: cannot resolve '" + host + "': " + ec.message());
  }
  const tcp::endpoint ep = results.begin()->endpoint();
  state->acceptor.open(ep.protocol(), ec);
  if (!ec) state->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) state->acceptor.bind(ep, ec);
  if (!ec) state->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return IoError("metrics endpoint: cannot listen on " + host + ":" + std::to_string(port) +
                   ": " + ec.message());
  }
  std::unique_ptr<HttpServer> server(new HttpServer(state));
  server->port_ = state->acceptor.local_endpoint().port();
  state->Accept();
  return server;
}

void HttpServer::Stop() {
  if (state_->stopped) return;
  state_->stopped = true;
  beast::error_code ignored;
  state_->acceptor.close(ignored);
}

HttpServer::~HttpServer() {
  auto state = state_;
  // Close on the io thread if it still runs; closing twice is harmless.
  asio::post(state->acceptor.get_executor(), [state] {
    state->stopped = true;
    beast::error_code ignored;
    state->acceptor.close(ignored);
  });
}

}  // namespace mpcache::daemon
