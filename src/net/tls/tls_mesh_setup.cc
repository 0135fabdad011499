// TlsMesh construction and connection setup: listen, connect, authenticate, hello.
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "net/tls/tls_mesh.h"

namespace mpcache::net {

struct TlsMesh::SetupState {
  int pending = 0;
  bool finished = false;
  std::optional<Error> failure;  // fatal (connect side)
  // A peer said the session failed (its hello's setup_failed). The setup ends with that once
  // no accepted connection awaits its hello any more (each is answered with the failure, so
  // that a peer dialling us hears the cause, not a hang-up), at most kRelayGrace later.
  std::optional<Error> told;
  std::string relay_reason;
  PartyId relay_by = -1;
  Clock::time_point grace_until;
  int hellos_awaited = 0;
  // Every connection the setup took over; those that are not in the mesh when the setup
  // ends are closed then (nothing runs the setup's io_context afterwards).
  std::vector<std::weak_ptr<MeshLink>> links;
  int refused = 0;
  std::string last_refusal;
  Clock::time_point deadline;
};

TlsMesh::TlsMesh(TlsMeshOptions options) : options_(std::move(options)) {
  const auto n = static_cast<std::size_t>(options_.num_parties);
  if (options_.peer_names.empty()) {
    for (PartyId i = 0; i < options_.num_parties; ++i) options_.peer_names.push_back(PartyName(i));
  }
  links_.resize(n);
  pending_.resize(n);
  inbound_.resize(n);
  close_received_.assign(n, false);
}

Result<std::unique_ptr<TlsMesh>> TlsMesh::Listen(TlsMeshOptions options) {
  const auto& o = options;
  if (o.num_parties < 2) return InvalidArgument("a mesh needs at least 2 parties");
  if (o.self < 0 || o.self >= o.num_parties) {
    return InvalidArgument("party id " + std::to_string(o.self) + " is not in 0.." +
                           std::to_string(o.num_parties - 1));
  }
  if (static_cast<int>(o.addresses.size()) != o.num_parties) {
    return InvalidArgument("need " + std::to_string(o.num_parties) + " party addresses, got " +
                           std::to_string(o.addresses.size()));
  }
  if (!o.peer_names.empty() && static_cast<int>(o.peer_names.size()) != o.num_parties) {
    return InvalidArgument("peer_names must be empty or hold one name per party");
  }
  // A frame's payload_length is 32 bits: a larger chunk would go out with a wrapped length.
  constexpr std::size_t kMaxFrame = std::numeric_limits<std::uint32_t>::max();
  if (o.send_chunk_bytes == 0 || o.send_chunk_bytes > kMaxFrame || o.max_frame_bytes == 0 ||
      o.max_frame_bytes > kMaxFrame) {
    return InvalidArgument("send_chunk_bytes (" + std::to_string(o.send_chunk_bytes) +
                           ") and max_frame_bytes (" + std::to_string(o.max_frame_bytes) +
                           ") must be in 1..2^32-1");
  }
  std::unique_ptr<TlsMesh> mesh(new TlsMesh(std::move(options)));
  mesh->wake_reader_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  mesh->wake_writer_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (mesh->wake_reader_fd_ < 0 || mesh->wake_writer_fd_ < 0) {
    return Internal(
        "party " + std::to_string(mesh->self()) +
        ": cannot make the mesh's wake-up descriptors: " + std::system_category().message(errno));
  }
  MPCACHE_ASSIGN_OR_RETURN(mesh->ctx_, MakeTlsContext(mesh->options_.tls));
  if (mesh->options_.self < mesh->options_.num_parties - 1) {
    const auto& at = mesh->options_.addresses[static_cast<std::size_t>(mesh->options_.self)];
    auto listener = mesh->options_.listen_fd >= 0
                        ? TlsListener::Adopt(mesh->io_, *mesh->ctx_, mesh->options_.listen_fd)
                        : TlsListener::Bind(mesh->io_, *mesh->ctx_, at);
    if (!listener.ok())
      return listener.error().WithContext("party " + std::to_string(mesh->self()));
    mesh->listener_ = std::move(listener).value();
    mesh->listen_port_ = mesh->listener_->port();
  }
  return mesh;
}

Result<std::unique_ptr<TlsMesh>> TlsMesh::Create(TlsMeshOptions options) {
  MPCACHE_ASSIGN_OR_RETURN(auto mesh, Listen(std::move(options)));
  MPCACHE_RETURN_IF_ERROR(mesh->Connect());
  return mesh;
}

Status TlsMesh::TellSetupFailed(TlsMeshOptions options, const std::string& reason,
                                std::chrono::milliseconds within) {
  options.connect_timeout = std::min(options.connect_timeout, within);
  MPCACHE_ASSIGN_OR_RETURN(auto mesh, Listen(std::move(options)));
  // The reason as the peers will show it: printable, and small enough for any hello.
  mesh->setup_failed_ = PrintableText(reason.empty() ? "no reason given" : reason, 1024);
  return mesh->Connect();
}

std::string TlsMesh::PeerLabel(PartyId peer) const {
  if (peer < 0 || peer >= options_.num_parties) return "party " + std::to_string(peer);
  return "party " + std::to_string(peer) + " (" +
         options_.peer_names[static_cast<std::size_t>(peer)] + ")";
}

std::vector<std::uint8_t> TlsMesh::HelloBytes(const std::string& failed,
                                              std::optional<PartyId> by) const {
  proto::Hello hello;
  hello.set_party_id(static_cast<std::uint32_t>(options_.self));
  hello.set_num_parties(static_cast<std::uint32_t>(options_.num_parties));
  hello.set_protocol_version(kWireProtocolVersion);
  hello.set_session_id(options_.session_id);
  if (!failed.empty()) {
    hello.set_setup_failed(failed);
    if (by && *by != options_.self) hello.set_setup_failed_by(static_cast<std::uint32_t>(*by) + 1);
  } else if (!setup_failed_.empty()) {
    hello.set_setup_failed(setup_failed_);
  }
  std::vector<std::uint8_t> out(hello.ByteSizeLong());
  hello.SerializeWithCachedSizesToArray(out.data());
  return out;
}

Status TlsMesh::CheckHello(const Result<Frame>& frame, PartyId expected, proto::Hello* out) const {
  const std::string who = PeerLabel(expected);
  if (!frame.ok()) {
    if (frame.error().code() == ErrorCode::kIo) {
      return IoError(who + " closed the connection during the hello (it may have refused our " +
                     "certificate, party id or session): " + frame.error().message());
    }
    return frame.error();
  }
  if (frame->header.kind() != proto::FRAME_HELLO) {
    return ProtocolError(who + " sent frame kind " + std::to_string(frame->header.kind()) +
                         " before its hello");
  }
  HelloRules rules{expected, options_.num_parties, options_.session_id, {}};
  for (PartyId p = 0; p < options_.num_parties; ++p) rules.party_labels.push_back(PeerLabel(p));
  return CheckHelloPayload(frame->payload, rules, out);
}

Result<std::shared_ptr<MeshLink>> TlsMesh::MakeLink(PartyId peer, std::unique_ptr<TlsStream> s) {
  return MeshLink::Adopt(std::move(s), options_.session_id, options_.max_frame_bytes,
                         PeerLabel(peer));
}

Status TlsMesh::Connect(std::vector<Endpoint> addresses) {
  if (connected_ || closed_) return Internal("TlsMesh::Connect may be called once");
  if (!addresses.empty()) {
    if (static_cast<int>(addresses.size()) != options_.num_parties) {
      return InvalidArgument("need " + std::to_string(options_.num_parties) + " addresses");
    }
    options_.addresses = std::move(addresses);
  }
  auto state = std::make_shared<SetupState>();
  state->pending = options_.num_parties - 1;
  const auto start = Clock::now();
  state->deadline = start + options_.connect_timeout;
  auto guard = asio::make_work_guard(io_);

  if (listener_) {
    std::vector<std::string> allowed;
    for (PartyId j = options_.self + 1; j < options_.num_parties; ++j) {
      allowed.push_back(options_.peer_names[static_cast<std::size_t>(j)]);
    }
    listener_->Start(std::move(allowed), options_.handshake_timeout,
                     [this, state](Result<AcceptedTls> a) { OnAccepted(state, std::move(a)); });
  }
  for (PartyId i = 0; i < options_.self; ++i) {
    AsyncConnectTls(io_, *ctx_, options_.addresses[static_cast<std::size_t>(i)],
                    options_.peer_names[static_cast<std::size_t>(i)], state->deadline,
                    [this, state, i](Result<std::unique_ptr<TlsStream>> s) {
                      OnConnected(state, i, std::move(s));
                    });
  }
  try {
    while (state->pending > 0 && !state->failure && Clock::now() < state->deadline) {
      io_.run_one_until(std::min(state->deadline, Clock::now() + std::chrono::milliseconds(100)));
      // (Connections still in their TLS handshake count: they come to their hello next.)
      const bool quiet =
          state->hellos_awaited == 0 && (!listener_ || listener_->open_connections() == 0);
      if (state->told && (quiet || Clock::now() >= state->grace_until)) {
        state->failure = state->told;
      }
      if (options_.cancelled) {
        if (std::optional<std::string> why = options_.cancelled()) state->failure = Aborted(*why);
      }
    }
  } catch (const std::exception& e) {
    state->failure = Internal(std::string("mesh setup: ") + e.what());
  }
  state->finished = true;
  if (listener_) listener_->Close();
  for (const auto& weak : state->links) {
    auto link = weak.lock();
    if (link && std::find(links_.begin(), links_.end(), link) == links_.end()) link->Close();
  }
  const std::string me = "party " + std::to_string(options_.self);
  if (!setup_failed_.empty()) return EndTelling(*state);
  if (state->failure || state->pending > 0) {
    for (auto& c : links_) {
      if (c) c->Close();
    }
    if (state->failure) return state->failure->WithContext(me + ": mesh setup failed");
    std::string missing;
    for (PartyId j = 0; j < options_.num_parties; ++j) {
      if (j != options_.self && !links_[static_cast<std::size_t>(j)]) {
        missing += (missing.empty() ? "" : ", ") + PeerLabel(j);
      }
    }
    std::string msg = me + ": mesh setup not complete after " +
                      std::to_string(options_.connect_timeout.count()) + " ms; missing " + missing;
    if (state->refused > 0) {
      msg += "; refused " + std::to_string(state->refused) +
             " connection attempt(s), last: " + state->last_refusal;
    }
    return Timeout(msg);
  }
  MPCACHE_RETURN_IF_ERROR(StartDataPhase());
  if (options_.logger) {
    options_.logger->info("party {}: TLS mesh of {} parties up (session {})", options_.self,
                          options_.num_parties, options_.session_id);
  }
  return Status::Ok();
}

void TlsMesh::OnAccepted(const std::shared_ptr<SetupState>& state, Result<AcceptedTls> a) {
  if (state->finished) return;  // the stream closes with `a`
  auto refuse = [this, state](const Error& e) {
    ++state->refused;
    state->last_refusal = e.message();
    if (options_.logger) options_.logger->warn("party {}: {}", options_.self, e.message());
  };
  if (!a.ok()) return refuse(a.error());
  PartyId peer = -1;
  for (PartyId j = options_.self + 1; j < options_.num_parties; ++j) {
    if (options_.peer_names[static_cast<std::size_t>(j)] == a->peer_name) peer = j;
  }
  if (peer < 0 || links_[static_cast<std::size_t>(peer)]) {
    boost::system::error_code ignored;
    a->stream->lowest_layer().close(ignored);
    return refuse(
        ProtocolError("second connection from " + a->remote + " as " + a->peer_name + "; refused"));
  }
  auto made = MakeLink(peer, std::move(a->stream));
  if (!made.ok()) return refuse(made.error());
  std::shared_ptr<MeshLink> conn = std::move(made).value();
  state->links.push_back(conn);
  const auto hello_deadline = std::min(state->deadline, Clock::now() + options_.handshake_timeout);
  ++state->hellos_awaited;
  // The handler holds its connection weakly: the connection keeps its read handler, so a
  // strong reference would be a cycle that leaks both when the setup ends before the read does.
  conn->AsyncReadFrame(
      [this, state, weak = std::weak_ptr<MeshLink>(conn), peer, refuse](const Result<Frame>& f) {
        --state->hellos_awaited;
        auto conn = weak.lock();
        if (!conn) return;
        if (state->finished) return conn->Close();
        proto::Hello hello;
        Status s = CheckHello(f, peer, &hello);
        if (s.ok() && links_[static_cast<std::size_t>(peer)]) {
          s = ProtocolError("second connection as " + PeerLabel(peer) + "; refused");
        }
        // A peer of this session that could not start it (its hello says why).
        const bool peer_failed = !s.ok() && s.error().code() == ErrorCode::kAborted;
        if (!setup_failed_.empty() && (s.ok() || peer_failed)) {
          // Telling: our hello answers theirs with our reason, then the connection ends.
          links_[static_cast<std::size_t>(peer)] = conn;
          conn->Send(proto::FRAME_HELLO, HelloBytes());
          // (A weak reference: a callback that holds its own connection leaks it when the
          // setup ends before the write does.)
          conn->AsyncDrain([state, weak = std::weak_ptr<MeshLink>(conn)] {
            if (!state->finished) --state->pending;
            if (auto c = weak.lock()) c->Close();
          });
          return;
        }
        if (peer_failed) {
          // Our hello acknowledges theirs (the teller knows it was heard); then this setup
          // ends with their reason.
          PeerSetupFailed(state, peer, hello, s.error());
          conn->Send(proto::FRAME_HELLO, HelloBytes());
          conn->AsyncDrain([weak = std::weak_ptr<MeshLink>(conn)] {
            if (auto c = weak.lock()) c->Close();
          });
          return;
        }
        if (s.ok() && state->told) {
          // Told already: a peer still dialling hears the cause from us.
          conn->Send(proto::FRAME_HELLO, HelloBytes(state->relay_reason, state->relay_by));
          conn->AsyncDrain([weak = std::weak_ptr<MeshLink>(conn)] {
            if (auto c = weak.lock()) c->Close();
          });
          return;
        }
        if (!s.ok()) {
          conn->Close();
          return refuse(s.error());
        }
        conn->Send(proto::FRAME_HELLO, HelloBytes());
        Established(state, peer, conn);
      },
      hello_deadline);
}

void TlsMesh::OnConnected(const std::shared_ptr<SetupState>& state, PartyId peer,
                          Result<std::unique_ptr<TlsStream>> stream) {
  if (state->finished) return;
  if (!stream.ok()) {
    if (!setup_failed_.empty()) {  // telling: this peer is not told; the others may be
      state->last_refusal = stream.error().message();
      --state->pending;
      return;
    }
    if (!state->failure) state->failure = stream.error();
    return;
  }
  auto made = MakeLink(peer, std::move(stream).value());
  if (!made.ok()) {
    if (!setup_failed_.empty()) {
      state->last_refusal = made.error().message();
      --state->pending;
    } else if (!state->failure) {
      state->failure = made.error();
    }
    return;
  }
  std::shared_ptr<MeshLink> conn = std::move(made).value();
  state->links.push_back(conn);
  conn->Send(proto::FRAME_HELLO, HelloBytes());
  conn->AsyncReadFrame(
      [this, state, weak = std::weak_ptr<MeshLink>(conn), peer](const Result<Frame>& f) {
        auto conn = weak.lock();  // (weakly held: see OnAccepted)
        if (!conn) return;
        if (state->finished) return conn->Close();
        if (!setup_failed_.empty()) {
          // Telling: the peer heard us when it answers with its hello (a peer of another
          // session, or one that refuses us, hangs up instead).
          if (f.ok()) {
            links_[static_cast<std::size_t>(peer)] = conn;
          } else {
            state->last_refusal = f.error().message();
          }
          --state->pending;
          return conn->Close();
        }
        proto::Hello hello;
        Status s = CheckHello(f, peer, &hello);
        if (!s.ok() && s.error().code() == ErrorCode::kAborted) {
          conn->Close();
          return PeerSetupFailed(state, peer, hello, s.error());
        }
        if (!s.ok()) {
          conn->Close();
          if (!state->failure) state->failure = s.error();
          return;
        }
        Established(state, peer, conn);
      },
      state->deadline);
}

void TlsMesh::PeerSetupFailed(const std::shared_ptr<SetupState>& state, PartyId peer,
                              const proto::Hello& hello, const Error& error) {
  if (state->told) return;
  state->told = error;
  state->relay_reason = hello.setup_failed();
  const auto by = static_cast<std::int64_t>(hello.setup_failed_by()) - 1;
  state->relay_by = by >= 0 && by < options_.num_parties ? static_cast<PartyId>(by) : peer;
  state->grace_until = Clock::now() + std::chrono::milliseconds(300);
}

Status TlsMesh::EndTelling(const SetupState& state) {
  std::string untold;
  for (PartyId j = 0; j < options_.num_parties; ++j) {
    auto& c = links_[static_cast<std::size_t>(j)];
    if (j != options_.self && !c) untold += (untold.empty() ? "" : ", ") + PeerLabel(j);
    if (c) c->Close();
  }
  closed_ = true;  // telling leaves no mesh to use
  const std::string me = "party " + std::to_string(options_.self);
  if (state.failure) return state.failure->WithContext(me + ": telling the peers");
  if (untold.empty()) return Status::Ok();
  return Timeout(
      me + ": could not tell " + untold + " within " +
      std::to_string(options_.connect_timeout.count()) + " ms that this session failed" +
      (state.last_refusal.empty() ? std::string() : " (last: " + state.last_refusal + ")"));
}

void TlsMesh::Established(const std::shared_ptr<SetupState>& state, PartyId peer,
                          std::shared_ptr<MeshLink> link) {
  links_[static_cast<std::size_t>(peer)] = std::move(link);
  --state->pending;
  if (options_.logger) {
    options_.logger->debug("party {}: connected to {}", options_.self, PeerLabel(peer));
  }
}

}  // namespace mpcache::net
