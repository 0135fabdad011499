#include "tools/bench/compare_ops.h"

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cmath>
#include <ctime>
#include <functional>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <thread>
#include <utility>
#include <vector>

#include "common/fixed_math.h"
#include "common/prg.h"
#include "mpc/compare/rank_select.h"
#include "mpc/compare/select.h"
#include "mpc/io.h"
#include "preproc/local_parties.h"
#include "tools/bench/commands.h"

namespace mpcache::tools {
namespace {

using mpc::BinaryContext;
using mpc::Context;
using mpc::Shares;
using preproc::BatchRequest;
using preproc::BitItem;
using preproc::ItemType;
using Vec = std::vector<std::uint64_t>;

constexpr const char* kOps[] = {"lt",    "max",   "argmax", "topk",    "topk-rank", "exp",
                                "recip", "rsqrt", "silu",   "softmax", "rmsnorm"};
constexpr std::size_t kTopK = 8;
constexpr int kRecipLog2Max = 9;  // softmax denominators are at most the context (512)

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The preprocessing an online run asks for, recorded by the first run.
struct Demand {
  std::mutex mu;
  std::vector<BatchRequest> arith;  // party 0's requests
  std::uint64_t bits[preproc::kNumBitItems] = {};
};

template <typename P>
class RecordingPrep final : public mpc::Preprocessing<P> {
 public:
  RecordingPrep(mpc::Preprocessing<P>& inner, Demand* d) : inner_(inner), d_(d) {}
  mpc::PartyId party() const override { return inner_.party(); }
  mpc::u128 mac_key_share() const override { return inner_.mac_key_share(); }
  Result<mpc::Triples<P>> GetTriples(std::size_t n) override {
    Note({.type = ItemType::kTriple, .count = n});
    return inner_.GetTriples(n);
  }
  Result<mpc::SquarePairs<P>> GetSquares(std::size_t n) override {
    Note({.type = ItemType::kSquare, .count = n});
    return inner_.GetSquares(n);
  }
  Result<mpc::TruncPairs<P>> GetTruncPairs(std::size_t n, int f) override {
    Note({.type = ItemType::kTrunc, .count = n, .frac_bits = f});
    return inner_.GetTruncPairs(n, f);
  }
  Result<Shares<P>> GetBits(std::size_t n) override {
    Note({.type = ItemType::kBit, .count = n});
    return inner_.GetBits(n);
  }
  Result<Shares<P>> GetRandoms(std::size_t n) override {
    Note({.type = ItemType::kRandom, .count = n});
    return inner_.GetRandoms(n);
  }
  Result<mpc::InputMasks<P>> GetInputMasks(std::size_t n, mpc::PartyId owner) override {
    return inner_.GetInputMasks(n, owner);
  }
  Result<mpc::MatrixMask<P>> GetMatrixMask(std::size_t r, std::size_t c) override {
    return inner_.GetMatrixMask(r, c);
  }
  Result<mpc::MatrixTriple<P>> GetMatrixTriple(std::uint64_t id, mpc::MaskSide s,
                                               std::size_t o) override {
    return inner_.GetMatrixTriple(id, s, o);
  }
  Result<mpc::AttentionTriple<P>> GetAttentionTriple(const mpc::AttentionShape& s) override {
    return inner_.GetAttentionTriple(s);
  }
  Result<mpc::FusedTriples<P>> GetFusedTriples(std::size_t n,
                                               const mpc::FusedShape& shape) override {
    Note({.type = ItemType::kFused, .count = n, .frac_bits = shape.Code()});
    return inner_.GetFusedTriples(n, shape);
  }
  bool recording = false;

 private:
  void Note(BatchRequest r) {
    if (!recording || d_ == nullptr || inner_.party() != 0) return;
    std::lock_guard<std::mutex> lock(d_->mu);
    d_->arith.push_back(std::move(r));
  }
  mpc::Preprocessing<P>& inner_;
  Demand* d_;
};

template <typename P>
class RecordingBits final : public mpc::BitPreprocessing<P> {
 public:
  RecordingBits(mpc::BitPreprocessing<P>& inner, Demand* d) : inner_(inner), d_(d) {}
  mpc::PartyId party() const override { return inner_.party(); }
  std::uint64_t bit_mac_key_share() const override { return inner_.bit_mac_key_share(); }
  Result<mpc::BitTriples<P>> GetBitTriples(std::size_t n) override {
    Note(BitItem::kBitTriple, P::kMalicious ? n : 64 * mpc::WordsFor(n));
    return inner_.GetBitTriples(n);
  }
  Result<mpc::EdaBits<P>> GetEdaBits(std::size_t n) override {
    Note(BitItem::kEdaBit, P::kMalicious ? n : 64 * mpc::WordsFor(n));
    return inner_.GetEdaBits(n);
  }
  Result<mpc::DaBits<P>> GetDaBits(std::size_t n) override {
    Note(BitItem::kDaBit, n);
    return inner_.GetDaBits(n);
  }
  Result<mpc::RootTuples<P>> GetRootTuples(std::size_t n) override {
    Note(BitItem::kRootTuple, n);
    return inner_.GetRootTuples(n);
  }
  Result<mpc::BitShares<P>> GetBitRandoms(std::size_t n) override {
    Note(BitItem::kBitRandom, P::kMalicious ? n : 64 * mpc::WordsFor(n));
    return inner_.GetBitRandoms(n);
  }
  Result<mpc::LtzTuples<P>> GetLtzTuples(std::size_t n, int groups) override {
    Note(preproc::LtzItem(groups), P::kMalicious ? n : 64 * mpc::WordsFor(n));
    return inner_.GetLtzTuples(n, groups);
  }
  bool recording = false;

 private:
  void Note(BitItem t, std::size_t n) {
    if (!recording || d_ == nullptr || inner_.party() != 0) return;
    std::lock_guard<std::mutex> lock(d_->mu);
    d_->bits[static_cast<int>(t)] += n;
  }
  mpc::BitPreprocessing<P>& inner_;
  Demand* d_;
};

// Plaintext inputs (ring encodings at f bits) and the float twin.
struct Problem {
  Vec x, y;  // y: second operand (lt) or RMSNorm gains
  std::size_t rows = 1, cols = 0;
  std::vector<double> want;  // float result, or 0/1 / one-hot for selections
  bool exact = false;        // selections: compare in ring units, not reals
};

Problem MakeProblem(const std::string& op, std::size_t n, Prg& prg, int f) {
  const FixedPoint fp{f};
  auto draw = [&](double lo, double hi) { return fp.Encode(lo + (hi - lo) * prg.NextDouble()); };
  auto dec = [&](std::uint64_t v) { return fp.Decode(v); };
  auto s = [](std::uint64_t v) { return static_cast<std::int64_t>(v); };
  Problem p;
  p.cols = n;
  if (op == "lt") {
    for (std::size_t i = 0; i < n; ++i) {
      p.x.push_back(draw(-192.8, 23.9));
      p.y.push_back(i % 16 == 0 ? p.x.back() : draw(-192.8, 23.9));  // some ties
      p.want.push_back(s(p.x[i]) < s(p.y[i]) ? 1.0 : 0.0);
    }
    p.exact = true;
  } else if (op == "max" || op == "argmax" || op == "topk" || op == "topk-rank") {
    const bool topk = op == "topk" || op == "topk-rank";
    for (std::size_t i = 0; i < n; ++i)
      p.x.push_back(topk ? draw(-192.8, 23.9) : draw(-19.2, 22.0));
    std::vector<std::size_t> idx(n);
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(),
                     [&](std::size_t a, std::size_t b) { return s(p.x[a]) > s(p.x[b]); });
    if (op == "max") {
      p.want.push_back(dec(p.x[idx[0]]));
    } else {
      const std::size_t k = topk ? std::min(kTopK, n) : 1;
      p.want.assign(k * n, 0.0);
      for (std::size_t j = 0; j < k; ++j) p.want[j * n + idx[j]] = 1.0;
      p.exact = true;
    }
  } else if (op == "exp" || op == "recip" || op == "rsqrt" || op == "silu") {
    for (std::size_t i = 0; i < n; ++i) {
      if (op == "exp") p.x.push_back(draw(-193.7, 0));
      if (op == "recip") p.x.push_back(draw(1, 61.1));
      if (op == "rsqrt") p.x.push_back(draw(0.0327, 5.43));
      if (op == "silu") p.x.push_back(draw(-4.79, 5.65));
      const double v = dec(p.x.back());
      p.want.push_back(op == "exp"     ? std::exp(v)
                       : op == "recip" ? 1 / v
                       : op == "rsqrt" ? 1 / std::sqrt(v)
                                       : v / (1 + std::exp(-v)));
    }
  } else if (op == "softmax") {
    double mx = -1e300, sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      p.x.push_back(draw(-192.8, 23.9));
      mx = std::max(mx, dec(p.x.back()));
    }
    for (auto v : p.x) sum += std::exp(dec(v) - mx);
    for (auto v : p.x) p.want.push_back(std::exp(dec(v) - mx) / sum);
  } else {  // rmsnorm
    double ss = 0;
    for (std::size_t i = 0; i < n; ++i) {
      p.x.push_back(draw(-8.76, 7.58));
      p.y.push_back(draw(0.5, 1.5));
      ss += dec(p.x.back()) * dec(p.x.back());
    }
    const double inv = 1 / std::sqrt(ss / static_cast<double>(n) + 1e-5);
    for (std::size_t i = 0; i < n; ++i) p.want.push_back(dec(p.x[i]) * inv * dec(p.y[i]));
  }
  return p;
}

template <typename P>
Result<Shares<P>> ShareFrom0(Context<P>& ctx, const Vec& x) {
  return mpc::Input<P>(
      ctx, 0,
      ctx.self() == 0 ? std::span<const std::uint64_t>(x) : std::span<const std::uint64_t>(),
      x.size());
}

struct Theory {
  std::uint64_t rounds = 0, bytes = 0;
};

// The op on shares; `theory` gets the backend's stated cost where the op runs through it.
template <typename P>
Result<Shares<P>> RunOp(BinaryContext<P>& ctx, const std::string& op, const Problem& pr,
                        const Shares<P>& x, const Shares<P>& y, const FixedMathParams& params,
                        Theory* theory) {
  const std::size_t n = x.size();
  const int bits = params.compare_bits;
  const std::uint64_t cmp_bytes = mpc::OpenBytes<P>(bits), mul_bytes = mpc::OpenBytes<P>();
  if (op == "lt") {
    theory->rounds = static_cast<std::uint64_t>(mpc::LtzRounds(bits));
    theory->bytes = 2 * mpc::LtzBytesPerPeer(n, bits, cmp_bytes);
    return mpc::LessThan(ctx, x, y, bits);
  }
  if (op == "argmax") {
    MPCACHE_ASSIGN_OR_RETURN(auto am, mpc::RowArgMax(ctx, x, pr.rows, pr.cols, bits));
    theory->rounds = mpc::ArgMaxRounds(pr.cols, bits);
    theory->bytes = 2 * mpc::ArgMaxBytesPerPeer(pr.rows, pr.cols, bits, cmp_bytes, mul_bytes);
    return std::move(am.one_hot);
  }
  if (op == "topk") {
    const std::size_t k = std::min(kTopK, pr.cols);
    MPCACHE_ASSIGN_OR_RETURN(auto t, mpc::RowTopK(ctx, x, pr.rows, pr.cols, k, bits));
    theory->rounds = k * mpc::ArgMaxRounds(pr.cols, bits);
    theory->bytes = k * 2 * mpc::ArgMaxBytesPerPeer(pr.rows, pr.cols, bits, cmp_bytes, mul_bytes);
    return std::move(t.selection);
  }
  if (op == "topk-rank") {
    const std::size_t k = std::min(kTopK, pr.cols);
    MPCACHE_ASSIGN_OR_RETURN(auto t, mpc::RowTopKByRank(ctx, x, pr.rows, pr.cols, k, bits));
    theory->rounds = mpc::RankTopKRounds(pr.cols, bits);
    theory->bytes =
        2 * mpc::RankTopKBytesPerPeer(pr.rows, pr.cols, k, bits, cmp_bytes,
                                      mpc::OpenBytes<P>(mpc::RankBits(pr.cols)), mul_bytes);
    return std::move(t.selection);
  }
  mpc::SecureBackend<P> be(ctx);
  typename mpc::SecureBackend<P>::Vec lazy;
  if (op == "max") lazy = mpcache::RowMax(be, x, pr.rows, pr.cols, bits);
  if (op == "exp") lazy = mpcache::Exp(be, params, x);
  if (op == "recip") lazy = mpcache::Reciprocal(be, params, x, kRecipLog2Max);
  if (op == "rsqrt") lazy = mpcache::Rsqrt(be, params, x);
  if (op == "silu") lazy = mpcache::Silu(be, params, x);
  if (op == "softmax") lazy = mpcache::Softmax(be, params, x, pr.rows, pr.cols);
  if (op == "rmsnorm") lazy = mpcache::RmsNorm(be, params, x, y, pr.rows, pr.cols, 1e-5);
  // The result as plain shares (the kernel's last truncation opened: part of its cost).
  Shares<P> out = be.Materialize(lazy);
  if (!be.status().ok()) return be.status().error();
  theory->rounds = be.theory().rounds;
  theory->bytes = be.theory().bytes_sent;
  return out;
}

// The kernels' parameters, with the comparison width of --bits.
FixedMathParams ParamsOf(const CompareOpsArgs& a) {
  FixedMathParams p{};
  if (a.bits != 0) p.compare_bits = a.bits;
  if (a.rank_round_cost != -1) p.rank_round_cost = a.rank_round_cost;
  return p;
}

struct PartyReport {
  double seconds = 0, mac_seconds = 0, cpu_seconds = 0;
  net::PhaseCounters online, mac;
  Theory theory;
  Vec output;
};

struct RunReport {
  std::vector<PartyReport> parties;
  double offline_seconds = 0;
  std::uint64_t dealer_bytes = 0, bit_dealer_bytes = 0;
};

template <typename P>
Result<RunReport> RunOnce(const CompareOpsArgs& a, const Seed& master, const Problem& pr,
                          Demand& demand, bool record) {
  preproc::LocalPartiesOptions lo;
  lo.dealer_seed = master;
  lo.bit_seed = DeriveSeed(master, 0xB175);
  lo.local_seed = DeriveSeed(master, 0xC0);
  lo.threads = a.threads;
  MPCACHE_ASSIGN_OR_RETURN(lo.open_style, mpc::ParseOpenStyle(a.open));
  MPCACHE_ASSIGN_OR_RETURN(auto parties, preproc::LocalParties<P>::Create(lo));
  preproc::InProcessDealer<P>* dealer = &parties->dealer();
  preproc::InProcessBitDealer<P>* bits = &parties->bit_dealer();
  std::barrier sync(3);
  RunReport rep;
  Status offline_status = Status::Ok();
  preproc::OfflineStats off0;
  // Every party's calls pass through a recorder (the demand is party 0's).
  std::vector<std::unique_ptr<RecordingPrep<P>>> preps;
  std::vector<std::unique_ptr<RecordingBits<P>>> bpreps;
  typename preproc::LocalParties<P>::Overrides wrap;
  for (int p = 0; p < 3; ++p) {
    preps.push_back(std::make_unique<RecordingPrep<P>>(dealer->store(p), &demand));
    bpreps.push_back(std::make_unique<RecordingBits<P>>(bits->store(p), &demand));
    wrap.prep.push_back(preps.back().get());
    wrap.bits.push_back(bpreps.back().get());
  }
  auto results = parties->Run(
      [&](BinaryContext<P>& party) -> Result<PartyReport> {
        BinaryContext<P>* bctx = &party;
        Context<P>* ctx = &party.arith();
        const auto me = static_cast<std::size_t>(ctx->self());
        RecordingPrep<P>& prep = *preps[me];
        RecordingBits<P>& bprep = *bpreps[me];
        // ---- setup (untimed): input sharing ----
        MPCACHE_ASSIGN_OR_RETURN(Shares<P> x, ShareFrom0(*ctx, pr.x));
        Shares<P> y;
        if (!pr.y.empty()) {
          MPCACHE_ASSIGN_OR_RETURN(y, ShareFrom0(*ctx, pr.y));
        }
        MPCACHE_RETURN_IF_ERROR(ctx->CheckMacs());
        // ---- offline: a thread of party 0 makes the recorded demand ----
        sync.arrive_and_wait();
        // On a thread of its own, as the dealer is a process of its own: the material it
        // allocates comes from that thread's heap arena. Made on party 0's thread, freed by
        // all three, party 0's arena was left trimmed and its online buffers faulted in
        // afresh (~10 000 faults, 0.08-0.14 s of kernel time on 100K malicious comparisons).
        if (ctx->self() == 0 && !record) {
          std::thread offline([&] {
            const auto t0 = std::chrono::steady_clock::now();
            off0 = dealer->stats();
            for (const BatchRequest& r : demand.arith) {
              offline_status = dealer->Provide(r);
              if (!offline_status.ok()) break;
            }
            for (int t = 0; t < preproc::kNumBitItems && offline_status.ok(); ++t) {
              if (demand.bits[t] > 0)
                offline_status = bits->Provide(static_cast<BitItem>(t), demand.bits[t]);
            }
            rep.offline_seconds = Since(t0);
            const auto off1 = dealer->stats();
            for (std::size_t i = 0; i < off1.bytes_to_party.size(); ++i) {
              rep.dealer_bytes =
                  std::max(rep.dealer_bytes, off1.bytes_to_party[i] - off0.bytes_to_party[i]);
            }
            rep.bit_dealer_bytes = bits->stats().correction_bytes;
          });
          offline.join();
        }
        sync.arrive_and_wait();
        MPCACHE_RETURN_IF_ERROR(offline_status);
        // ---- online: the op and the MAC checks of both domains ----
        prep.recording = record;
        bprep.recording = record;
        PartyReport pr_rep;
        ctx->stats().Reset();
        const auto t0 = std::chrono::steady_clock::now();
        timespec c0{}, c1{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        Shares<P> out;
        {
          net::PhaseScope phase(ctx->stats(), a.op);
          MPCACHE_ASSIGN_OR_RETURN(out, RunOp(*bctx, a.op, pr, x, y, ParamsOf(a), &pr_rep.theory));
        }
        const auto tm = std::chrono::steady_clock::now();
        {
          net::PhaseScope phase(ctx->stats(), "mac_check");
          MPCACHE_RETURN_IF_ERROR(mpc::CheckAllMacs(*bctx));
        }
        pr_rep.mac_seconds = Since(tm);
        pr_rep.seconds = Since(t0);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        pr_rep.cpu_seconds = static_cast<double>(c1.tv_sec - c0.tv_sec) +
                             1e-9 * static_cast<double>(c1.tv_nsec - c0.tv_nsec);
        pr_rep.online = ctx->stats().phases().at(a.op);
        pr_rep.mac = ctx->stats().phases().at("mac_check");
        prep.recording = false;
        bprep.recording = false;
        // ---- reveal for the accuracy check (untimed) ----
        MPCACHE_ASSIGN_OR_RETURN(pr_rep.output, ctx->Open(out));
        MPCACHE_RETURN_IF_ERROR(mpc::CheckAllMacs(*bctx));
        return pr_rep;
      },
      wrap);
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ok()) return results[i].error().WithContext("party " + std::to_string(i));
    rep.parties.push_back(std::move(results[i]).value());
  }
  return rep;
}

template <typename P>
Result<nlohmann::json> Run(const CompareOpsArgs& a) {
  Seed master{};
  if (a.seed) {
    master = TestSeed(*a.seed);
  } else {
    MPCACHE_ASSIGN_OR_RETURN(master, OsSeed());
  }
  const FixedMathParams params = ParamsOf(a);
  const int f = params.frac_bits;
  Prg data(DeriveSeed(master, 0xDA7A));
  const Problem pr = MakeProblem(a.op, a.n, data, f);
  Demand demand;
  MPCACHE_ASSIGN_OR_RETURN(RunReport warm, RunOnce<P>(a, DeriveSeed(master, 1), pr, demand, true));
  (void)warm;
  // The timed runs; the median is kept. The heap keeps what earlier runs freed, as a
  // long-running party's does (tools/common/heap_policy.h): trimming it between runs made
  // each run fault its buffers in afresh (2 000-3 000 faults a party, ~8 us each on this VM:
  // 0.015 s semi-honest comparisons measured anywhere up to 0.05 s).
  std::vector<RunReport> runs;
  std::vector<double> seconds_by_run;
  for (int r = 0; r < a.repeat; ++r) {
    MPCACHE_ASSIGN_OR_RETURN(
        RunReport one,
        RunOnce<P>(a, DeriveSeed(master, 2 + static_cast<std::uint64_t>(r)), pr, demand, false));
    double slowest = 0;
    for (const auto& p : one.parties) slowest = std::max(slowest, p.seconds);
    seconds_by_run.push_back(slowest);
    runs.push_back(std::move(one));
  }
  const RunReport& rep = runs[MedianRun(seconds_by_run)];

  double seconds = 0, mac_seconds = 0;
  std::uint64_t bytes = 0, mac_bytes = 0;
  nlohmann::json cpu = nlohmann::json::array(), by_party = nlohmann::json::array();
  for (const auto& p : rep.parties) {
    seconds = std::max(seconds, p.seconds);
    mac_seconds = std::max(mac_seconds, p.mac_seconds);
    bytes = std::max(bytes, p.online.bytes_sent + p.mac.bytes_sent);
    mac_bytes = std::max(mac_bytes, p.mac.bytes_sent);
    cpu.push_back(p.cpu_seconds);
    by_party.push_back(p.online.bytes_sent + p.mac.bytes_sent);
  }
  const PartyReport& p0 = rep.parties[0];
  const FixedPoint fp{f};
  double max_err = 0;
  for (std::size_t i = 0; i < pr.want.size() && i < p0.output.size(); ++i) {
    const double got = pr.exact ? static_cast<double>(static_cast<std::int64_t>(p0.output[i]))
                                : fp.Decode(p0.output[i]);
    max_err = std::max(max_err, std::fabs(got - pr.want[i]));
  }
  nlohmann::json j;
  j["op"] = a.op;
  j["n"] = a.n;
  j["security"] = a.security;
  j["seconds"] = seconds;
  j["bytes_per_party"] = bytes;
  j["rounds"] = p0.online.rounds + p0.mac.rounds;
  j["max_abs_error"] = max_err;
  j["op_rounds"] = p0.online.rounds;
  j["op_bytes_per_party"] = p0.online.bytes_sent;
  j["theory_rounds"] = p0.theory.rounds;
  if (p0.theory.bytes > 0) j["theory_bytes_per_party"] = p0.theory.bytes;
  j["mac_check_seconds"] = mac_seconds;
  j["mac_check_rounds"] = p0.mac.rounds;
  j["mac_check_bytes_per_party"] = mac_bytes;
  j["bytes_by_party"] = by_party;
  j["online_cpu_seconds_by_party"] = cpu;
  j["offline_seconds"] = rep.offline_seconds;
  j["dealer_bytes_per_party"] = rep.dealer_bytes + rep.bit_dealer_bytes;
  j["frac_bits"] = f;
  j["compare_bits"] = params.compare_bits;
  j["rank_round_cost"] = params.rank_round_cost;
  j["open"] = a.open;
  if (a.op == "topk" || a.op == "topk-rank") j["k"] = std::min(kTopK, a.n);
  j["ops_per_second"] = seconds > 0 ? static_cast<double>(a.n) / seconds : 0;
  j["repeat"] = a.repeat;
  j["seconds_by_run"] = seconds_by_run;
  if (a.seed) j["seed"] = *a.seed;
  return j;
}

}  // namespace

bool IsCompareOp(std::string_view op) {
  return std::find(std::begin(kOps), std::end(kOps), op) != std::end(kOps);
}

int RunCompareOps(const CompareOpsArgs& a) {
  if (!IsCompareOp(a.op)) {
    std::cerr << "error: unknown op '" << a.op << "'; valid ops: " << kCompareOps << "\n";
    return 2;
  }
  if (a.n == 0 || a.n > (std::size_t{1} << 22)) {
    std::cerr << "error: --n must be in 1..4194304\n";
    return 2;
  }
  if (a.bits != 0 && (a.bits < ParamsOf({}).frac_bits + 8 || a.bits > 64)) {
    std::cerr << "error: --bits must be in " << ParamsOf({}).frac_bits + 8
              << "..64 (comparisons are exact while |x| < 2^(bits-1)), got " << a.bits << "\n";
    return 2;
  }
  if (a.rank_round_cost != -1) {
    if (const Status st = ParamsOf(a).Validate(); !st.ok()) {
      std::cerr << "error: --rank-round-cost: " << st.error().message() << "\n";
      return 2;
    }
  }
  if (a.op == "topk-rank" && a.n > 2048) {
    std::cerr << "error: --n " << a.n << " is too large for topk-rank (n (n - 1) / 2 comparisons "
              << "per row; use <= 2048, or topk)\n";
    return 2;
  }
  // The per-row inverses compare every value with all their bucket starts but the first
  // (recip: 71, 8 per octave over [1, 2^9]; rsqrt: 207 over the norms' range), so the
  // preprocessing held in process grows by ~0.6 MB (recip) and ~2.5 MB (rsqrt) per value in
  // malicious mode: these caps keep a run near 10 GB.
  if ((a.op == "recip" && a.n > 16384) || (a.op == "rsqrt" && a.n > 4096)) {
    std::cerr << "error: --n " << a.n << " is too large for " << a.op << " (a per-row op: each "
              << "value is compared with every bucket start and the material is held in "
              << "memory; use <= " << (a.op == "recip" ? 16384 : 4096) << ")\n";
    return 2;
  }
  if ((a.op == "argmax" || a.op == "topk") && a.n > 65536) {
    std::cerr << "error: --n " << a.n << " is too large for " << a.op
              << " (one row; use <= 65536)\n";
    return 2;
  }
  Result<nlohmann::json> r =
      a.security == "malicious" ? Run<mpc::Spdz2k>(a) : Run<mpc::SemiHonest>(a);
  if (const int rc = EmitJsonOrError(r, a.json); rc >= 0) return rc;
  const nlohmann::json& j = *r;
  std::cout << a.op << " n=" << a.n << " (" << a.security << "): online "
            << j["seconds"].get<double>() << " s, " << j["bytes_per_party"].get<std::uint64_t>()
            << " bytes/party, " << j["rounds"].get<std::uint64_t>() << " rounds (op "
            << j["op_rounds"].get<std::uint64_t>() << "), max error "
            << j["max_abs_error"].get<double>() << "; offline "
            << j["offline_seconds"].get<double>() << " s\n";
  return 0;
}

}  // namespace mpcache::tools
