#include "infer/in_process.h"

#include <algorithm>
#include <barrier>
#include <chrono>

#include "infer/scripted_prep.h"
#include "infer/share_file.h"
#include "preproc/local_parties.h"

namespace mpcache::infer {

class InProcessClient::View final : public ClientLink {
 public:
  View(InProcessClient& client, int party) : client_(client), party_(party) {}
  Result<std::vector<std::uint64_t>> PromptInput(int pos, std::uint64_t mask_seq,
                                                 std::size_t n) override {
    return client_.PromptInput(pos, mask_seq, n);
  }
  Result<std::vector<std::uint64_t>> NoiseInput(std::uint64_t mask_seq, std::size_t n) override {
    return client_.NoiseInput(mask_seq, n);
  }
  Result<bool> TokenOutput(int pos, std::uint64_t mask_seq, std::uint64_t masked) override {
    return client_.TokenOutput(party_, pos, mask_seq, masked);
  }

 private:
  InProcessClient& client_;
  int party_;
};

InProcessClient::InProcessClient(std::vector<int> prompt, int vocab_size, int bos_id,
                                 MaskSource masks, int parties, InputEdit edit)
    : prompt_(std::move(prompt)),
      vocab_size_(vocab_size),
      bos_id_(bos_id),
      source_(std::move(masks)),
      edit_(std::move(edit)) {
  for (int p = 0; p < parties; ++p) links_.push_back(std::make_unique<View>(*this, p));
}

std::vector<int> InProcessClient::Tokens() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int> out(prompt_.begin(), prompt_.end());
  for (const auto& [pos, token] : released_) {
    if (pos >= static_cast<int>(prompt_.size())) out.push_back(token);
  }
  return out;
}

Result<std::vector<std::uint64_t>> InProcessClient::Masks(std::uint64_t seq) {
  while (masks_.size() <= seq) {
    MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> m, source_());
    masks_.push_back(std::move(m));
  }
  return masks_[seq];
}

Result<std::vector<std::uint64_t>> InProcessClient::PromptInput(int pos, std::uint64_t seq,
                                                                std::size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  if (pos < 0 || pos >= static_cast<int>(prompt_.size())) {
    return InvalidArgument("client: no prompt token at position " + std::to_string(pos));
  }
  if (auto it = inputs_.find(pos); it != inputs_.end()) return it->second;
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> r, Masks(seq));
  if (r.size() != n || n != static_cast<std::size_t>(vocab_size_)) {
    return ProtocolError("client: mask batch " + std::to_string(seq) + " has " +
                         std::to_string(r.size()) + " values, expected a one-hot of " +
                         std::to_string(vocab_size_));
  }
  // d = onehot(token) - r
  std::vector<std::uint64_t> x(n, 0);
  x[static_cast<std::size_t>(prompt_[static_cast<std::size_t>(pos)])] = 1;
  if (edit_) {
    edit_(pos, x);
    if (x.size() != n) return InvalidArgument("client: the edited input has the wrong size");
  }
  std::vector<std::uint64_t> d(n);
  for (std::size_t i = 0; i < n; ++i) d[i] = x[i] - r[i];
  inputs_[pos] = d;
  return d;
}

Result<std::vector<std::uint64_t>> InProcessClient::NoiseInput(std::uint64_t seq, std::size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!noise_) return InvalidArgument("client: this request does not sample (no noise source)");
  if (auto it = noise_inputs_.find(seq); it != noise_inputs_.end()) return it->second;
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> r, Masks(seq));
  if (r.size() != n) {
    return ProtocolError("client: mask batch " + std::to_string(seq) + " has " +
                         std::to_string(r.size()) + " values, the noise " + std::to_string(n));
  }
  std::vector<std::uint64_t> d = noise_(n);
  if (d.size() != n) return Internal("client: the noise source gave the wrong size");
  for (std::size_t i = 0; i < n; ++i) d[i] -= r[i];
  noise_inputs_[seq] = d;
  return d;
}

Result<bool> InProcessClient::TokenOutput(int party, int pos, std::uint64_t seq,
                                          std::uint64_t masked) {
  std::lock_guard<std::mutex> lock(mu_);
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> r, Masks(seq));
  if (r.size() != 1) return ProtocolError("client: output mask batch of the wrong size");
  if (auto it = outputs_.find(pos); it != outputs_.end()) {
    if (it->second != masked) {
      return ProtocolError("client: party " + std::to_string(party) +
                           " released a different value for position " + std::to_string(pos));
    }
  } else {
    outputs_[pos] = masked;
  }
  const std::uint64_t token = masked - r[0];
  if (token >= static_cast<std::uint64_t>(vocab_size_)) {
    return ProtocolError("client: released token " + std::to_string(token) +
                         " is outside the vocabulary");
  }
  released_[pos] = static_cast<int>(token);
  return static_cast<int>(token) != bos_id_;
}

namespace {

enum class PrepMode { kDirect, kRecord, kReplay };

template <typename P>
Result<InProcessResult> RunOnce(std::shared_ptr<const RingModel> model,
                                const std::vector<int>& prompt, int bos_id, int steps,
                                const InProcessOptions& options, const InProcessHook<P>& hook,
                                PrepMode mode, std::vector<std::vector<PrepRequest>>& scripts) {
  if (!model) return InvalidArgument("no model");
  if (prompt.empty()) return InvalidArgument("the prompt needs at least BOS");
  for (int t : prompt) {
    if (t < 0 || t >= model->config.vocab_size) {
      return InvalidArgument("prompt token " + std::to_string(t) + " is outside the vocabulary");
    }
  }
  const int parties = 3;
  preproc::LocalPartiesOptions lo = preproc::LocalPartiesFromSeed(options.seed);
  lo.threads = options.threads;
  lo.open_style = options.open_style;
  lo.observe_batches = options.observe_batches;
  lo.observe_bits = options.observe_bits;
  MPCACHE_ASSIGN_OR_RETURN(auto local, preproc::LocalParties<P>::Create(lo));
  preproc::InProcessDealer<P>* dealer = &local->dealer();
  preproc::InProcessBitDealer<P>* bit_dealer = &local->bit_dealer();
  std::vector<RingModel> shares;
  std::vector<ModelIdentity> identities;  // from the share files
  if (options.private_weights && !options.share_dir.empty()) {
    const auto clear_hash = ModelHash(*model);
    for (int p = 0; p < parties; ++p) {
      MPCACHE_ASSIGN_OR_RETURN(ShareFile f, ReadShareFile(ShareFileName(options.share_dir, p)));
      if (f.party != p || f.parties != parties) {
        return InvalidArgument(ShareFileName(options.share_dir, p) + " is share " +
                               std::to_string(f.party) + " of " + std::to_string(f.parties) +
                               ", expected " + std::to_string(p) + " of " +
                               std::to_string(parties));
      }
      if (f.share.frac_bits != model->frac_bits ||
          f.share.config.Describe() != model->config.Describe() ||
          f.identity.model_hash != clear_hash) {
        return InvalidArgument(ShareFileName(options.share_dir, p) +
                               " was made from a different model or precision");
      }
      identities.push_back(f.identity);
      shares.push_back(std::move(f.share));
    }
  } else if (options.private_weights) {
    MPCACHE_ASSIGN_OR_RETURN(shares,
                             SplitModel(*model, parties, DeriveSeed(TestSeed(options.seed), 3)));
  }
  InProcessClient client(
      prompt, model->config.vocab_size, bos_id, [&dealer] { return dealer->NextClientMasks(); },
      parties, options.client_input);
  if (!options.session.sampling.Greedy()) {
    auto noise = std::make_shared<SamplingNoise>(
        options.sampling_seed, options.session.sampling.temperature, model->frac_bits);
    // One stream in position order: Next(positions x vocab) is Next(vocab) per position.
    client.SetNoise([noise](std::size_t n) { return noise->Next(n); });
  }
  InProcessResult result;
  result.phases.resize(parties);
  const int prompt_len = static_cast<int>(prompt.size());

  scripts.resize(parties);
  std::barrier<> prefetched(parties);
  std::vector<double> prefetch_seconds(parties, 0);
  // Per party: the scripted preprocessing (record / replay) and the wrapped channel.
  std::vector<std::unique_ptr<ScriptedPrep<P>>> scripted;
  typename preproc::LocalParties<P>::Overrides over;
  for (int p = 0; p < parties; ++p) {
    scripted.push_back(std::make_unique<ScriptedPrep<P>>(dealer->store(p), bit_dealer->store(p)));
    if (mode != PrepMode::kDirect) {
      over.prep.push_back(scripted.back().get());
      over.bits.push_back(scripted.back().get());
    }
    if (options.wrap_channel) {
      over.channel.push_back(&options.wrap_channel(local->mesh().party(p), p));
    }
  }
  if (mode == PrepMode::kReplay) {
    // Everything fetched before any party's online phase starts.
    over.before = [&](int p) -> Status {
      const auto me = static_cast<std::size_t>(p);
      const auto t0 = std::chrono::steady_clock::now();
      Status s = scripted[me]->Prefetch(scripts[me]);
      prefetch_seconds[me] =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      prefetched.arrive_and_wait();
      return s;
    };
  }
  auto outcomes = local->Run(
      [&](mpc::BinaryContext<P>& bc) -> Result<SessionReport> {
        mpc::BinaryContext<P>* bctx = &bc;
        mpc::Context<P>* ctx = &bc.arith();
        net::Channel& ch = ctx->channel();
        const int self = ctx->self();
        const auto me = static_cast<std::size_t>(self);
        SecureWeights<P> weights;
        if (options.private_weights) {
          const auto t0 = std::chrono::steady_clock::now();
          {
            net::PhaseScope phase(ch.stats(), "load_weights");
            // As the daemons do: the parties compare their files' split ids and model hashes.
            if (!identities.empty()) {
              MPCACHE_RETURN_IF_ERROR(
                  AgreeOnModel(ch, identities[me], ShareFileName(options.share_dir, self)));
            }
            MPCACHE_ASSIGN_OR_RETURN(
                weights,
                PrivateWeights<P>(*ctx, std::move(shares[static_cast<std::size_t>(self)])));
            MPCACHE_RETURN_IF_ERROR(ctx->CheckMacs());
          }
          if (self == 0) {
            result.load_seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            result.load = ch.stats().phases().at("load_weights");
          }
        } else {
          MPCACHE_ASSIGN_OR_RETURN(weights, PublicWeights<P>(*ctx, model));
        }
        // Session traffic only from here on (setup rounds are not part of the figures).
        ch.stats().Reset();
        MPCACHE_ASSIGN_OR_RETURN(auto session,
                                 GenerationSession<P>::Create(*bctx, weights, options.session));
        typename GenerationSession<P>::PositionHook position_hook;
        if (hook) {
          position_hook = [&hook, self](int pos, SecureLlama<P>& e) { return hook(self, pos, e); };
        }
        MPCACHE_ASSIGN_OR_RETURN(
            SessionReport report,
            session->Generate(client.Link(self), prompt_len, steps, position_hook));
        result.phases[me] = ch.stats().phases();
        if (mode == PrepMode::kRecord) scripts[me] = scripted[me]->script();
        return report;
      },
      over);
  // The first party's own failure, rather than another's echo of it (kAborted: a party
  // stopped because a peer failed first).
  for (bool echoes : {false, true}) {
    for (std::size_t p = 0; p < outcomes.size(); ++p) {
      if (!outcomes[p].ok() && (echoes || outcomes[p].error().code() != ErrorCode::kAborted)) {
        return outcomes[p].error().WithContext("party " + std::to_string(p));
      }
    }
  }
  result.report = outcomes[0].value();
  result.tokens = client.Tokens();
  result.offline = dealer->stats();
  const preproc::BitOfflineStats bits = bit_dealer->stats();
  result.bit_dealer_bytes = bits.correction_bytes;
  result.bit_dealer_seconds = bits.dealer_seconds;
  for (double t : prefetch_seconds) result.prefetch_seconds = std::max(result.prefetch_seconds, t);
  return result;
}

}  // namespace

template <typename P>
Result<InProcessResult> RunInProcess(std::shared_ptr<const RingModel> model,
                                     const std::vector<int>& prompt, int bos_id, int steps,
                                     const InProcessOptions& options,
                                     const InProcessHook<P>& hook) {
  std::vector<std::vector<PrepRequest>> scripts;
  if (!options.preprocess_first) {
    return RunOnce<P>(model, prompt, bos_id, steps, options, hook, PrepMode::kDirect, scripts);
  }
  MPCACHE_RETURN_IF_ERROR(
      RunOnce<P>(model, prompt, bos_id, steps, options, {}, PrepMode::kRecord, scripts));
  return RunOnce<P>(model, prompt, bos_id, steps, options, hook, PrepMode::kReplay, scripts);
}

template Result<InProcessResult> RunInProcess<mpc::SemiHonest>(
    std::shared_ptr<const RingModel>, const std::vector<int>&, int, int, const InProcessOptions&,
    const InProcessHook<mpc::SemiHonest>&);
template Result<InProcessResult> RunInProcess<mpc::Spdz2k>(std::shared_ptr<const RingModel>,
                                                           const std::vector<int>&, int, int,
                                                           const InProcessOptions&,
                                                           const InProcessHook<mpc::Spdz2k>&);

}  // namespace mpcache::infer
