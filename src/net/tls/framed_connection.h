// One authenticated TLS connection carrying MPCache frames (proto/mesh.proto):
//
//   [u32 little-endian header length][FrameHeader][payload]
//
// Writes are queued and go out one async_write at a time (several whole frames
// gathered per write), so Send never waits for the peer. Reads deliver one frame at a
// time, validated: header size, session id, sequence number, kind and payload size
// against the configured maximum. Used by the party mesh and by the dealer and client
// links. Every method must be called on the thread running the connection's io_context.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "mesh.pb.h"
#include "net/tls/asio.h"
#include "net/tls/frame_rules.h"
#include "net/tls/tls_connector.h"

namespace mpcache::net {

class FramedConnection : public std::enable_shared_from_this<FramedConnection> {
 public:
  // `peer_label` names the peer in errors ("party 1 (mpcache-party-1)").
  FramedConnection(std::unique_ptr<TlsStream> stream, std::uint64_t session_id,
                   std::size_t max_payload_bytes, std::string peer_label);
  FramedConnection(const FramedConnection&) = delete;
  FramedConnection& operator=(const FramedConnection&) = delete;

  // Queues one frame. `urgent` frames (aborts) go ahead of frames not yet being written.
  // A write failure is reported once to the write-error handler; later sends are dropped.
  void Send(proto::FrameKind kind, std::vector<std::uint8_t> payload, bool urgent = false);
  void set_write_error_handler(std::function<void(const Error&)> h) {
    on_write_error_ = std::move(h);
  }

  // Reads the next frame. With a deadline, the connection is closed when it passes and
  // the handler gets kTimeout. Frames that break the rules give kProtocol (the caller
  // should Close()); a lost connection gives kIo. The connection keeps the handler until it
  // runs: a handler must hold its connection weakly, or the two leak if it never runs.
  using FrameHandler = std::function<void(Result<Frame>)>;
  void ReadFrame(FrameHandler handler, std::optional<Clock::time_point> deadline = {});

  // Calls `done` once every queued frame has been written (or writing failed).
  void WhenDrained(std::function<void()> done);

  // Closes the socket; pending operations complete with errors.
  void Close();
  bool closed() const { return closed_; }

  const std::string& peer_label() const { return rules_.peer_label; }
  std::uint64_t bytes_written() const { return bytes_written_; }
  TlsStream& stream() { return *stream_; }

 private:
  struct OutFrame {
    std::vector<std::uint8_t> head;  // length prefix + serialized header
    std::vector<std::uint8_t> payload;
  };
  void StartWrite();
  void OnWritten(const boost::system::error_code& ec, std::size_t bytes);
  void ReadHeader();
  void ReadPayload(Frame frame);
  void FinishRead(Result<Frame> result);
  Error ReadError(const boost::system::error_code& ec, std::string_view what) const;

  std::unique_ptr<TlsStream> stream_;
  std::uint64_t session_id_;
  FrameRules rules_;  // what received frames must follow (session, payload limit, peer)

  std::deque<OutFrame> queue_;
  std::size_t in_flight_ = 0;  // frames at the front of queue_ being written
  bool writing_ = false;
  bool write_failed_ = false;
  std::uint64_t next_send_sequence_ = 0;
  std::uint64_t bytes_written_ = 0;
  std::function<void(const Error&)> on_write_error_;
  std::vector<std::function<void()>> drained_;

  std::uint8_t length_prefix_[4] = {};
  std::vector<std::uint8_t> header_bytes_;
  std::uint64_t next_recv_sequence_ = 0;
  FrameHandler read_handler_;
  asio::steady_timer read_timer_;
  bool read_timed_out_ = false;
  bool closed_ = false;
};

}  // namespace mpcache::net
