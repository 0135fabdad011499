// TlsMesh: the parties' Channel over mutually authenticated TLS 1.3 (Boost.Asio +
// OpenSSL), one connection per pair of parties.
//
// Setup is deterministic: party i listens on addresses[i] and accepts the parties with
// higher ids; it connects (retrying with backoff) to every party with a lower id. Each
// side checks the other's certificate names the expected party ("mpcache-party-<id>")
// and the two exchange a Hello (party id, party count, protocol version, session id)
// that must agree with the certificate and with their own settings. Anything else is
// refused and logged; setup fails with one error if the mesh is not complete by the
// connect deadline.
//
// After setup the party's own thread does the I/O (mesh_link.h): Send appends to a
// per-peer buffer that is cut into DATA frames of send_chunk_bytes, and full frames and
// Flush encrypt and write straight to the socket, as far as it takes them without waiting
// (a small writer thread sends the rest when the socket drains, so Send never waits for
// the peer); Recv reads and decrypts the peers' frames itself, sleeping in poll() on the
// sockets (at most recv_timeout) until the peer's byte stream holds the bytes asked for.
// A message thus wakes one thread, the receiver's. While the party's thread is away from
// Recv for a while, the writer thread reads what arrives, so aborts and lost peers are
// noticed and large sends never stall. Abort() tells every peer; a received abort makes
// every Recv fail with kAborted naming the sender. A peer that breaks the frame rules
// (oversized frame, wrong session, replayed sequence number) is disconnected and Recv
// from it fails with kProtocol. A party that failed before reaching its setup says so in
// its hello (TellSetupFailed): its peers' setup ends at once with that reason.
#pragma once

#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "net/channel.h"
#include "net/tls/asio.h"
#include "net/tls/frame_rules.h"
#include "net/tls/mesh_link.h"
#include "net/tls/tls_connector.h"
#include "net/tls/tls_context.h"

namespace spdlog {
class logger;
}

namespace mpcache::net {

struct TlsMeshOptions {
  PartyId self = 0;
  int num_parties = 3;
  // Where each party listens (index = party id). Only addresses[self] is needed to
  // Listen(); the others are needed by Connect().
  std::vector<Endpoint> addresses;
  TlsFiles tls;
  // Certificate name expected of each party; empty means PartyName(id).
  std::vector<std::string> peer_names;
  // Must be the same on all parties; every frame carries it.
  std::uint64_t session_id = 0;
  std::chrono::milliseconds connect_timeout{10000};     // whole mesh setup
  std::chrono::milliseconds handshake_timeout{5000};    // one TLS handshake + hello
  std::chrono::milliseconds recv_timeout{30000};        // one Recv
  std::chrono::milliseconds close_timeout{2000};        // graceful Close
  std::size_t max_frame_bytes = std::size_t{16} << 20;  // largest frame accepted
  std::size_t send_chunk_bytes = std::size_t{1} << 20;  // largest frame sent
  // Received but not yet Recv'd bytes allowed per peer; more is a protocol error (a peer
  // cannot exhaust our memory).
  std::size_t max_buffered_bytes = std::size_t{4} << 30;
  std::shared_ptr<spdlog::logger> logger;  // optional
  // Optional: polled every 100 ms during setup; a reason ends the setup at once with it
  // (a daemon shutting down must not wait out connect_timeout).
  std::function<std::optional<std::string>()> cancelled;
  // Optional: a socket already listening at addresses[self], which Listen() accepts on (a
  // duplicate of it) instead of binding: a daemon holds its mesh address from start to stop,
  // so that no second daemon can take it and a peer dialling between requests waits in its
  // backlog. -1: Listen() binds addresses[self] itself.
  int listen_fd = -1;
};

class TlsMesh final : public Channel {
 public:
  // Loads the certificates and binds this party's listening socket (if some party has
  // a higher id). Port 0 picks a free port: read it back with listen_port().
  static Result<std::unique_ptr<TlsMesh>> Listen(TlsMeshOptions options);
  // Listen() then Connect(): the usual way, with every address known.
  static Result<std::unique_ptr<TlsMesh>> Create(TlsMeshOptions options);

  // For a party whose request failed before its mesh was up (a dealer it cannot reach, a
  // request it refuses): tells the peers setting up this session's mesh, so that they stop at
  // once with "party <self> (<name>) could not start this session: <reason>" instead of
  // waiting out their connect_timeout. The same listen / connect / authenticate as Create,
  // with `reason` in this party's hello (Hello.setup_failed). Returns once every peer was
  // told, after `within` (a peer that reaches its setup later waits out its own timeout:
  // the error names who was not told), or when options.cancelled says so.
  static Status TellSetupFailed(TlsMeshOptions options, const std::string& reason,
                                std::chrono::milliseconds within);

  ~TlsMesh() override;
  TlsMesh(const TlsMesh&) = delete;
  TlsMesh& operator=(const TlsMesh&) = delete;

  std::uint16_t listen_port() const { return listen_port_; }

  // Connects to all peers (blocking, at most connect_timeout). A non-empty `addresses`
  // replaces options.addresses (e.g. once every party's port is known).
  Status Connect(std::vector<Endpoint> addresses = {});

  PartyId self() const override { return options_.self; }
  int num_parties() const override { return options_.num_parties; }
  Status Flush() override;

  // Thread-safe (also while Close() runs). Fails every pending and future Recv/Send on
  // this party with kAborted, even when bytes are already buffered, and sends an abort
  // frame (reason, blamed party) to every peer, ahead of queued data.
  void Abort(const std::string& reason, std::optional<PartyId> blamed = std::nullopt);
  // The abort error, if the session was aborted here or by a peer.
  std::optional<Error> aborted() const;

  // Flushes, tells every peer (CLOSE frame), waits up to close_timeout for the peers'
  // CLOSE, then shuts the connections down and stops the writer thread. Idempotent.
  Status Close();

  void set_recv_timeout(std::chrono::milliseconds t) { options_.recv_timeout = t; }
  // "party 1 (mpcache-party-1)".
  std::string PeerLabel(PartyId peer) const;

 protected:
  Status DoSend(PartyId peer, std::span<const std::uint8_t> data) override;
  Status DoRecv(PartyId peer, std::span<std::uint8_t> data) override;

 private:
  struct SetupState;
  struct Inbound {
    std::deque<std::vector<std::uint8_t>> chunks;
    std::size_t offset = 0;     // consumed bytes of chunks.front()
    std::size_t available = 0;  // unconsumed bytes in chunks
    std::optional<Error> error;
  };

  explicit TlsMesh(TlsMeshOptions options);
  Status CheckPeer(PartyId peer) const;
  Status SendAllowed(PartyId peer);
  // Hands the peer's buffered bytes to its link as a DATA frame; true if there were any.
  bool QueueData(PartyId peer);
  // Writes what the peer's link takes now; what is left goes to the writer thread.
  void WriteLink(PartyId peer);
  // Our hello; with `failed`, one that says the session failed (at `by`, or at this party).
  std::vector<std::uint8_t> HelloBytes(const std::string& failed = {},
                                       std::optional<PartyId> by = std::nullopt) const;
  // `hello` (optional) receives the peer's hello when it parsed.
  Status CheckHello(const Result<Frame>& frame, PartyId expected,
                    proto::Hello* hello = nullptr) const;
  void PeerSetupFailed(const std::shared_ptr<SetupState>& state, PartyId peer,
                       const proto::Hello& hello, const Error& error);
  Result<std::shared_ptr<MeshLink>> MakeLink(PartyId peer, std::unique_ptr<TlsStream> s);
  void OnAccepted(const std::shared_ptr<SetupState>& state, Result<AcceptedTls> accepted);
  void OnConnected(const std::shared_ptr<SetupState>& state, PartyId peer,
                   Result<std::unique_ptr<TlsStream>> stream);
  Status EndTelling(const SetupState& state);
  void Established(const std::shared_ptr<SetupState>& state, PartyId peer,
                   std::shared_ptr<MeshLink> link);
  Status StartDataPhase();

  // Reading: with read_mu_ held (one reader at a time).
  // Reads what the peer's link has; true if more may be waiting.
  bool ReadLink(PartyId peer);
  MeshLink::Next OnFrame(PartyId peer, Frame frame);
  // Sleeps until a link is readable, a wake-up or `deadline`, and reads what came.
  Status WaitAndRead(Clock::time_point deadline);

  void PeerFailed(PartyId peer, const Error& error);
  void SetAbort(Error error);
  void Wake(int fd);
  void WriterLoop();
  void StopWriter();

  TlsMeshOptions options_;
  std::string setup_failed_;                 // TellSetupFailed: the reason our hello carries
  std::unique_ptr<asio::ssl::context> ctx_;  // outlives io_ (declared first)
  asio::io_context io_;                      // the setup's; not run afterwards
  std::unique_ptr<TlsListener> listener_;
  std::uint16_t listen_port_ = 0;
  std::vector<std::shared_ptr<MeshLink>> links_;    // set during setup, fixed afterwards
  std::vector<std::vector<std::uint8_t>> pending_;  // caller thread
  std::atomic<bool> connected_ = false;
  bool closed_ = false;  // caller thread

  // One reader at a time: the party's thread in Recv and Close, or the writer thread when
  // the party's thread has been away from Recv for a while.
  std::mutex read_mu_;
  std::vector<bool> close_received_;  // read_mu_
  std::vector<pollfd> poll_fds_;      // read_mu_: WaitAndRead's
  std::vector<PartyId> poll_peers_;   // read_mu_
  std::atomic<std::uint64_t> recv_epoch_ = 0;

  mutable std::mutex mu_;
  std::vector<Inbound> inbound_;
  std::optional<Error> abort_;

  // eventfds: wake the party's thread from its poll() (an abort, a failed peer), and the
  // writer thread (output left, stop).
  int wake_reader_fd_ = -1;
  int wake_writer_fd_ = -1;
  std::atomic<bool> writer_stop_ = false;
  std::thread writer_;
};

}  // namespace mpcache::net
