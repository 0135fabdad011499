#include "net/tls/mesh_link.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <limits>
#include <system_error>

namespace mpcache::net {
namespace {

constexpr std::size_t kStageBytes = std::size_t{64} << 10;  // plaintext per SSL_write
constexpr std::size_t kRecvBytes = std::size_t{64} << 10;   // ciphertext per recv
constexpr std::size_t kPlainBytes = 16384;                  // one TLS record's plaintext
// A payload with at least this much still to come is decrypted straight into the frame.
constexpr std::size_t kDirectReadBytes = 16384;

std::string ErrnoText(int err) {
  return std::system_category().message(err);
}

// The OpenSSL error queue, for an error message (the queue is cleared).
std::string TlsErrorText() {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? std::string("TLS error") : "TLS error: " + out;
}

}  // namespace

Result<std::shared_ptr<MeshLink>> MeshLink::Adopt(std::unique_ptr<TlsStream> stream,
                                                  std::uint64_t session_id,
                                                  std::size_t max_payload_bytes,
                                                  std::string peer_label) {
  SSL* ssl = stream->native_handle();
  // Asio's SSL engine talks to OpenSSL through a BIO pair: what it read from the socket and
  // OpenSSL has not consumed yet waits in the pair, and is moved to the link's own BIO.
  BIO* pair = SSL_get_rbio(ssl);
  if (pair == nullptr || pair != SSL_get_wbio(ssl) || BIO_ctrl_wpending(pair) != 0) {
    return Internal("the TLS connection to " + peer_label +
                    " has handshake bytes not sent yet; cannot take it over");
  }
  std::vector<std::uint8_t> early;
  for (;;) {
    std::uint8_t buf[4096];
    const int n = BIO_read(pair, buf, sizeof(buf));
    if (n <= 0) break;
    early.insert(early.end(), buf, buf + n);
  }
  BIO* rbio = BIO_new(BIO_s_mem());
  BIO* wbio = BIO_new(BIO_s_mem());
  if (rbio == nullptr || wbio == nullptr ||
      (!early.empty() && BIO_write(rbio, early.data(), static_cast<int>(early.size())) !=
                             static_cast<int>(early.size()))) {
    BIO_free(rbio);
    BIO_free(wbio);
    return Internal("out of memory taking over the TLS connection to " + peer_label);
  }
  BIO_set_mem_eof_return(rbio, -1);  // empty means "no bytes yet", not the end
  SSL_up_ref(ssl);                   // the stream's engine frees its reference below
  SSL_set_bio(ssl, rbio, wbio);      // (frees the engine's end of the pair)
  // Whole writes (the engine asked for partial ones) and buffers kept between records.
  SSL_clear_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_RELEASE_BUFFERS);
  asio::ip::tcp::socket socket(std::move(stream->next_layer()));
  stream.reset();
  boost::system::error_code ec;
  socket.non_blocking(true, ec);
  if (ec) {
    SSL_free(ssl);
    return Internal("cannot make the socket to " + peer_label + " non-blocking: " + ec.message());
  }
  return std::shared_ptr<MeshLink>(new MeshLink(std::move(socket), ssl, rbio, wbio, session_id,
                                                max_payload_bytes, std::move(peer_label)));
}

MeshLink::MeshLink(asio::ip::tcp::socket socket, SSL* ssl, BIO* rbio, BIO* wbio,
                   std::uint64_t session_id, std::size_t max_payload_bytes, std::string peer_label)
    : socket_(std::move(socket)),
      fd_(socket_.native_handle()),
      ssl_(ssl),
      rbio_(rbio),
      wbio_(wbio),
      session_id_(session_id),
      rules_{session_id, max_payload_bytes, std::move(peer_label)},
      recv_buf_(kRecvBytes),
      plain_(kPlainBytes),
      read_timer_(socket_.get_executor()) {
  head_.reserve(64);
}

MeshLink::~MeshLink() {
  SSL_free(ssl_);  // and both BIOs; the socket closes with socket_
}

// ---- Writing

void MeshLink::Queue(proto::FrameKind kind, std::vector<std::uint8_t> payload, bool urgent) {
  std::lock_guard lock(mu_);
  if (closed_ || write_error_) return;
  if (payload.size() > std::numeric_limits<std::uint32_t>::max()) {
    // payload_length would wrap and the peer would read the rest as frames: never send it.
    FailWriteLocked(Internal("a frame of " + std::to_string(payload.size()) + " bytes to " +
                             rules_.peer_label + " is over the 2^32-1 byte frame limit; not sent"));
    return;
  }
  OutFrame frame;
  frame.head = EncodeFrameHead(session_id_, kind == proto::FRAME_ABORT ? 0 : next_send_sequence_++,
                               kind, static_cast<std::uint32_t>(payload.size()));
  frame.payload = std::move(payload);
  if (urgent) {
    auto at = queue_.begin();
    if (at != queue_.end() && at->done > 0) ++at;  // a frame under way is finished first
    queue_.insert(at, std::move(frame));
  } else {
    queue_.push_back(std::move(frame));
  }
}

bool MeshLink::WriteSome() {
  std::lock_guard lock(mu_);
  return WriteSomeLocked();
}

bool MeshLink::want_write() const {
  std::lock_guard lock(mu_);
  return WantWriteLocked();
}

std::optional<Error> MeshLink::write_error() const {
  std::lock_guard lock(mu_);
  return write_error_;
}

bool MeshLink::WantWriteLocked() const {
  return !closed_ && !write_error_ &&
         (cipher_sent_ < cipher_.size() || !queue_.empty() || BIO_ctrl_pending(wbio_) > 0);
}

bool MeshLink::WriteSomeLocked() {
  if (closed_ || write_error_) return true;
  for (;;) {
    TakeCipherLocked();
    while (cipher_sent_ < cipher_.size()) {
      const ssize_t n = ::send(fd_, cipher_.data() + cipher_sent_, cipher_.size() - cipher_sent_,
                               MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        cipher_sent_ += static_cast<std::size_t>(n);
        continue;
      }
      const int err = n < 0 ? errno : EPIPE;
      if (err == EINTR) continue;
      if (err == EAGAIN || err == EWOULDBLOCK) return false;
      FailWriteLocked(IoError("sending to " + rules_.peer_label + " failed: " + ErrnoText(err)));
      return true;
    }
    cipher_.clear();
    cipher_sent_ = 0;
    if (queue_.empty()) return true;
    EncryptNextLocked();
    if (write_error_) return true;
  }
}

// Moves what OpenSSL wrote (records, and any answer a read produced) behind the unsent
// ciphertext, in order.
void MeshLink::TakeCipherLocked() {
  const std::size_t pending = BIO_ctrl_pending(wbio_);
  if (pending == 0) return;
  const std::size_t old = cipher_.size();
  cipher_.resize(old + pending);
  const int n = BIO_read(wbio_, cipher_.data() + old, static_cast<int>(pending));
  cipher_.resize(old + static_cast<std::size_t>(std::max(n, 0)));
}

// Hands the next kStageBytes of queued frames to TLS: gathered into one buffer (small
// frames share records), or straight from a long payload.
void MeshLink::EncryptNextLocked() {
  stage_.clear();
  while (!queue_.empty() && stage_.size() < kStageBytes) {
    OutFrame& f = queue_.front();
    const std::size_t head = f.head.size();
    const std::size_t total = head + f.payload.size();
    if (stage_.empty() && f.done >= head && total - f.done >= kStageBytes) {
      SslWriteLocked(f.payload.data() + (f.done - head), kStageBytes);
      f.done += kStageBytes;
      if (f.done == total) queue_.pop_front();
      return;
    }
    std::size_t room = kStageBytes - stage_.size();
    if (f.done < head) {
      const std::size_t take = std::min(head - f.done, room);
      stage_.insert(stage_.end(), f.head.begin() + static_cast<std::ptrdiff_t>(f.done),
                    f.head.begin() + static_cast<std::ptrdiff_t>(f.done + take));
      f.done += take;
      room -= take;
    }
    if (f.done >= head && room > 0) {
      const std::size_t off = f.done - head;
      const std::size_t take = std::min(f.payload.size() - off, room);
      stage_.insert(stage_.end(), f.payload.begin() + static_cast<std::ptrdiff_t>(off),
                    f.payload.begin() + static_cast<std::ptrdiff_t>(off + take));
      f.done += take;
    }
    if (f.done < total) break;  // the stage is full
    queue_.pop_front();
  }
  if (!stage_.empty()) SslWriteLocked(stage_.data(), stage_.size());
}

void MeshLink::SslWriteLocked(const std::uint8_t* data, std::size_t size) {
  while (size > 0) {
    ERR_clear_error();
    const int n = SSL_write(ssl_, data, static_cast<int>(std::min<std::size_t>(size, INT_MAX)));
    if (n <= 0) {
      FailWriteLocked(IoError("sending to " + rules_.peer_label + " failed: " + TlsErrorText()));
      return;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

void MeshLink::FailWriteLocked(Error error) {
  if (!write_error_) write_error_ = std::move(error);
  queue_.clear();
  cipher_.clear();
  cipher_sent_ = 0;
}

// ---- Reading

Result<bool> MeshLink::ReadAvailable(const FrameSink& sink, std::size_t budget) {
  std::lock_guard lock(mu_);
  if (closed_ || read_over_) return false;
  pass_bytes_ = 0;
  socket_drained_ = false;
  for (;;) {
    Frame frame;
    MPCACHE_ASSIGN_OR_RETURN(Got got, NextFrameLocked(&frame, budget));
    if (got == Got::kNothing) return false;
    if (got == Got::kBudget) return true;
    switch (sink(std::move(frame))) {
      case Next::kMore:
        break;
      case Next::kStop:
        read_over_ = true;
        return false;
      case Next::kDrop:
        read_over_ = true;
        CloseLocked();
        return false;
    }
  }
}

bool MeshLink::want_read() const {
  std::lock_guard lock(mu_);
  return !closed_ && !read_over_;
}

Error MeshLink::ReadFailedLocked(Error error) {
  read_over_ = true;
  if (!read_error_) read_error_ = error;
  CloseLocked();
  return error;
}

Result<MeshLink::Got> MeshLink::NextFrameLocked(Frame* out, std::size_t budget) {
  for (;;) {
    const std::size_t avail = plain_end_ - plain_begin_;
    if (state_ == ReadState::kPayload) {
      const std::size_t take = std::min(frame_.payload.size() - payload_got_, avail);
      if (take > 0) {
        std::memcpy(frame_.payload.data() + payload_got_, plain_.data() + plain_begin_, take);
        payload_got_ += take;
        plain_begin_ += take;
      }
      if (payload_got_ == frame_.payload.size()) {
        *out = std::move(frame_);
        frame_ = Frame{};
        state_ = ReadState::kPrefix;
        return Got::kFrame;
      }
    } else {
      const std::size_t take = std::min(head_need_ - head_.size(), avail);
      head_.insert(head_.end(), plain_.begin() + static_cast<std::ptrdiff_t>(plain_begin_),
                   plain_.begin() + static_cast<std::ptrdiff_t>(plain_begin_ + take));
      plain_begin_ += take;
      if (head_.size() == head_need_) {
        if (state_ == ReadState::kPrefix) {
          auto len = CheckHeaderLength(std::span<const std::uint8_t, 4>(head_.data(), 4), rules_);
          if (!len.ok()) return ReadFailedLocked(len.error());
          head_need_ = *len;
          state_ = ReadState::kHeader;
        } else {
          auto header = CheckFrameHeader(head_, rules_, &next_recv_sequence_);
          if (!header.ok()) return ReadFailedLocked(header.error());
          frame_.header = std::move(*header);
          frame_.payload.resize(frame_.header.payload_length());
          payload_got_ = 0;
          head_need_ = 4;
          state_ = ReadState::kPayload;
        }
        head_.clear();
        continue;
      }
    }
    // The buffered plaintext is used up and the frame is not whole yet.
    MPCACHE_ASSIGN_OR_RETURN(bool more, FillPlainLocked(budget));
    if (!more) return pass_bytes_ >= budget ? Got::kBudget : Got::kNothing;
  }
}

Result<bool> MeshLink::FillPlainLocked(std::size_t budget) {
  for (;;) {
    const std::size_t rest =
        state_ == ReadState::kPayload ? frame_.payload.size() - payload_got_ : 0;
    const bool direct = rest >= kDirectReadBytes;
    std::uint8_t* dst = direct ? frame_.payload.data() + payload_got_ : plain_.data();
    const std::size_t cap = direct ? std::min<std::size_t>(rest, INT_MAX) : plain_.size();
    ERR_clear_error();
    const int n = SSL_read(ssl_, dst, static_cast<int>(cap));
    if (n > 0) {
      if (direct) {
        payload_got_ += static_cast<std::size_t>(n);
      } else {
        plain_begin_ = 0;
        plain_end_ = static_cast<std::size_t>(n);
      }
      return true;
    }
    switch (SSL_get_error(ssl_, n)) {
      case SSL_ERROR_WANT_READ: {
        if (pass_bytes_ >= budget) return false;
        MPCACHE_ASSIGN_OR_RETURN(bool got, RecvLocked());
        if (!got) return false;
        continue;
      }
      case SSL_ERROR_ZERO_RETURN:
        return ReadFailedLocked(
            IoError("connection to " + rules_.peer_label + " lost (it ended its TLS session)"));
      default:
        return ReadFailedLocked(
            IoError("reading from " + rules_.peer_label + " failed: " + TlsErrorText()));
    }
  }
}

Result<bool> MeshLink::RecvLocked() {
  if (socket_drained_) return false;
  for (;;) {
    const ssize_t n = ::recv(fd_, recv_buf_.data(), recv_buf_.size(), 0);
    if (n > 0) {
      if (BIO_write(rbio_, recv_buf_.data(), static_cast<int>(n)) != static_cast<int>(n)) {
        return ReadFailedLocked(Internal("out of memory reading from " + rules_.peer_label));
      }
      pass_bytes_ += static_cast<std::size_t>(n);
      // A short read took everything there was: the next one would find nothing.
      if (static_cast<std::size_t>(n) < recv_buf_.size()) socket_drained_ = true;
      return true;
    }
    if (n == 0) {
      return ReadFailedLocked(
          IoError("connection to " + rules_.peer_label + " lost (end of file)"));
    }
    const int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      socket_drained_ = true;
      return false;
    }
    if (err == ECONNRESET || err == EPIPE) {
      return ReadFailedLocked(
          IoError("connection to " + rules_.peer_label + " lost (" + ErrnoText(err) + ")"));
    }
    return ReadFailedLocked(
        IoError("reading from " + rules_.peer_label + " failed: " + ErrnoText(err)));
  }
}

// ---- Closing

void MeshLink::Close() {
  std::lock_guard lock(mu_);
  CloseLocked();
}

bool MeshLink::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

void MeshLink::CloseLocked() {
  if (closed_) return;
  closed_ = true;
  queue_.clear();
  // Shut down, not closed: another thread may be polling the descriptor, which must not
  // be reused before the link dies.
  ::shutdown(fd_, SHUT_RDWR);
  boost::system::error_code ignored;
  socket_.cancel(ignored);  // (setup: pending waits end)
  read_timer_.cancel();
}

// ---- Setup

void MeshLink::AsyncReadFrame(FrameHandler handler, std::optional<Clock::time_point> deadline) {
  read_handler_ = std::move(handler);
  if (deadline) {
    read_timed_out_ = false;
    read_timer_.expires_at(*deadline);
    std::weak_ptr<MeshLink> weak = weak_from_this();
    read_timer_.async_wait([weak](const boost::system::error_code& ec) {
      auto self = weak.lock();
      if (ec || !self) return;
      self->read_timed_out_ = true;
      self->Close();
    });
  }
  ContinueAsyncRead();
}

void MeshLink::ContinueAsyncRead() {
  Frame frame;
  Result<Got> got = Got::kNothing;
  {
    std::lock_guard lock(mu_);
    if (closed_ || read_over_) {
      got =
          read_error_ ? *read_error_ : IoError("connection to " + rules_.peer_label + " is closed");
    } else {
      pass_bytes_ = 0;
      socket_drained_ = false;
      got = NextFrameLocked(&frame, std::numeric_limits<std::size_t>::max());
    }
  }
  if (!got.ok()) return FinishAsyncRead(got.error());
  if (*got == Got::kFrame) return FinishAsyncRead(std::move(frame));
  socket_.async_wait(asio::socket_base::wait_read,
                     [self = shared_from_this()](const boost::system::error_code& ec) {
                       if (ec) {
                         return self->FinishAsyncRead(
                             IoError("connection to " + self->rules_.peer_label + " is closed"));
                       }
                       self->ContinueAsyncRead();
                     });
}

void MeshLink::FinishAsyncRead(Result<Frame> result) {
  read_timer_.cancel();
  if (!result.ok() && read_timed_out_) {
    result = Timeout("no frame from " + rules_.peer_label + " in time");
  }
  auto handler = std::move(read_handler_);
  read_handler_ = nullptr;
  if (handler) handler(std::move(result));
}

void MeshLink::Send(proto::FrameKind kind, std::vector<std::uint8_t> payload) {
  Queue(kind, std::move(payload));
  AsyncDrain(nullptr);
}

void MeshLink::AsyncDrain(std::function<void()> done) {
  if (WriteSome()) {
    if (done) done();
    return;
  }
  socket_.async_wait(asio::socket_base::wait_write,
                     [self = shared_from_this(),
                      done = std::move(done)](const boost::system::error_code& ec) mutable {
                       if (ec) {
                         if (done) done();
                         return;
                       }
                       self->AsyncDrain(std::move(done));
                     });
}

}  // namespace mpcache::net
