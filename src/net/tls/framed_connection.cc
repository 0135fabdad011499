#include "net/tls/framed_connection.h"

#include <algorithm>
#include <limits>

#include "net/tls/tls_context.h"

namespace mpcache::net {
namespace {

constexpr std::size_t kMaxFramesPerWrite = 16;

}  // namespace

FramedConnection::FramedConnection(std::unique_ptr<TlsStream> stream, std::uint64_t session_id,
                                   std::size_t max_payload_bytes, std::string peer_label)
    : stream_(std::move(stream)),
      session_id_(session_id),
      rules_{session_id, max_payload_bytes, std::move(peer_label)},
      read_timer_(stream_->get_executor()) {}

void FramedConnection::Send(proto::FrameKind kind, std::vector<std::uint8_t> payload, bool urgent) {
  if (closed_ || write_failed_) return;
  if (payload.size() > std::numeric_limits<std::uint32_t>::max()) {
    // payload_length would wrap and the peer would read the rest as frames: never send it.
    write_failed_ = true;  // nothing more is written on this connection
    if (on_write_error_) {
      on_write_error_(Internal("a frame of " + std::to_string(payload.size()) + " bytes to " +
                               rules_.peer_label +
                               " is over the 2^32-1 byte frame limit; not sent"));
    }
    return;
  }
  OutFrame frame;
  frame.head = EncodeFrameHead(session_id_, kind == proto::FRAME_ABORT ? 0 : next_send_sequence_++,
                               kind, static_cast<std::uint32_t>(payload.size()));
  frame.payload = std::move(payload);
  if (urgent) {
    queue_.insert(queue_.begin() + static_cast<std::ptrdiff_t>(in_flight_), std::move(frame));
  } else {
    queue_.push_back(std::move(frame));
  }
  if (!writing_) StartWrite();
}

void FramedConnection::StartWrite() {
  if (queue_.empty() || closed_ || write_failed_) {
    auto waiters = std::move(drained_);
    drained_.clear();
    for (auto& w : waiters) w();
    return;
  }
  in_flight_ = std::min(queue_.size(), kMaxFramesPerWrite);
  std::vector<asio::const_buffer> buffers;
  buffers.reserve(2 * in_flight_);
  for (std::size_t i = 0; i < in_flight_; ++i) {
    buffers.emplace_back(asio::buffer(queue_[i].head));
    if (!queue_[i].payload.empty()) buffers.emplace_back(asio::buffer(queue_[i].payload));
  }
  writing_ = true;
  auto self = shared_from_this();
  asio::async_write(*stream_, buffers,
                    [self](const boost::system::error_code& ec, std::size_t bytes) {
                      self->OnWritten(ec, bytes);
                    });
}

void FramedConnection::OnWritten(const boost::system::error_code& ec, std::size_t bytes) {
  writing_ = false;
  bytes_written_ += bytes;
  queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(in_flight_));
  in_flight_ = 0;
  if (ec && !write_failed_) {
    write_failed_ = true;
    queue_.clear();
    if (on_write_error_) {
      on_write_error_(IoError("sending to " + rules_.peer_label + " failed: " + DescribeError(ec)));
    }
  }
  StartWrite();
}

void FramedConnection::WhenDrained(std::function<void()> done) {
  if (!writing_ && (queue_.empty() || closed_ || write_failed_)) {
    done();
    return;
  }
  drained_.push_back(std::move(done));
}

void FramedConnection::ReadFrame(FrameHandler handler, std::optional<Clock::time_point> deadline) {
  read_handler_ = std::move(handler);
  if (closed_) {
    return FinishRead(IoError("connection to " + rules_.peer_label + " is closed"));
  }
  if (deadline) {
    read_timed_out_ = false;
    read_timer_.expires_at(*deadline);
    std::weak_ptr<FramedConnection> weak = weak_from_this();
    read_timer_.async_wait([weak](const boost::system::error_code& ec) {
      auto self = weak.lock();
      if (ec || !self) return;
      self->read_timed_out_ = true;
      boost::system::error_code ignored;
      self->stream_->lowest_layer().close(ignored);
    });
  }
  ReadHeader();
}

Error FramedConnection::ReadError(const boost::system::error_code& ec,
                                  std::string_view what) const {
  if (read_timed_out_) {
    return Timeout("no " + std::string(what) + " from " + rules_.peer_label + " in time");
  }
  if (ec == asio::error::eof || ec == asio::ssl::error::stream_truncated ||
      ec == asio::error::connection_reset) {
    return IoError("connection to " + rules_.peer_label + " lost (" + DescribeError(ec) + ")");
  }
  return IoError("reading " + std::string(what) + " from " + rules_.peer_label +
                 " failed: " + DescribeError(ec));
}

void FramedConnection::ReadHeader() {
  auto self = shared_from_this();
  asio::async_read(
      *stream_, asio::buffer(length_prefix_),
      [self](const boost::system::error_code& ec, std::size_t) {
        if (ec) return self->FinishRead(self->ReadError(ec, "frame"));
        auto len =
            CheckHeaderLength(std::span<const std::uint8_t, 4>(self->length_prefix_), self->rules_);
        if (!len.ok()) return self->FinishRead(len.error());
        self->header_bytes_.resize(*len);
        asio::async_read(*self->stream_, asio::buffer(self->header_bytes_),
                         [self](const boost::system::error_code& hec, std::size_t) {
                           if (hec) return self->FinishRead(self->ReadError(hec, "frame header"));
                           auto header = CheckFrameHeader(self->header_bytes_, self->rules_,
                                                          &self->next_recv_sequence_);
                           if (!header.ok()) return self->FinishRead(header.error());
                           Frame frame;
                           frame.header = std::move(*header);
                           self->ReadPayload(std::move(frame));
                         });
      });
}

void FramedConnection::ReadPayload(Frame frame) {
  frame.payload.resize(frame.header.payload_length());
  if (frame.payload.empty()) return FinishRead(std::move(frame));
  auto self = shared_from_this();
  auto shared_frame = std::make_shared<Frame>(std::move(frame));
  asio::async_read(*stream_, asio::buffer(shared_frame->payload),
                   [self, shared_frame](const boost::system::error_code& ec, std::size_t) {
                     if (ec) return self->FinishRead(self->ReadError(ec, "frame payload"));
                     self->FinishRead(std::move(*shared_frame));
                   });
}

void FramedConnection::FinishRead(Result<Frame> result) {
  read_timer_.cancel();
  auto handler = std::move(read_handler_);
  read_handler_ = nullptr;
  if (handler) handler(std::move(result));
}

void FramedConnection::Close() {
  if (closed_) return;
  closed_ = true;
  read_timer_.cancel();
  boost::system::error_code ignored;
  stream_->lowest_layer().cancel(ignored);
  stream_->lowest_layer().close(ignored);
}

}  // namespace mpcache::net
