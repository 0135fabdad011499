// Typed daemon configuration (SPEC §8): config/party{0,1,2}.yaml, config/dealer.yaml and
// config/client.yaml. Every field is validated when the file is loaded; an error names
// the file, the field and the fix, and unknown keys are rejected (with a did-you-mean).
// Relative paths are resolved against the YAML file's folder; paths may use ${VAR} and
// ${VAR:-default} (e.g. ${MPCACHE_MODEL_DIR:-../../shared/models}/stories260K.bin).
// docs/network.md lists every field with its default.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/fixed_backend.h"
#include "common/fixed_point.h"
#include "common/result.h"

namespace mpcache::config {

inline constexpr int kNumParties = 3;

struct HostPort {
  std::string host;
  std::uint16_t port = 0;
  std::string ToString() const { return host + ":" + std::to_string(port); }
};

// "host:port" or "[ipv6]:port", port 1..65535 (0 allowed when `allow_zero`).
Result<HostPort> ParseHostPort(std::string_view text, bool allow_zero = false);

enum class Security { kMalicious, kSemiHonest };
enum class Weights { kPublic, kPrivate };
enum class CacheMode { kFull, kMpcache };
enum class Reveal { kNone, kDp, kPlain };

std::string_view ToString(Security s);
std::string_view ToString(Weights w);
std::string_view ToString(CacheMode c);
std::string_view ToString(Reveal r);

// PEM files of this daemon's identity and the deployment CA (deploy/gen-certs.sh).
struct TlsPaths {
  std::string cert;
  std::string key;
  std::string ca;
};

struct Timeouts {
  int connect_ms = 10000;   // whole mesh / link setup, retries included
  int handshake_ms = 5000;  // one TLS handshake plus hello
  int recv_ms = 30000;      // one receive; a stalled peer is blamed after this
  int request_ms = 600000;  // one client request end to end
};

struct ModelPaths {
  std::string checkpoint;  // llama2.c .bin or .gguf (public weights) / share file (private)
  std::string tokenizer;   // llama2.c tokenizer.bin (optional for parties)
  int frac_bits = kDefaultFracBits;  // fixed-point fractional bits over Z_2^64
  int threads = 1;                   // worker threads per party for the local weight products
};

// SPEC §6 knobs.
struct MpcacheKnobs {
  CacheMode cache = CacheMode::kFull;
  double static_keep_ratio = 0.6;   // fraction of prompt tokens kept after eviction
  double observation_window = 0.2;  // last fraction of prompt queries that score tokens
  double impact_weight = 0.0;       // kept prompt rows' softmax inputs + this x their importance
  bool sigmoid_eviction = false;    // eviction scores: sigmoid of the scaled scores (not softmax)
  int level1_cluster_tokens = 32;
  double level1_keep_ratio = 0.5;
  int level2_cluster_tokens = 16;
  double level2_keep_ratio = 0.2;
  double alpha = 0.6;                // r = alpha*r_max + (1-alpha)*r_min
  bool mean_representative = false;  // representative: mean (instead of minmax)
  bool share_layers = false;         // layer 2l+1 reuses layer 2l's selection (l >= 1)
  bool residual_path = false;        // skipped clusters attended through their mean key/value
  double layer_share_decay = 0.9;    // share_layers: previous selecting layer's scores' weight
  Reveal reveal = Reveal::kNone;
  double dp_epsilon = 1.0;      // reveal: dp only: epsilon per revealed selection
  double dp_sensitivity = 1.0;  // reveal: dp only: L1 bound of a selection's score change
};

// What clients may make a party hold (docs/network.md, "Limits"). Requests are served one at
// a time, in an order the three parties agree on (daemon/session_order.h); the others wait in
// a queue whose clients hear their position.
struct PartyLimits {
  int max_queued_clients = 16;    // requests waiting (beyond it: refused, naming this field)
  int max_queued_per_client = 4;  // of those, from one client address
  int queue_timeout_ms = 600000;  // longest wait in the queue
};

// The role table and its auction (docs/balancer.md); the same at the three parties (a
// session checks).
struct BalancerConfig {
  bool enabled = false;              // auction the corrector role of every unit of work
  int reauction_interval_steps = 8;  // decoding positions between auctions
  double max_spread = 0.15;          // load-spread rule: loads within this fraction
  int bid_timeout_ms = 10000;        // the longest wait for a peer's bids
  // The static assignment (balancer off, and until the first auction): who receives the
  // dealer's corrections, and the king of every opening (-1: none, all-to-all; -2: split,
  // every party the king of a third of each arithmetic opening: mpc::kSplitKing).
  int static_corrector = 2;
  int static_king = -1;
};

// What one round is worth in comparisons where a kernel trades rounds for comparisons
// (FixedMathParams: softmax's row max, the classifier's argmax, SiLU's clip); the same at the
// three parties (a session checks: they run one protocol). The defaults price a round trip
// between sites; where rounds are nearly free (one LAN, docs/performance-network.md), smaller
// prices take fewer comparisons in more rounds. The outputs do not depend on them.
struct KernelPrices {
  int rank_round_cost = FixedMathParams{}.rank_round_cost;
  int argmax_round_cost = FixedMathParams{}.argmax_round_cost;
  int silu_round_cost = FixedMathParams{}.silu_round_cost;
  bool operator==(const KernelPrices&) const = default;
  // The kernels' parameters with these prices (nothing else changes).
  void ApplyTo(FixedMathParams& math) const;
};

// The prices, in the order the parties exchange them (daemon/kernel_agreement.cc): each one's
// key in the `kernels:` section (and the JSON reports), its member, the FixedMathParams field it
// sets and the kernel it prices. Every list of the prices is made from this one.
struct KernelPriceField {
  const char* key;
  int KernelPrices::*price;
  int FixedMathParams::*param;
  const char* what;
};
inline constexpr std::array<KernelPriceField, 3> kKernelPriceFields{{
    {"rank_round_cost", &KernelPrices::rank_round_cost, &FixedMathParams::rank_round_cost,
     "softmax's row max"},
    {"argmax_round_cost", &KernelPrices::argmax_round_cost, &FixedMathParams::argmax_round_cost,
     "the classifier's argmax"},
    {"silu_round_cost", &KernelPrices::silu_round_cost, &FixedMathParams::silu_round_cost,
     "SiLU's clip"},
}};

inline void KernelPrices::ApplyTo(FixedMathParams& math) const {
  for (const KernelPriceField& f : kKernelPriceFields) math.*f.param = this->*f.price;
}

struct PartyConfig {
  std::string file;  // the YAML it came from
  int party_id = 0;
  std::vector<HostPort> parties;  // mesh address of P0, P1, P2
  HostPort dealer;                // where the dealer listens
  HostPort client_listen;         // where this party accepts clients
  std::uint64_t max_frame_bytes = std::uint64_t{16} << 20;
  Timeouts timeouts;
  TlsPaths tls;
  Security security = Security::kMalicious;
  Weights weights = Weights::kPublic;
  ModelPaths model;
  MpcacheKnobs mpcache;
  BalancerConfig balancer;
  KernelPrices kernels;
  PartyLimits limits;
  std::string log_level = "info";
  int metrics_port = 0;  // 0 = no metrics endpoint
  bool debug = false;
};

struct DealerConfig {
  std::string file;
  HostPort listen;
  std::uint64_t max_frame_bytes = std::uint64_t{16} << 20;
  Timeouts timeouts;
  TlsPaths tls;
  Security security = Security::kMalicious;
  // Fields the file has that the dealer accepts but does not use ("frac_bits": the shift of a
  // truncation pair comes with each party's request); logged as a warning at start.
  std::vector<std::string> unused_fields;
  std::uint64_t pool_capacity_items = 1u << 22;  // largest request served (items)
  std::uint64_t batch_items = 1u << 16;          // parties ask ahead for at least this many
  // Largest matrix mask / matrix-triple operand served (elements of A, B or C).
  std::uint64_t pool_max_matrix_elements = 1u << 28;
  int pool_threads = 2;  // threads making a comparison-material batch (pool.threads)
  int max_sessions = 8;  // preprocessing sessions at once (limits.max_sessions)
  std::string log_level = "info";
  int metrics_port = 0;
};

struct ClientConfig {
  std::string file;
  std::vector<HostPort> parties;  // client_listen address of P0, P1, P2
  Timeouts timeouts;
  TlsPaths tls;
  std::string tokenizer;
  std::string log_level = "warn";
};

struct LoadOptions {
  // Also require that certificate, key, CA and model files exist.
  bool check_files = true;
};

Result<PartyConfig> LoadPartyConfig(const std::string& path, const LoadOptions& options = {});
Result<DealerConfig> LoadDealerConfig(const std::string& path, const LoadOptions& options = {});
Result<ClientConfig> LoadClientConfig(const std::string& path, const LoadOptions& options = {});

// The same from YAML text; `file` names it in errors and its folder anchors relative paths.
// A party file's `mpcache:` section alone (a document holding only it, as mpcache-tune writes
// it), checked as the party file's would be (reveal: plain refused: no debug here).
Result<MpcacheKnobs> ParseMpcacheFragment(std::string_view yaml, const std::string& file,
                                          const LoadOptions& options = {});
Result<PartyConfig> ParsePartyConfig(std::string_view yaml, const std::string& file,
                                     const LoadOptions& options = {});
Result<DealerConfig> ParseDealerConfig(std::string_view yaml, const std::string& file,
                                       const LoadOptions& options = {});
Result<ClientConfig> ParseClientConfig(std::string_view yaml, const std::string& file,
                                       const LoadOptions& options = {});

}  // namespace mpcache::config
