// TlsMesh data path: Send/Flush/Recv on the party's own thread (mesh_link.h), the writer
// thread, abort and graceful close.
#include "net/tls/tls_mesh.h"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <system_error>

namespace mpcache::net {
namespace {

// Most ciphertext one link is read for before the reader looks at the others again.
constexpr std::size_t kReadBudget = std::size_t{4} << 20;
// The writer thread reads for the party's thread once that has not entered Recv for this
// long (an abort or a lost peer is noticed, a large send to us does not wait in the socket).
constexpr auto kIdleReadInterval = std::chrono::milliseconds(50);

// poll()'s timeout for `deadline`: rounded up, so that it never returns early.
int MillisUntil(Clock::time_point deadline) {
  const auto left = deadline - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::min<std::int64_t>(ms, INT_MAX));
}

void DrainEventFd(int fd) {
  std::uint64_t count = 0;
  while (::read(fd, &count, sizeof(count)) < 0 && errno == EINTR) {
  }
}

}  // namespace

TlsMesh::~TlsMesh() {
  try {
    (void)Close();
    StopWriter();
  } catch (const std::exception& e) {  // (out of memory, a thread that cannot be joined)
    if (options_.logger)
      options_.logger->error("party {}: closing the mesh: {}", options_.self, e.what());
  }
  listener_.reset();
  links_.clear();
  if (wake_reader_fd_ >= 0) ::close(wake_reader_fd_);
  if (wake_writer_fd_ >= 0) ::close(wake_writer_fd_);
}

Status TlsMesh::CheckPeer(PartyId peer) const {
  if (peer < 0 || peer >= options_.num_parties || peer == options_.self) {
    return InvalidArgument("party " + std::to_string(options_.self) + ": no peer " +
                           std::to_string(peer) + " (parties are 0.." +
                           std::to_string(options_.num_parties - 1) + ", not self)");
  }
  if (!connected_) return Internal("TlsMesh used before Connect() succeeded");
  return Status::Ok();
}

Status TlsMesh::SendAllowed(PartyId peer) {
  std::lock_guard lock(mu_);
  if (abort_) return *abort_;
  const auto& in = inbound_[static_cast<std::size_t>(peer)];
  if (in.error && in.error->code() != ErrorCode::kIo) return *in.error;
  if (closed_) return IoError("party " + std::to_string(options_.self) + ": mesh is closed");
  return Status::Ok();
}

void TlsMesh::Wake(int fd) {
  const std::uint64_t one = 1;
  while (::write(fd, &one, sizeof(one)) < 0 && errno == EINTR) {
  }
}

bool TlsMesh::QueueData(PartyId peer) {
  auto& buf = pending_[static_cast<std::size_t>(peer)];
  if (buf.empty()) return false;
  if (auto& link = links_[static_cast<std::size_t>(peer)]) {
    link->Queue(proto::FRAME_DATA, std::move(buf));
  }
  buf = {};
  return true;
}

void TlsMesh::WriteLink(PartyId peer) {
  auto& link = links_[static_cast<std::size_t>(peer)];
  if (!link) return;
  if (!link->WriteSome()) return Wake(wake_writer_fd_);  // the writer thread goes on
  if (auto e = link->write_error()) PeerFailed(peer, *e);
}

Status TlsMesh::DoSend(PartyId peer, std::span<const std::uint8_t> data) {
  MPCACHE_RETURN_IF_ERROR(CheckPeer(peer));
  MPCACHE_RETURN_IF_ERROR(SendAllowed(peer));
  auto& buf = pending_[static_cast<std::size_t>(peer)];
  const std::size_t chunk = options_.send_chunk_bytes;
  std::size_t off = 0;
  while (off < data.size()) {
    if (buf.capacity() < chunk && data.size() - off >= chunk - buf.size()) buf.reserve(chunk);
    const std::size_t take = std::min(data.size() - off, chunk - buf.size());
    buf.insert(buf.end(), data.begin() + static_cast<std::ptrdiff_t>(off),
               data.begin() + static_cast<std::ptrdiff_t>(off + take));
    off += take;
    if (buf.size() == chunk) {
      QueueData(peer);
      WriteLink(peer);
    }
  }
  return Status::Ok();
}

Status TlsMesh::Flush() {
  if (!connected_) return Internal("TlsMesh used before Connect() succeeded");
  for (PartyId j = 0; j < options_.num_parties; ++j) {
    if (j != options_.self && QueueData(j)) WriteLink(j);
  }
  std::lock_guard lock(mu_);
  if (abort_) return *abort_;
  return Status::Ok();
}

Status TlsMesh::DoRecv(PartyId peer, std::span<std::uint8_t> data) {
  MPCACHE_RETURN_IF_ERROR(CheckPeer(peer));
  MPCACHE_RETURN_IF_ERROR(Flush());  // never wait with our own bytes still queued
  if (data.empty()) return Status::Ok();
  recv_epoch_.fetch_add(1, std::memory_order_relaxed);  // (the writer thread stops reading)
  std::lock_guard reading(read_mu_);
  auto& in = inbound_[static_cast<std::size_t>(peer)];
  const auto deadline = Clock::now() + options_.recv_timeout;
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (abort_) return *abort_;
      if (in.available >= data.size()) break;
      if (in.error) {
        return Error(in.error->code(), "party " + std::to_string(options_.self) + ": " +
                                           in.error->message() + " (while waiting for " +
                                           std::to_string(data.size()) + " bytes)");
      }
      if (Clock::now() >= deadline) {
        return Timeout("party " + std::to_string(options_.self) + ": timed out after " +
                       std::to_string(options_.recv_timeout.count()) + " ms waiting for " +
                       std::to_string(data.size()) + " bytes from " + PeerLabel(peer) + " (" +
                       std::to_string(in.available) + " bytes buffered)");
      }
    }
    MPCACHE_RETURN_IF_ERROR(WaitAndRead(deadline));
  }
  std::lock_guard lock(mu_);
  std::size_t done = 0;
  while (done < data.size()) {
    auto& front = in.chunks.front();
    const std::size_t take = std::min(front.size() - in.offset, data.size() - done);
    std::memcpy(data.data() + done, front.data() + in.offset, take);
    done += take;
    in.offset += take;
    if (in.offset == front.size()) {
      in.chunks.pop_front();
      in.offset = 0;
    }
  }
  in.available -= data.size();
  return Status::Ok();
}

Status TlsMesh::WaitAndRead(Clock::time_point deadline) {
  poll_fds_.clear();
  poll_peers_.clear();
  poll_fds_.push_back({wake_reader_fd_, POLLIN, 0});
  poll_peers_.push_back(-1);
  for (PartyId j = 0; j < options_.num_parties; ++j) {
    const auto& link = links_[static_cast<std::size_t>(j)];
    if (j == options_.self || !link || !link->want_read()) continue;
    poll_fds_.push_back({link->native_handle(), POLLIN, 0});
    poll_peers_.push_back(j);
  }
  const int n = ::poll(poll_fds_.data(), poll_fds_.size(), MillisUntil(deadline));
  if (n < 0) {
    const int err = errno;
    if (err == EINTR) return Status::Ok();
    return Internal("party " + std::to_string(options_.self) +
                    ": waiting for the peers failed: " + std::system_category().message(err));
  }
  if (poll_fds_[0].revents != 0) DrainEventFd(wake_reader_fd_);
  for (std::size_t i = 1; i < poll_fds_.size(); ++i) {
    if (poll_fds_[i].revents != 0) ReadLink(poll_peers_[i]);
  }
  return Status::Ok();
}

bool TlsMesh::ReadLink(PartyId peer) {
  auto& link = links_[static_cast<std::size_t>(peer)];
  if (!link) return false;
  Result<bool> more = link->ReadAvailable(
      [this, peer](Frame frame) { return OnFrame(peer, std::move(frame)); }, kReadBudget);
  if (!more.ok()) {
    PeerFailed(peer, more.error());
    return false;
  }
  return *more;
}

MeshLink::Next TlsMesh::OnFrame(PartyId peer, Frame frame) {
  const auto idx = static_cast<std::size_t>(peer);
  switch (frame.header.kind()) {
    case proto::FRAME_DATA: {
      if (frame.payload.empty()) {  // a sender never cuts an empty frame
        PeerFailed(peer, ProtocolError(PeerLabel(peer) + " sent an empty DATA frame " +
                                       std::to_string(frame.header.sequence())));
        return MeshLink::Next::kDrop;
      }
      bool overflow = false;
      {
        std::lock_guard lock(mu_);
        auto& in = inbound_[idx];
        overflow = in.available + frame.payload.size() > options_.max_buffered_bytes;
        if (!overflow) {
          in.available += frame.payload.size();
          in.chunks.push_back(std::move(frame.payload));
        }
      }
      if (overflow) {
        PeerFailed(peer, ProtocolError(PeerLabel(peer) + " sent more than max_buffered_bytes " +
                                       std::to_string(options_.max_buffered_bytes) +
                                       " bytes that were not received yet"));
        return MeshLink::Next::kDrop;
      }
      return MeshLink::Next::kMore;
    }
    case proto::FRAME_ABORT: {
      proto::Abort msg;
      std::string text = "session aborted by " + PeerLabel(peer);
      if (msg.ParseFromArray(frame.payload.data(), static_cast<int>(frame.payload.size()))) {
        text += ": " + PrintableText(msg.reason());
        if (msg.has_blamed()) text += " (blames party " + std::to_string(msg.blamed_party()) + ")";
      }
      if (options_.logger) options_.logger->warn("party {}: {}", options_.self, text);
      SetAbort(Aborted(text));
      return MeshLink::Next::kMore;
    }
    case proto::FRAME_CLOSE:
      close_received_[idx] = true;
      PeerFailed(peer, IoError(PeerLabel(peer) + " closed the connection"));
      return MeshLink::Next::kStop;  // nothing may follow a CLOSE
    default:
      PeerFailed(peer, ProtocolError(PeerLabel(peer) + " sent an unexpected " +
                                     proto::FrameKind_Name(frame.header.kind()) + " frame " +
                                     std::to_string(frame.header.sequence()) +
                                     " after the hello (frame kind " +
                                     std::to_string(frame.header.kind()) + ")"));
      return MeshLink::Next::kDrop;
  }
}

void TlsMesh::PeerFailed(PartyId peer, const Error& error) {
  {
    std::lock_guard lock(mu_);
    auto& in = inbound_[static_cast<std::size_t>(peer)];
    if (in.error) return;
    in.error = error;
  }
  Wake(wake_reader_fd_);
  if (options_.logger && error.code() != ErrorCode::kIo) {
    options_.logger->warn("party {}: {}", options_.self, error.message());
  }
}

void TlsMesh::SetAbort(Error error) {
  {
    std::lock_guard lock(mu_);
    if (abort_) return;
    abort_ = std::move(error);
  }
  Wake(wake_reader_fd_);
}

std::optional<Error> TlsMesh::aborted() const {
  std::lock_guard lock(mu_);
  return abort_;
}

void TlsMesh::Abort(const std::string& reason, std::optional<PartyId> blamed) {
  std::string text = "session aborted by party " + std::to_string(options_.self) + ": " + reason;
  if (blamed) text += " (blames party " + std::to_string(*blamed) + ")";
  SetAbort(Aborted(text));
  if (!connected_) return;
  proto::Abort msg;
  msg.set_reason(reason);
  msg.set_sender(static_cast<std::uint32_t>(options_.self));
  if (blamed) {
    msg.set_has_blamed(true);
    msg.set_blamed_party(static_cast<std::uint32_t>(*blamed));
  }
  std::vector<std::uint8_t> bytes(msg.ByteSizeLong());
  msg.SerializeWithCachedSizesToArray(bytes.data());
  bool left = false;
  for (auto& link : links_) {
    if (!link) continue;
    link->Queue(proto::FRAME_ABORT, bytes, /*urgent=*/true);
    if (!link->WriteSome()) left = true;
  }
  if (left) Wake(wake_writer_fd_);
}

Status TlsMesh::StartDataPhase() {
  connected_ = true;
  {
    // Frames that came right behind the peers' hellos, read with them.
    std::lock_guard reading(read_mu_);
    for (PartyId j = 0; j < options_.num_parties; ++j) {
      if (j != options_.self) ReadLink(j);
    }
  }
  for (PartyId j = 0; j < options_.num_parties; ++j) {
    if (j != options_.self) WriteLink(j);
  }
  try {
    writer_ = std::thread([this] { WriterLoop(); });
  } catch (const std::system_error& e) {
    connected_ = false;
    for (auto& link : links_) {
      if (link) link->Close();
    }
    return Internal("party " + std::to_string(options_.self) +
                    ": cannot start the mesh's writer thread: " + e.what());
  }
  return Status::Ok();
}

// Sends what the party's thread left unsent once the sockets take it, and reads for the
// party's thread while that is away from Recv.
void TlsMesh::WriterLoop() {
  std::vector<pollfd> fds;
  std::vector<PartyId> who;
  auto next_idle_read = Clock::now() + kIdleReadInterval;
  std::uint64_t seen_epoch = recv_epoch_.load();
  while (!writer_stop_.load()) {
    fds.clear();
    who.clear();
    fds.push_back({wake_writer_fd_, POLLIN, 0});
    who.push_back(-1);
    for (PartyId j = 0; j < options_.num_parties; ++j) {
      const auto& link = links_[static_cast<std::size_t>(j)];
      if (j == options_.self || !link || !link->want_write()) continue;
      fds.push_back({link->native_handle(), POLLOUT, 0});
      who.push_back(j);
    }
    const int n = ::poll(fds.data(), fds.size(), MillisUntil(next_idle_read));
    if (n < 0 && errno != EINTR && options_.logger) {
      options_.logger->error("party {}: mesh writer: poll failed: {}", options_.self,
                             std::system_category().message(errno));
    }
    if (n > 0) {
      if (fds[0].revents != 0) DrainEventFd(wake_writer_fd_);
      for (std::size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        auto& link = links_[static_cast<std::size_t>(who[i])];
        if (link->WriteSome()) {
          if (auto e = link->write_error()) PeerFailed(who[i], *e);
        }
      }
    }
    if (Clock::now() < next_idle_read) continue;
    next_idle_read = Clock::now() + kIdleReadInterval;
    const std::uint64_t epoch = recv_epoch_.load();
    if (epoch != seen_epoch) {  // the party's thread reads for itself
      seen_epoch = epoch;
      continue;
    }
    std::unique_lock reading(read_mu_, std::try_to_lock);
    if (!reading) continue;  // it is waiting in Recv
    for (PartyId j = 0; j < options_.num_parties; ++j) {
      while (j != options_.self && ReadLink(j) && recv_epoch_.load() == epoch) {
      }
    }
  }
}

void TlsMesh::StopWriter() {
  if (!writer_.joinable()) return;
  writer_stop_ = true;
  Wake(wake_writer_fd_);
  writer_.join();
}

Status TlsMesh::Close() {
  if (closed_) return Status::Ok();
  if (!connected_) {
    closed_ = true;
    return Status::Ok();
  }
  for (PartyId j = 0; j < options_.num_parties; ++j) {
    if (j != options_.self) QueueData(j);
  }
  closed_ = true;
  for (auto& link : links_) {
    if (link) link->Queue(proto::FRAME_CLOSE, {});
  }
  StopWriter();  // this thread writes and reads from here on
  std::lock_guard reading(read_mu_);
  const auto deadline = Clock::now() + options_.close_timeout;
  for (;;) {
    // Done once every live connection sent all it had (our CLOSE last) and heard the
    // peer's CLOSE.
    std::vector<pollfd> fds;
    std::vector<PartyId> who;
    bool done = true;
    for (PartyId j = 0; j < options_.num_parties; ++j) {
      auto& link = links_[static_cast<std::size_t>(j)];
      if (j == options_.self || !link || link->closed()) continue;
      const bool writing = !link->WriteSome();
      if (!writing) {
        if (auto e = link->write_error()) PeerFailed(j, *e);
      }
      const bool reading = !close_received_[static_cast<std::size_t>(j)] && link->want_read();
      if (writing || !close_received_[static_cast<std::size_t>(j)]) done = false;
      const short events = static_cast<short>((writing ? POLLOUT : 0) | (reading ? POLLIN : 0));
      if (events != 0) {
        fds.push_back({link->native_handle(), events, 0});
        who.push_back(j);
      }
    }
    if (done || Clock::now() >= deadline) break;
    const int n = ::poll(fds.data(), fds.size(), MillisUntil(deadline));
    if (n < 0 && errno != EINTR) break;
    for (std::size_t i = 0; n > 0 && i < fds.size(); ++i) {
      if ((fds[i].revents & ~POLLOUT) != 0) ReadLink(who[i]);
    }
  }
  for (auto& link : links_) {
    if (link) link->Close();
  }
  {
    std::lock_guard lock(mu_);
    for (PartyId j = 0; j < options_.num_parties; ++j) {
      auto& in = inbound_[static_cast<std::size_t>(j)];
      if (j != options_.self && !in.error) in.error = IoError("the mesh is closed");
    }
  }
  return Status::Ok();
}

}  // namespace mpcache::net
