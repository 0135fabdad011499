#include "infer/session.h"

#include <algorithm>
#include <chrono>

#include "infer/input_check.h"
#include "mpc/io.h"
#include "net/comm_stats.h"

namespace mpcache::infer {

using mpc::Shares;

template <typename P>
Result<std::unique_ptr<GenerationSession<P>>> GenerationSession<P>::Create(
    mpc::BinaryContext<P>& ctx, const SecureWeights<P>& weights, SessionOptions options) {
  MPCACHE_ASSIGN_OR_RETURN(auto engine, SecureLlama<P>::Create(ctx, weights, options));
  return std::unique_ptr<GenerationSession>(new GenerationSession(std::move(engine)));
}

template <typename P>
Result<Shares<P>> GenerationSession<P>::InputPromptRows(ClientLink& client, int first, int count) {
  mpc::BinaryContext<P>& bctx = engine_->context();
  mpc::Context<P>& ctx = bctx.arith();
  const std::size_t n = static_cast<std::size_t>(engine_->config().vocab_size);
  Shares<P> rows;
  {
    net::PhaseScope phase(ctx.stats(), "embedding");
    for (int pos = first; pos < first + count; ++pos) {
      MPCACHE_ASSIGN_OR_RETURN(mpc::InputMasks<P> masks, ctx.prep().GetInputMasks(n, mpc::kClient));
      const std::uint64_t seq = client_mask_seq_++;
      MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> d, client.PromptInput(pos, seq, n));
      MPCACHE_ASSIGN_OR_RETURN(Shares<P> row, mpc::InputFromClient<P>(ctx, std::move(masks), d));
      rows.Append(row);
    }
  }
  net::PhaseScope phase(ctx.stats(), "input_check");
  MPCACHE_RETURN_IF_ERROR(CheckOneHotRows<P>(bctx, rows, n, first));
  return rows;
}

template <typename P>
Result<Shares<P>> GenerationSession<P>::InputNoise(ClientLink& client, int positions) {
  mpc::Context<P>& ctx = engine_->context().arith();
  const std::size_t n =
      static_cast<std::size_t>(positions) * static_cast<std::size_t>(engine_->config().vocab_size);
  net::PhaseScope phase(ctx.stats(), "sampling");
  MPCACHE_ASSIGN_OR_RETURN(mpc::InputMasks<P> masks, ctx.prep().GetInputMasks(n, mpc::kClient));
  const std::uint64_t seq = client_mask_seq_++;
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> d, client.NoiseInput(seq, n));
  if (d.size() != n) {
    return ProtocolError("the client's sampling noise has " + std::to_string(d.size()) +
                         " values, expected " + std::to_string(n));
  }
  return mpc::InputFromClient<P>(ctx, std::move(masks), d);
}

template <typename P>
Result<bool> GenerationSession<P>::ReleaseToken(ClientLink& client, const Shares<P>& one_hot,
                                                int pos) {
  mpc::BinaryContext<P>& bctx = engine_->context();
  mpc::Context<P>& ctx = bctx.arith();
  std::vector<std::uint64_t> opened;
  std::uint64_t seq = 0;
  {
    net::PhaseScope phase(ctx.stats(), "classifier_argmax");
    // index = sum_i i * onehot_i (local), masked with a client mask and opened: the parties
    // see index + r' with r' uniform and known only to the client.
    std::vector<std::uint64_t> ids(one_hot.size());
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = i;
    Shares<P> index(1);
    const Shares<P> weighted = mpc::MulPublic<P>(one_hot, ids);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      index.v[0] += weighted.v[i];
      if constexpr (P::kMalicious) index.m[0] += weighted.m[i];
    }
    MPCACHE_ASSIGN_OR_RETURN(mpc::InputMasks<P> masks, ctx.prep().GetInputMasks(1, mpc::kClient));
    seq = client_mask_seq_++;
    MPCACHE_ASSIGN_OR_RETURN(opened, ctx.OpenOwned(mpc::Add(std::move(masks.r), index)));
  }
  {
    // Nothing leaves before every opening so far (binary and arithmetic) passed its check.
    net::PhaseScope phase(ctx.stats(), "mac_check");
    MPCACHE_RETURN_IF_ERROR(mpc::CheckAllMacs<P>(bctx));
  }
  return client.TokenOutput(pos, seq, opened[0]);
}

template <typename P>
Result<SessionReport> GenerationSession<P>::Generate(ClientLink& client, int prompt_len, int steps,
                                                     const PositionHook& after_position) {
  if (prompt_len < 1) return InvalidArgument("the prompt needs at least BOS");
  if (steps < 1) return InvalidArgument("steps must be >= 1");
  if (steps > engine_->max_seq_len()) steps = engine_->max_seq_len();
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto decode_start = t0;
  SessionReport report;
  net::CommStats& stats = engine_->context().arith().stats();
  std::map<std::string, net::PhaseCounters> at_decode_start;
  // The prompt rows, entered and checked a chunk at a time.
  const int input_rows = std::min(prompt_len, steps);
  const std::size_t vocab = static_cast<std::size_t>(engine_->config().vocab_size);
  const int chunk_rows = static_cast<int>(std::max<std::size_t>(1, kInputChunkValues / vocab));
  Shares<P> chunk;
  int chunk_first = 0, chunk_count = 0;
  const auto prompt_row = [&](int pos) -> Result<Shares<P>> {
    if (pos >= chunk_first + chunk_count) {
      chunk_first = pos;
      chunk_count = std::min(chunk_rows, input_rows - pos);
      MPCACHE_ASSIGN_OR_RETURN(chunk, InputPromptRows(client, chunk_first, chunk_count));
    }
    return chunk.Slice(static_cast<std::size_t>(pos - chunk_first) * vocab, vocab);
  };
  MPCACHE_ASSIGN_OR_RETURN(Shares<P> one_hot, prompt_row(0));
  const bool sampling = !engine_->options().sampling.Greedy();
  Shares<P> noise;  // sampling: the client's noise of every position from prompt_len - 1 on
  int sampled = 0;
  // The KV policy learns the prompt's (public) length: its static eviction's shape.
  MPCACHE_RETURN_IF_ERROR(engine_->kv().BeginPrompt(prompt_len));
  for (int pos = 0; pos < steps; ++pos) {
    if (pos == prompt_len - 1) {
      decode_start = Clock::now();
      at_decode_start = stats.phases();
    }
    if (Status s = engine_->Forward(one_hot, pos); !s.ok()) {
      return s.error().WithContext("secure forward at position " + std::to_string(pos));
    }
    report.positions = pos + 1;
    if (pos == prompt_len - 1) {
      // The prompt is in the cache: the policy's eviction point (its own window).
      MPCACHE_RETURN_IF_ERROR(engine_->kv().EndPrefill(engine_->context().arith(), 0));
    }
    if (pos + 1 < prompt_len) {
      if (after_position) MPCACHE_RETURN_IF_ERROR(after_position(pos, *engine_));
      mpc::BinaryContext<P>& bctx = engine_->context();
      if (32 * bctx.arith().pending_openings() + 9 * bctx.pending_openings() >=
          engine_->options().prefill_check_bytes) {
        net::PhaseScope phase(stats, "mac_check");
        MPCACHE_RETURN_IF_ERROR(mpc::CheckAllMacs<P>(bctx));
      }
      MPCACHE_RETURN_IF_ERROR(client.Progress(pos));
      if (pos + 1 < steps) {
        MPCACHE_ASSIGN_OR_RETURN(one_hot, prompt_row(pos + 1));
      }
      continue;
    }
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> logits, engine_->Logits());
    if (after_position) MPCACHE_RETURN_IF_ERROR(after_position(pos, *engine_));
    if (sampling) {
      if (sampled == 0) {
        MPCACHE_ASSIGN_OR_RETURN(noise, InputNoise(client, steps - pos));
      }
      const Shares<P> mine = noise.Slice(static_cast<std::size_t>(sampled) * vocab, vocab);
      MPCACHE_ASSIGN_OR_RETURN(one_hot, engine_->SampleOneHot(logits, mine));
      sampled += 1;
    } else {
      MPCACHE_ASSIGN_OR_RETURN(one_hot, engine_->ArgmaxOneHot(logits));
    }
    report.decode_positions += 1;
    MPCACHE_ASSIGN_OR_RETURN(bool more, ReleaseToken(client, one_hot, pos + 1));
    report.released += 1;
    if (!more) break;
  }
  const auto t1 = Clock::now();
  for (const auto& [name, c] : stats.phases()) {
    net::PhaseCounters d = c;
    if (auto it = at_decode_start.find(name); it != at_decode_start.end()) {
      const net::PhaseCounters& b = it->second;
      d.bytes_sent -= b.bytes_sent;
      d.bytes_received -= b.bytes_received;
      d.messages_sent -= b.messages_sent;
      d.rounds -= b.rounds;
      d.seconds -= b.seconds;
    }
    if (report.decode_positions > 0) report.decode_phases[name] = d;
  }
  report.cached_rows = engine_->kv().layout().length(0);
  report.revealed_selections = engine_->kv().revealed_selections();
  report.epsilon_spent = engine_->kv().epsilon_spent();
  report.seconds = std::chrono::duration<double>(t1 - t0).count();
  report.decode_seconds = std::chrono::duration<double>(t1 - decode_start).count();
  return report;
}

template class GenerationSession<mpc::SemiHonest>;
template class GenerationSession<mpc::Spdz2k>;

}  // namespace mpcache::infer
