// From a party's YAML config (common/config.h) to the options of its TlsMesh, so a
// daemon builds its mesh in two lines:
//
//   MPCACHE_ASSIGN_OR_RETURN(auto cfg, config::LoadPartyConfig(path));
//   MPCACHE_ASSIGN_OR_RETURN(auto mesh, TlsMesh::Create(MeshOptionsFromConfig(cfg, sid)));
#pragma once

#include <cstdint>
#include <memory>

#include "common/config.h"
#include "net/tls/tls_mesh.h"

namespace mpcache::net {

TlsMeshOptions MeshOptionsFromConfig(const config::PartyConfig& cfg, std::uint64_t session_id,
                                     std::shared_ptr<spdlog::logger> logger = nullptr);

// The identity files of any daemon's config.
TlsFiles TlsFilesFromConfig(const config::TlsPaths& tls);

inline Endpoint ToEndpoint(const config::HostPort& hp) {
  return Endpoint{hp.host, hp.port};
}

}  // namespace mpcache::net
