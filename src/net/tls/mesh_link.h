// MeshLink: one connection of the party mesh (tls_mesh.h) from the end of its TLS 1.3
// handshake on, with the TLS session driven by hand. OpenSSL reads and writes two memory
// BIOs; whichever thread needs the connection moves the bytes between them and the
// non-blocking socket with plain recv/send calls. So the party's own thread encrypts and
// sends its frames and reads and decrypts its peers' frames itself: a message costs no
// hand-over to an io thread and back (docs/network.md "Round latency").
//
// The frames are FramedConnection's (frame_rules.h): [u32 LE header length][FrameHeader]
// [payload], and every received frame is checked (header size, session, sequence number,
// kind, payload limit) before its payload is allocated.
//
// Thread-safety: every public method takes the link's lock, so the party's thread, the
// mesh's writer thread and an Abort from any thread may use one link at once. The Async*
// methods are for the mesh setup: they run on the thread that runs the setup's io_context
// (the socket stays registered with it), and nothing else uses the link meanwhile.
#pragma once

#include <openssl/ssl.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "net/tls/asio.h"
#include "net/tls/frame_rules.h"
#include "net/tls/tls_connector.h"

namespace mpcache::net {

class MeshLink : public std::enable_shared_from_this<MeshLink> {
 public:
  // Takes over `stream` right after its handshake, with no operation outstanding on it:
  // its socket and its SSL session, including bytes of the peer's that the stream has read
  // from the socket already (a hello sent right behind the handshake). `peer_label` names
  // the peer in errors ("party 1 (mpcache-party-1)").
  static Result<std::shared_ptr<MeshLink>> Adopt(std::unique_ptr<TlsStream> stream,
                                                 std::uint64_t session_id,
                                                 std::size_t max_payload_bytes,
                                                 std::string peer_label);
  ~MeshLink();
  MeshLink(const MeshLink&) = delete;
  MeshLink& operator=(const MeshLink&) = delete;

  const std::string& peer_label() const { return rules_.peer_label; }
  // The socket, for poll(). It stays open (Close() only shuts it down) until the link dies.
  int native_handle() const { return fd_; }

  // Queues one frame. `urgent` frames (aborts) go ahead of every frame not started yet.
  // Frames queued after Close() or a write failure are dropped.
  void Queue(proto::FrameKind kind, std::vector<std::uint8_t> payload, bool urgent = false);
  // Encrypts and sends what the socket takes now, without waiting. True when nothing is
  // left to write (everything sent, or the link cannot write any more).
  bool WriteSome();
  bool want_write() const;
  // The first write failure: kIo naming the peer, or kInternal for a frame of more than
  // 2^32-1 bytes (never sent).
  std::optional<Error> write_error() const;

  // What ReadAvailable does after handing a frame over: read on, stop reading this link
  // for good (the peer's CLOSE: nothing may follow it), or drop the connection.
  enum class Next { kMore, kStop, kDrop };
  using FrameSink = std::function<Next(Frame)>;
  // Reads, decrypts and checks what has arrived, without waiting, and hands each whole
  // frame to `sink` in order (under the link's lock: `sink` must not call the link). Stops
  // once `budget` bytes came from the socket in this call and returns true then (more may
  // be waiting); false when everything that arrived was taken. A lost connection (kIo) or
  // a broken frame rule (kProtocol) is returned once, and the link is closed.
  Result<bool> ReadAvailable(const FrameSink& sink, std::size_t budget);
  // Reading is not over (no error, no kStop, not closed).
  bool want_read() const;

  // Shuts the connection down (the peer sees it end; pending Async* operations end with
  // an error). Idempotent.
  void Close();
  bool closed() const;

  // Setup only (io_context thread). The next frame; with a deadline, the link is closed
  // when it passes and `handler` gets kTimeout. The link keeps the handler until it runs:
  // a handler must hold its link weakly, or the two leak if it never runs.
  using FrameHandler = std::function<void(Result<Frame>)>;
  void AsyncReadFrame(FrameHandler handler, std::optional<Clock::time_point> deadline = {});
  // Queue() and write it out in the background.
  void Send(proto::FrameKind kind, std::vector<std::uint8_t> payload);
  // Calls `done` once everything queued is written (or writing failed, or the link closed).
  void AsyncDrain(std::function<void()> done);

 private:
  struct OutFrame {
    std::vector<std::uint8_t> head;  // length prefix + serialized header
    std::vector<std::uint8_t> payload;
    std::size_t done = 0;  // bytes of head + payload handed to TLS
  };
  enum class ReadState { kPrefix, kHeader, kPayload };
  // What NextFrameLocked found.
  enum class Got { kFrame, kNothing, kBudget };

  MeshLink(asio::ip::tcp::socket socket, SSL* ssl, BIO* rbio, BIO* wbio, std::uint64_t session_id,
           std::size_t max_payload_bytes, std::string peer_label);

  bool WriteSomeLocked();
  void EncryptNextLocked();
  void SslWriteLocked(const std::uint8_t* data, std::size_t size);
  void TakeCipherLocked();
  void FailWriteLocked(Error error);
  bool WantWriteLocked() const;

  Result<Got> NextFrameLocked(Frame* out, std::size_t budget);
  Result<bool> FillPlainLocked(std::size_t budget);  // false: nothing more now
  Result<bool> RecvLocked();                         // false: the socket has nothing now
  Error ReadFailedLocked(Error error);
  void CloseLocked();

  void ContinueAsyncRead();
  void FinishAsyncRead(Result<Frame> result);

  mutable std::mutex mu_;
  asio::ip::tcp::socket socket_;
  int fd_ = -1;
  SSL* ssl_ = nullptr;
  BIO* rbio_ = nullptr;  // ciphertext from the peer, fed by recv (owned by ssl_)
  BIO* wbio_ = nullptr;  // ciphertext to the peer, drained by send (owned by ssl_)
  std::uint64_t session_id_;
  FrameRules rules_;
  bool closed_ = false;

  // Writing.
  std::deque<OutFrame> queue_;
  std::vector<std::uint8_t> stage_;   // plaintext gathered for one SSL_write
  std::vector<std::uint8_t> cipher_;  // ciphertext not sent yet, from cipher_sent_ on
  std::size_t cipher_sent_ = 0;
  std::uint64_t next_send_sequence_ = 0;
  std::optional<Error> write_error_;

  // Reading.
  std::vector<std::uint8_t> recv_buf_;  // one recv's ciphertext
  std::vector<std::uint8_t> plain_;     // decrypted bytes not parsed yet: [plain_begin_, end_)
  std::size_t plain_begin_ = 0;
  std::size_t plain_end_ = 0;
  bool socket_drained_ = false;  // a recv of this pass came back short: nothing more for now
  std::size_t pass_bytes_ = 0;   // from the socket in this pass
  ReadState state_ = ReadState::kPrefix;
  std::vector<std::uint8_t> head_;  // prefix, then header bytes, of the frame being read
  std::size_t head_need_ = 4;
  Frame frame_;  // the frame being read
  std::size_t payload_got_ = 0;
  std::uint64_t next_recv_sequence_ = 0;
  bool read_over_ = false;
  std::optional<Error> read_error_;

  // Setup.
  FrameHandler read_handler_;
  asio::steady_timer read_timer_;
  bool read_timed_out_ = false;
};

}  // namespace mpcache::net
