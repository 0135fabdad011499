#include "net/tls/mesh_config.h"

namespace mpcache::net {

TlsFiles TlsFilesFromConfig(const config::TlsPaths& tls) {
  return TlsFiles{tls.cert, tls.key, tls.ca};
}

TlsMeshOptions MeshOptionsFromConfig(const config::PartyConfig& cfg, std::uint64_t session_id,
                                     std::shared_ptr<spdlog::logger> logger) {
  TlsMeshOptions o;
  o.self = cfg.party_id;
  o.num_parties = static_cast<int>(cfg.parties.size());
  for (const auto& hp : cfg.parties) o.addresses.push_back(ToEndpoint(hp));
  o.tls = TlsFilesFromConfig(cfg.tls);
  o.session_id = session_id;
  o.connect_timeout = std::chrono::milliseconds(cfg.timeouts.connect_ms);
  o.handshake_timeout = std::chrono::milliseconds(cfg.timeouts.handshake_ms);
  o.recv_timeout = std::chrono::milliseconds(cfg.timeouts.recv_ms);
  o.max_frame_bytes = static_cast<std::size_t>(cfg.max_frame_bytes);
  o.send_chunk_bytes = std::min<std::size_t>(o.send_chunk_bytes, o.max_frame_bytes);
  o.logger = std::move(logger);
  return o;
}

}  // namespace mpcache::net
