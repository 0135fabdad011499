#include "net/mem_mesh.h"

#include <cstring>
#include <string>

namespace mpcache::net {

class MemChannel final : public Channel {
 public:
  MemChannel(MemMesh* mesh, PartyId self) : mesh_(mesh), self_(self) {}
  PartyId self() const override { return self_; }
  int num_parties() const override { return mesh_->num_parties(); }
  Status Flush() override { return Status::Ok(); }

 protected:
  Status DoSend(PartyId peer, std::span<const std::uint8_t> data) override {
    return mesh_->Push(self_, peer, data);
  }
  Status DoRecv(PartyId peer, std::span<std::uint8_t> data) override {
    return mesh_->Pop(peer, self_, data);
  }

 private:
  MemMesh* mesh_;
  PartyId self_;
};

Result<std::unique_ptr<MemMesh>> MemMesh::Create(int num_parties, MemMeshOptions options) {
  if (num_parties < 2) {
    return InvalidArgument("MemMesh needs at least 2 parties, got " + std::to_string(num_parties));
  }
  return std::unique_ptr<MemMesh>(new MemMesh(num_parties, options));
}

MemMesh::MemMesh(int n, MemMeshOptions options)
    : options_(options), queues_(static_cast<std::size_t>(n * n)) {
  for (int i = 0; i < n; ++i) channels_.push_back(std::make_unique<MemChannel>(this, i));
}

MemMesh::~MemMesh() = default;

void MemMesh::Abort() {
  aborted_.store(true);
  for (Queue& q : queues_) {
    std::lock_guard<std::mutex> lock(q.mu);
    q.cv.notify_all();
  }
}

bool MemMesh::aborted() const {
  return aborted_.load();
}

Status MemMesh::Push(PartyId from, PartyId to, std::span<const std::uint8_t> data) {
  if (to < 0 || to >= num_parties() || to == from) {
    return InvalidArgument("MemMesh: party " + std::to_string(from) + " cannot send to party " +
                           std::to_string(to));
  }
  if (data.empty()) return Status::Ok();
  Queue& q = queue(from, to);
  std::vector<std::uint8_t> chunk;
  {
    std::lock_guard<std::mutex> lock(q.mu);
    if (q.spare.capacity() >= data.size()) chunk = std::move(q.spare);
  }
  // Copy outside the lock: a large message does not stall its reader.
  chunk.assign(data.begin(), data.end());
  {
    std::lock_guard<std::mutex> lock(q.mu);
    q.chunks.push_back(std::move(chunk));
  }
  q.cv.notify_all();
  return Status::Ok();
}

Status MemMesh::Pop(PartyId from, PartyId to, std::span<std::uint8_t> out) {
  if (from < 0 || from >= num_parties() || to == from) {
    return InvalidArgument("MemMesh: party " + std::to_string(to) + " cannot receive from party " +
                           std::to_string(from));
  }
  std::size_t done = 0;
  const auto deadline = std::chrono::steady_clock::now() + options_.recv_timeout;
  Queue& q = queue(from, to);
  std::unique_lock<std::mutex> lock(q.mu);
  while (done < out.size()) {
    if (aborted_.load()) {  // also with bytes queued: the rule TlsMesh keeps (mem_mesh.h)
      return Aborted("MemMesh aborted while party " + std::to_string(to) + " waited for party " +
                     std::to_string(from));
    }
    if (q.chunks.empty()) {
      if (q.cv.wait_until(lock, deadline) == std::cv_status::timeout && q.chunks.empty() &&
          !aborted_.load()) {
        return Timeout("party " + std::to_string(to) + " timed out waiting for " +
                       std::to_string(out.size() - done) + " bytes from party " +
                       std::to_string(from));
      }
      continue;
    }
    std::vector<std::uint8_t>& front = q.chunks.front();
    const std::size_t avail = front.size() - q.head_offset;
    const std::size_t take = std::min(avail, out.size() - done);
    std::memcpy(out.data() + done, front.data() + q.head_offset, take);
    done += take;
    q.head_offset += take;
    if (q.head_offset == front.size()) {
      if (front.capacity() > q.spare.capacity()) q.spare = std::move(front);
      q.chunks.pop_front();
      q.head_offset = 0;
    }
  }
  return Status::Ok();
}

}  // namespace mpcache::net
