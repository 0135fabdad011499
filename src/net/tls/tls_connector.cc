#include "net/tls/tls_connector.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "net/tls/tls_context.h"

namespace mpcache::net {
namespace {

using asio::ip::tcp;

std::int64_t MillisSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

std::string RemoteOf(const tcp::socket& socket) {
  boost::system::error_code ec;
  const auto ep = socket.remote_endpoint(ec);
  if (ec) return "unknown peer";
  return ep.address().to_string() + ":" + std::to_string(ep.port());
}

// Client side: resolve, TCP connect (retried with backoff), handshake, name check.
class ConnectOp : public std::enable_shared_from_this<ConnectOp> {
 public:
  ConnectOp(asio::io_context& io, asio::ssl::context& ctx, Endpoint endpoint, std::string name,
            Clock::time_point deadline, ConnectHandler handler)
      : io_(io),
        ctx_(ctx),
        endpoint_(std::move(endpoint)),
        name_(std::move(name)),
        deadline_(deadline),
        handler_(std::move(handler)),
        resolver_(io),
        timer_(io),
        start_(Clock::now()) {}

  void Attempt() {
    auto self = shared_from_this();
    resolver_.async_resolve(
        endpoint_.host, std::to_string(endpoint_.port),
        [self](const boost::system::error_code& ec, const tcp::resolver::results_type& results) {
          if (ec) return self->Retry(ec);
          self->stream_ = std::make_unique<TlsStream>(self->io_, self->ctx_);
          self->ArmWatchdog();
          asio::async_connect(self->stream_->lowest_layer(), results,
                              [self](const boost::system::error_code& cec, const tcp::endpoint&) {
                                self->timer_.cancel();
                                if (cec) return self->Retry(cec);
                                boost::system::error_code ignored;
                                self->stream_->lowest_layer().set_option(tcp::no_delay(true),
                                                                         ignored);
                                self->Handshake();
                              });
        });
  }

 private:
  void ArmWatchdog() {
    timer_.expires_at(deadline_);
    std::weak_ptr<ConnectOp> weak = weak_from_this();
    timer_.async_wait([weak](const boost::system::error_code& ec) {
      auto self = weak.lock();
      if (ec || !self || !self->stream_) return;
      self->timed_out_ = true;
      boost::system::error_code ignored;
      self->stream_->lowest_layer().close(ignored);
    });
  }

  void Retry(const boost::system::error_code& ec) {
    last_error_ = DescribeError(ec);
    if (timed_out_ || Clock::now() + backoff_ >= deadline_) {
      return Finish(Timeout("cannot connect to " + name_ + " at " + endpoint_.ToString() +
                            " within " + std::to_string(MillisSince(start_)) +
                            " ms (last error: " + last_error_ + "); is it running?"));
    }
    stream_.reset();
    timer_.expires_after(backoff_);
    backoff_ = std::min(backoff_ * 2, std::chrono::milliseconds(1000));
    auto self = shared_from_this();
    timer_.async_wait([self](const boost::system::error_code& tec) {
      if (!tec) self->Attempt();
    });
  }

  void Handshake() {
    ArmWatchdog();
    auto self = shared_from_this();
    stream_->async_handshake(
        asio::ssl::stream_base::client, [self](const boost::system::error_code& ec) {
          self->timer_.cancel();
          const std::string where = self->name_ + " at " + self->endpoint_.ToString();
          if (ec) {
            if (self->timed_out_) {
              return self->Finish(Timeout("TLS handshake with " + where + " timed out"));
            }
            return self->Finish(
                ProtocolError("TLS handshake with " + where + " failed: " + DescribeError(ec)));
          }
          SSL* ssl = self->stream_->native_handle();
          if (!PeerCertificateHasName(ssl, self->name_)) {
            const std::string got = DescribePeerCertificate(ssl);
            boost::system::error_code ignored;
            self->stream_->lowest_layer().close(ignored);
            return self->Finish(ProtocolError("peer at " + self->endpoint_.ToString() +
                                              " presented a certificate for " + got +
                                              ", expected " + self->name_ + "; refused"));
          }
          self->Finish(std::move(self->stream_));
        });
  }

  void Finish(Result<std::unique_ptr<TlsStream>> result) {
    if (done_) return;
    done_ = true;
    timer_.cancel();
    handler_(std::move(result));
  }

  asio::io_context& io_;
  asio::ssl::context& ctx_;
  Endpoint endpoint_;
  std::string name_;
  Clock::time_point deadline_;
  ConnectHandler handler_;
  tcp::resolver resolver_;
  asio::steady_timer timer_;
  Clock::time_point start_;
  std::unique_ptr<TlsStream> stream_;
  std::chrono::milliseconds backoff_{50};
  std::string last_error_;
  bool timed_out_ = false;
  bool done_ = false;
};

// Server side of one accepted connection: handshake and name check.
class AcceptOp : public std::enable_shared_from_this<AcceptOp> {
 public:
  AcceptOp(std::unique_ptr<TlsStream> stream, const std::vector<std::string>& allowed,
           std::chrono::milliseconds timeout, TlsListener::AcceptHandler handler,
           std::shared_ptr<void> slot)
      : stream_(std::move(stream)),
        allowed_(allowed),
        timeout_(timeout),
        handler_(std::move(handler)),
        timer_(stream_->get_executor()),
        remote_(RemoteOf(stream_->next_layer())),
        slot_(std::move(slot)) {}

  void Start() {
    auto self = shared_from_this();
    timer_.expires_after(timeout_);
    timer_.async_wait([self](const boost::system::error_code& ec) {
      if (ec) return;
      self->timed_out_ = true;
      boost::system::error_code ignored;
      self->stream_->lowest_layer().close(ignored);
    });
    stream_->async_handshake(asio::ssl::stream_base::server,
                             [self](const boost::system::error_code& ec) { self->Done(ec); });
  }

 private:
  void Done(const boost::system::error_code& ec) {
    timer_.cancel();
    boost::system::error_code ignored;
    if (ec) {
      stream_->lowest_layer().close(ignored);
      if (timed_out_) {
        return handler_(Timeout("TLS handshake from " + remote_ + " did not finish within " +
                                std::to_string(timeout_.count()) + " ms; refused"));
      }
      return handler_(ProtocolError("TLS handshake from " + remote_ +
                                    " failed: " + DescribeError(ec) + "; refused"));
    }
    SSL* ssl = stream_->native_handle();
    std::vector<std::string> named;
    for (const auto& name : allowed_) {
      if (PeerCertificateHasName(ssl, name)) named.push_back(name);
    }
    if (named.size() == 1) {
      return handler_(AcceptedTls{std::move(stream_), named.front(), remote_, std::move(slot_)});
    }
    const auto join = [](const std::vector<std::string>& names) {
      std::string out;
      for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
      return out;
    };
    const std::string got = DescribePeerCertificate(ssl);
    stream_->lowest_layer().close(ignored);
    if (named.size() > 1) {  // whose peer would it be? not ours to guess
      return handler_(ProtocolError("peer " + remote_ + " presented a certificate for " + got +
                                    ", which names several roles (" + join(named) +
                                    "); a certificate must name exactly one; refused"));
    }
    handler_(ProtocolError("peer " + remote_ + " presented a certificate for " + got +
                           ", which is none of the expected " + join(allowed_) + "; refused"));
  }

  std::unique_ptr<TlsStream> stream_;
  std::vector<std::string> allowed_;
  std::chrono::milliseconds timeout_;
  TlsListener::AcceptHandler handler_;
  asio::steady_timer timer_;
  std::string remote_;
  std::shared_ptr<void> slot_;
  bool timed_out_ = false;
};

// Holds one of a listener's places while alive.
class OpenSlot {
 public:
  explicit OpenSlot(std::shared_ptr<std::atomic<std::size_t>> open) : open_(std::move(open)) {
    ++*open_;
  }
  ~OpenSlot() { --*open_; }
  OpenSlot(const OpenSlot&) = delete;
  OpenSlot& operator=(const OpenSlot&) = delete;

 private:
  std::shared_ptr<std::atomic<std::size_t>> open_;
};

}  // namespace

void AsyncConnectTls(asio::io_context& io, asio::ssl::context& ctx, Endpoint endpoint,
                     std::string expected_name, Clock::time_point deadline,
                     ConnectHandler handler) {
  auto op = std::make_shared<ConnectOp>(io, ctx, std::move(endpoint), std::move(expected_name),
                                        deadline, std::move(handler));
  asio::post(io, [op] { op->Attempt(); });
}

TlsListener::TlsListener(asio::io_context& io, asio::ssl::context& ctx)
    : ctx_(ctx),
      acceptor_(io),
      alive_(std::make_shared<bool>(true)),
      open_(std::make_shared<std::atomic<std::size_t>>(0)),
      retry_timer_(io) {}

TlsListener::~TlsListener() {
  Close();
}

Result<std::unique_ptr<TlsListener>> TlsListener::Bind(asio::io_context& io,
                                                       asio::ssl::context& ctx,
                                                       const Endpoint& at) {
  std::unique_ptr<TlsListener> listener(new TlsListener(io, ctx));
  boost::system::error_code ec;
  tcp::resolver resolver(io);
  const auto results =
      resolver.resolve(at.host, std::to_string(at.port),
                       tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || results.empty()) {
    return InvalidArgument("cannot resolve listen address " + at.ToString() + ": " +
                           DescribeError(ec) + " (use an IP address or a known host name)");
  }
  const tcp::endpoint ep = results.begin()->endpoint();
  auto& acc = listener->acceptor_;
  if (acc.open(ep.protocol(), ec); ec) {
    return IoError("cannot open a socket for " + at.ToString() + ": " + DescribeError(ec));
  }
  acc.set_option(asio::socket_base::reuse_address(true), ec);
  if (acc.bind(ep, ec); ec) {
    std::string hint = " (change the address in the config)";
    if (ec == asio::error::address_in_use) {
      hint = " (something else listens on port " + std::to_string(at.port) +
             ": stop it, or give this daemon another port in the config)";
    } else if (ec == boost::system::errc::address_not_available) {
      hint = " (" + at.host +
             " is not an address of this machine: listen on one of its own addresses, or "
             "0.0.0.0 for all)";
    } else if (ec == asio::error::access_denied) {
      hint = " (ports below 1024 need privileges: use a port of 1024 or more)";
    }
    return IoError("cannot listen on " + at.ToString() + ": " + DescribeError(ec) + hint);
  }
  if (acc.listen(asio::socket_base::max_listen_connections, ec); ec) {
    return IoError("cannot listen on " + at.ToString() + ": " + DescribeError(ec));
  }
  listener->port_ = acc.local_endpoint(ec).port();
  return listener;
}

Result<std::unique_ptr<TlsListener>> TlsListener::Adopt(asio::io_context& io,
                                                        asio::ssl::context& ctx, int listening_fd) {
  std::unique_ptr<TlsListener> listener(new TlsListener(io, ctx));
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(listening_fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return IoError(std::string("cannot share listening socket ") + std::to_string(listening_fd) +
                   ": " + std::strerror(errno));
  }
  const int fd = ::fcntl(listening_fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) {
    return IoError(std::string("cannot share a listening socket: ") + std::strerror(errno) +
                   " (out of file descriptors?)");
  }
  boost::system::error_code ec;
  listener->acceptor_.assign(addr.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), fd, ec);
  if (ec) {
    ::close(fd);
    return IoError("cannot share a listening socket: " + DescribeError(ec));
  }
  listener->port_ = listener->acceptor_.local_endpoint(ec).port();
  return listener;
}

void TlsListener::Start(std::vector<std::string> allowed_names,
                        std::chrono::milliseconds handshake_timeout, AcceptHandler handler) {
  allowed_names_ = std::move(allowed_names);
  handshake_timeout_ = handshake_timeout;
  handler_ = std::move(handler);
  AcceptOne();
}

void TlsListener::AcceptOne() {
  auto alive = alive_;
  acceptor_.async_accept([this, alive](const boost::system::error_code& ec, tcp::socket socket) {
    if (!*alive) return;
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      handler_(IoError("accept failed: " + DescribeError(ec) + "; retrying in 100 ms"));
      // The connection stays in the backlog, so accepting again at once (out of file
      // descriptors, say) would fail again at once: a busy loop.
      retry_timer_.expires_after(std::chrono::milliseconds(100));
      retry_timer_.async_wait([this, alive](const boost::system::error_code& tec) {
        if (!tec && *alive) AcceptOne();
      });
      return;
    }
    boost::system::error_code ignored;
    if (open_->load() >= max_open_) {
      const std::string remote = RemoteOf(socket);
      socket.close(ignored);
      handler_(Exhausted("connection from " + remote +
                         " closed at once: " + std::to_string(max_open_) +
                         " connections are already open or in their handshake; refused"));
    } else {
      socket.set_option(tcp::no_delay(true), ignored);
      auto op = std::make_shared<AcceptOp>(std::make_unique<TlsStream>(std::move(socket), ctx_),
                                           allowed_names_, handshake_timeout_, handler_,
                                           std::make_shared<OpenSlot>(open_));
      op->Start();
    }
    AcceptOne();
  });
}

void TlsListener::Close() {
  *alive_ = false;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  retry_timer_.cancel(ignored);  // the error_code overload: a destructor calls this
}

}  // namespace mpcache::net
