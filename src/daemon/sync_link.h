// SyncLink: a blocking view of one FramedConnection (dealer and client links), for code
// that runs on its own thread (a session worker, the client CLI) while the connection
// lives on an io_context run by another thread. Every call posts to that io thread and
// waits for the answer with a deadline, so a dead io thread cannot hang the caller.
// Header-only: the client CLI uses it without linking the daemon.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "daemon/message_limits.h"
#include "daemon/message_link.h"
#include "net/tls/framed_connection.h"
#include "net/tls/tls_connector.h"
#include "net/tls/tls_context.h"

namespace mpcache::daemon {

class SyncLink final : public MessageLink {
 public:
  SyncLink(net::asio::io_context& io, std::unique_ptr<net::TlsStream> stream,
           std::uint64_t session_id, std::size_t max_frame_bytes, std::string label)
      : io_(io),
        conn_(std::make_shared<net::FramedConnection>(std::move(stream), session_id,
                                                      max_frame_bytes, label)),
        label_(std::move(label)),
        write_error_(std::make_shared<Shared>()) {
    auto shared = write_error_;
    conn_->set_write_error_handler([shared](const Error& e) {
      std::lock_guard<std::mutex> lock(shared->mu);
      if (!shared->error) shared->error = e;
    });
  }
  ~SyncLink() override { Close(); }
  SyncLink(const SyncLink&) = delete;
  SyncLink& operator=(const SyncLink&) = delete;

  // Connects (TLS, the peer's certificate must name `expected_name`) within `timeout`.
  // `cancelled` (optional) is polled every 100 ms: a reason gives up at once with it.
  static Result<std::unique_ptr<SyncLink>> Connect(
      net::asio::io_context& io, net::asio::ssl::context& ctx, const net::Endpoint& endpoint,
      const std::string& expected_name, std::uint64_t session_id, std::size_t max_frame_bytes,
      std::chrono::milliseconds timeout, const std::string& label,
      const std::function<std::optional<std::string>()>& cancelled = {}) {
    auto promise = std::make_shared<std::promise<Result<std::unique_ptr<net::TlsStream>>>>();
    auto future = promise->get_future();
    net::AsyncConnectTls(
        io, ctx, endpoint, expected_name, net::Clock::now() + timeout,
        [promise](Result<std::unique_ptr<net::TlsStream>> r) { promise->set_value(std::move(r)); });
    const auto give_up = std::chrono::steady_clock::now() + timeout + std::chrono::seconds(2);
    while (future.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
      if (cancelled) {
        if (std::optional<std::string> why = cancelled()) {
          return Aborted(*why + " (while connecting to " + label + ")");
        }
      }
      if (std::chrono::steady_clock::now() > give_up) {
        return Timeout("cannot reach " + label + " at " + endpoint.ToString() + " within " +
                       std::to_string(timeout.count()) + " ms");
      }
    }
    auto stream = future.get();
    if (!stream.ok()) {
      return stream.error().WithContext("cannot reach " + label + " at " + endpoint.ToString());
    }
    return std::make_unique<SyncLink>(io, std::move(stream).value(), session_id, max_frame_bytes,
                                      label);
  }

  const std::string& label() const { return label_; }

  // Queues one message (never waits for the peer). Messages travel as DATA frames of at
  // most kFragmentBytes, each led by one byte: 1 = more of this message follows, 0 = last
  // (daemon/message_limits.h).
  Status Send(std::vector<std::uint8_t> payload) override {
    {
      std::lock_guard<std::mutex> lock(write_error_->mu);
      if (write_error_->error) return *write_error_->error;
    }
    net::asio::post(io_, [conn = conn_, fs = Fragment(payload)]() mutable {
      if (conn->closed()) return;
      for (auto& f : fs) conn->Send(proto::FRAME_DATA, std::move(f));
    });
    return Status::Ok();
  }

  // Tells the peer the request is aborted (ahead of queued data).
  void SendAbort(const std::string& reason) {
    proto::Abort a;
    a.set_reason(reason);
    std::string bytes = a.SerializeAsString();
    net::asio::post(
        io_, [conn = conn_, b = std::vector<std::uint8_t>(bytes.begin(), bytes.end())]() mutable {
          if (!conn->closed()) conn->Send(proto::FRAME_ABORT, std::move(b), true);
        });
  }

  // The next DATA payload, or kTimeout / kIo (connection lost or closed) / kAborted /
  // kProtocol, each naming the peer. `timeout` bounds each frame; a message may be up to
  // kMaxMessageBytes long.
  Result<std::vector<std::uint8_t>> Recv(std::chrono::milliseconds timeout) override {
    MessageAssembler message(nullptr, kMaxMessageBytes, label_);
    for (;;) {
      MPCACHE_ASSIGN_OR_RETURN(auto part, RecvFrame(timeout));
      MPCACHE_ASSIGN_OR_RETURN(bool last, message.Add(std::move(part)));
      if (last) return message.Take();
    }
  }

  // The next message, which must be of a type `limits` allows and within its size (checked
  // as fragments arrive: nothing beyond the limit is kept); `timeout` bounds the whole
  // message, so a peer cannot drip fragments forever.
  Result<std::vector<std::uint8_t>> Recv(std::chrono::milliseconds timeout,
                                         const MessageLimits& limits) {
    MessageAssembler message(&limits, kMaxMessageBytes, label_);
    const auto deadline = net::Clock::now() + timeout;
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - net::Clock::now());
      if (left.count() <= 0) {
        return Timeout(label_ + " did not send a whole message within " +
                       std::to_string(timeout.count()) + " ms");
      }
      MPCACHE_ASSIGN_OR_RETURN(auto part, RecvFrame(left));
      MPCACHE_ASSIGN_OR_RETURN(bool last, message.Add(std::move(part)));
      if (last) return message.Take();
    }
  }

  static constexpr std::size_t kMaxMessageBytes = kMaxLinkMessageBytes;
  // At most this many bytes of a peer's abort reason are shown (then "... (N bytes)").
  static constexpr std::size_t kMaxAbortReasonBytes = 256;

 private:
  // One frame within `timeout` (one deadline, fixed here). Only DATA, ABORT and CLOSE
  // travel on these links: nothing sends a HELLO on them (that is the mesh's handshake), so
  // one is a protocol error rather than something to skip — skipping it would let a peer
  // that drips HELLOs hold a Recv forever.
  Result<std::vector<std::uint8_t>> RecvFrame(std::chrono::milliseconds timeout) {
    auto promise = std::make_shared<std::promise<Result<net::Frame>>>();
    auto future = promise->get_future();
    const auto deadline = net::Clock::now() + timeout;
    net::asio::post(io_, [conn = conn_, promise, deadline] {
      if (conn->closed()) {
        promise->set_value(IoError(conn->peer_label() + ": connection closed"));
        return;
      }
      conn->ReadFrame([promise](Result<net::Frame> f) { promise->set_value(std::move(f)); },
                      deadline);
    });
    if (future.wait_until(deadline + std::chrono::seconds(2)) != std::future_status::ready) {
      return Timeout(label_ + " did not answer within " + std::to_string(timeout.count()) + " ms");
    }
    Result<net::Frame> frame = future.get();
    if (!frame.ok()) {
      if (frame.error().code() == ErrorCode::kTimeout) {
        return Timeout(label_ + " did not answer within " + std::to_string(timeout.count()) +
                       " ms");
      }
      return frame.error();
    }
    switch (frame->header.kind()) {
      case proto::FRAME_DATA:
        return std::move(frame->payload);
      case proto::FRAME_ABORT: {
        // The peer's words, shown as printable ASCII and capped: they end up in logs and in
        // the one-line errors the client prints.
        proto::Abort a;
        if (!a.ParseFromArray(frame->payload.data(), static_cast<int>(frame->payload.size()))) {
          return Aborted(label_ + " aborted the request (its reason is unreadable)");
        }
        return Aborted(label_ + " aborted the request: " +
                       net::PrintableText(a.reason(), kMaxAbortReasonBytes));
      }
      case proto::FRAME_CLOSE:
        return IoError(label_ + " closed the connection");
      default:
        return ProtocolError(label_ + " sent an unexpected " +
                             proto::FrameKind_Name(frame->header.kind()) + " frame " +
                             std::to_string(frame->header.sequence()) +
                             " (only DATA, ABORT and CLOSE travel on this link)");
    }
  }

 public:
  // Sends what is queued (at most ~2 s) and closes. Idempotent.
  void Close() {
    if (closed_) return;
    closed_ = true;
    auto promise = std::make_shared<std::promise<void>>();
    auto future = promise->get_future();
    net::asio::post(io_, [conn = conn_, promise] {
      if (conn->closed()) {
        promise->set_value();
        return;
      }
      conn->WhenDrained([conn, promise] {
        conn->Close();
        promise->set_value();
      });
    });
    if (future.wait_for(std::chrono::seconds(2)) != std::future_status::ready) {
      net::asio::post(io_, [conn = conn_] { conn->Close(); });
    }
  }

  // Closes at once (shutdown, a dead peer): pending operations fail.
  void CloseNow() {
    closed_ = true;
    net::asio::post(io_, [conn = conn_] { conn->Close(); });
  }

 private:
  struct Shared {
    std::mutex mu;
    std::optional<Error> error;
  };
  net::asio::io_context& io_;
  std::shared_ptr<net::FramedConnection> conn_;
  std::string label_;
  std::shared_ptr<Shared> write_error_;
  bool closed_ = false;
};

}  // namespace mpcache::daemon
