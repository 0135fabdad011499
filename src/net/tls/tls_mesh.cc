// TlsMesh data path: Send/Flush/Recv, abort and graceful close.
#include "net/tls/tls_mesh.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

namespace mpcache::net {

TlsMesh::~TlsMesh() {
  (void)Close();
  StopIoThread();
  listener_.reset();
  conns_.clear();
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

void TlsMesh::PostData(PartyId peer) {
  auto& buf = pending_[static_cast<std::size_t>(peer)];
  if (buf.empty()) return;
  auto payload = std::make_shared<std::vector<std::uint8_t>>(std::move(buf));
  buf = {};
  asio::post(io_, [this, peer, payload] {
    auto& c = conns_[static_cast<std::size_t>(peer)];
    if (c) c->Send(proto::FRAME_DATA, std::move(*payload));
  });
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
    if (buf.size() == chunk) PostData(peer);
  }
  return Status::Ok();
}

Status TlsMesh::Flush() {
  if (!connected_) return Internal("TlsMesh used before Connect() succeeded");
  for (PartyId j = 0; j < options_.num_parties; ++j) {
    if (j != options_.self) PostData(j);
  }
  std::lock_guard lock(mu_);
  if (abort_) return *abort_;
  return Status::Ok();
}

Status TlsMesh::DoRecv(PartyId peer, std::span<std::uint8_t> data) {
  MPCACHE_RETURN_IF_ERROR(CheckPeer(peer));
  MPCACHE_RETURN_IF_ERROR(Flush());  // never wait with our own bytes still queued
  if (data.empty()) return Status::Ok();
  std::unique_lock lock(mu_);
  auto& in = inbound_[static_cast<std::size_t>(peer)];
  const auto deadline = Clock::now() + options_.recv_timeout;
  for (;;) {
    if (abort_) return *abort_;
    if (in.available >= data.size()) break;
    if (in.error) {
      return Error(in.error->code(), "party " + std::to_string(options_.self) + ": " +
                                         in.error->message() + " (while waiting for " +
                                         std::to_string(data.size()) + " bytes)");
    }
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && in.available < data.size() &&
        !in.error && !abort_) {
      return Timeout("party " + std::to_string(options_.self) + ": timed out after " +
                     std::to_string(options_.recv_timeout.count()) + " ms waiting for " +
                     std::to_string(data.size()) + " bytes from " + PeerLabel(peer) + " (" +
                     std::to_string(in.available) + " bytes buffered)");
    }
  }
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

void TlsMesh::ReadLoop(PartyId peer) {
  auto& conn = conns_[static_cast<std::size_t>(peer)];
  if (!conn) return;
  conn->ReadFrame([this, peer](Result<Frame> f) { OnFrame(peer, std::move(f)); });
}

void TlsMesh::OnFrame(PartyId peer, Result<Frame> frame) {
  const auto idx = static_cast<std::size_t>(peer);
  if (!frame.ok()) {
    if (!closing_ || !close_received_[idx]) PeerFailed(peer, frame.error());
    conns_[idx]->Close();
    if (closing_) MaybeFinishClose();
    return;
  }
  switch (frame->header.kind()) {
    case proto::FRAME_DATA: {
      if (frame->payload.empty()) {  // a sender never cuts an empty frame
        PeerFailed(peer, ProtocolError(PeerLabel(peer) + " sent an empty DATA frame " +
                                       std::to_string(frame->header.sequence())));
        conns_[idx]->Close();
        return;
      }
      bool overflow = false;
      {
        std::lock_guard lock(mu_);
        auto& in = inbound_[idx];
        overflow = in.available + frame->payload.size() > options_.max_buffered_bytes;
        if (!overflow) {
          in.available += frame->payload.size();
          in.chunks.push_back(std::move(frame->payload));
        }
      }
      if (overflow) {
        PeerFailed(peer, ProtocolError(PeerLabel(peer) + " sent more than max_buffered_bytes " +
                                       std::to_string(options_.max_buffered_bytes) +
                                       " bytes that were not received yet"));
        conns_[idx]->Close();
        return;
      }
      cv_.notify_all();
      return ReadLoop(peer);
    }
    case proto::FRAME_ABORT: {
      proto::Abort msg;
      std::string text = "session aborted by " + PeerLabel(peer);
      if (msg.ParseFromArray(frame->payload.data(), static_cast<int>(frame->payload.size()))) {
        text += ": " + PrintableText(msg.reason());
        if (msg.has_blamed()) text += " (blames party " + std::to_string(msg.blamed_party()) + ")";
      }
      if (options_.logger) options_.logger->warn("party {}: {}", options_.self, text);
      SetAbort(Aborted(text));
      return ReadLoop(peer);
    }
    case proto::FRAME_CLOSE:
      close_received_[idx] = true;
      PeerFailed(peer, IoError(PeerLabel(peer) + " closed the connection"));
      if (closing_) MaybeFinishClose();
      return;  // nothing may follow a CLOSE
    default:
      PeerFailed(peer, ProtocolError(PeerLabel(peer) + " sent an unexpected " +
                                     proto::FrameKind_Name(frame->header.kind()) + " frame " +
                                     std::to_string(frame->header.sequence()) +
                                     " after the hello (frame kind " +
                                     std::to_string(frame->header.kind()) + ")"));
      conns_[idx]->Close();
      return;
  }
}

void TlsMesh::PeerFailed(PartyId peer, const Error& error) {
  {
    std::lock_guard lock(mu_);
    auto& in = inbound_[static_cast<std::size_t>(peer)];
    if (in.error) return;
    in.error = error;
  }
  cv_.notify_all();
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
  cv_.notify_all();
}

std::optional<Error> TlsMesh::aborted() const {
  std::lock_guard lock(mu_);
  return abort_;
}

void TlsMesh::Abort(const std::string& reason, std::optional<PartyId> blamed) {
  std::string text = "session aborted by party " + std::to_string(options_.self) + ": " + reason;
  if (blamed) text += " (blames party " + std::to_string(*blamed) + ")";
  SetAbort(Aborted(text));
  if (!connected_ || !io_thread_.joinable()) return;
  proto::Abort msg;
  msg.set_reason(reason);
  msg.set_sender(static_cast<std::uint32_t>(options_.self));
  if (blamed) {
    msg.set_has_blamed(true);
    msg.set_blamed_party(static_cast<std::uint32_t>(*blamed));
  }
  auto bytes = std::make_shared<std::vector<std::uint8_t>>(msg.ByteSizeLong());
  msg.SerializeWithCachedSizesToArray(bytes->data());
  asio::post(io_, [this, bytes] {
    for (auto& c : conns_) {
      if (c && !c->closed()) c->Send(proto::FRAME_ABORT, *bytes, /*urgent=*/true);
    }
  });
}

Status TlsMesh::Close() {
  if (closed_) return Status::Ok();
  if (!connected_ || !io_thread_.joinable()) {
    closed_ = true;
    return Status::Ok();
  }
  for (PartyId j = 0; j < options_.num_parties; ++j) {
    if (j != options_.self) PostData(j);
  }
  closed_ = true;
  auto done = std::make_shared<std::promise<void>>();
  auto future = done->get_future();
  asio::post(io_, [this, done] {
    closing_ = true;
    close_done_ = done;
    close_timer_ = std::make_unique<asio::steady_timer>(io_, options_.close_timeout);
    close_timer_->async_wait([this](const boost::system::error_code& ec) {
      if (!ec) FinishClose();
    });
    for (std::size_t j = 0; j < conns_.size(); ++j) {
      auto& c = conns_[j];
      if (!c) continue;
      c->Send(proto::FRAME_CLOSE, {});
      c->WhenDrained([this, j] {
        close_sent_[j] = true;
        MaybeFinishClose();
      });
    }
    MaybeFinishClose();
  });
  future.wait_for(options_.close_timeout + std::chrono::milliseconds(500));
  StopIoThread();
  {
    std::lock_guard lock(mu_);
    for (PartyId j = 0; j < options_.num_parties; ++j) {
      auto& in = inbound_[static_cast<std::size_t>(j)];
      if (j != options_.self && !in.error) in.error = IoError("the mesh is closed");
    }
  }
  cv_.notify_all();
  return Status::Ok();
}

void TlsMesh::MaybeFinishClose() {
  if (!close_done_) return;
  for (std::size_t j = 0; j < conns_.size(); ++j) {
    const auto& c = conns_[j];
    if (!c || c->closed()) continue;
    if (!close_sent_[j] || !close_received_[j]) return;
  }
  FinishClose();
}

void TlsMesh::FinishClose() {
  if (!close_done_) return;
  for (auto& c : conns_) {
    if (c) c->Close();
  }
  if (close_timer_) close_timer_->cancel();
  auto done = std::move(close_done_);
  close_done_.reset();
  done->set_value();
}

void TlsMesh::StopIoThread() {
  if (!io_thread_.joinable()) return;
  work_.reset();
  io_.stop();
  io_thread_.join();
}

}  // namespace mpcache::net
