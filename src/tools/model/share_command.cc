// `mpcache-model share --model M --parties 3 --out DIR [--frac-bits F]`: splits a checkpoint
// into private-weight share files, one per party (DIR/party<i>.mpcw; infer/share_file.h).
// The weights are encoded as fixed-point ring elements and split additively over Z_2^64
// with a fresh OS-seeded PRG: any single file (indeed any n-1 files) is uniformly random
// and says nothing about the weights. Progress goes to stderr.
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "common/fixed_math.h"
#include "infer/share_file.h"
#include "model/checkpoint.h"
#include "tools/model/commands.h"

namespace mpcache::tools {
namespace {

struct ShareArgs {
  std::string model, out;
  int parties = 3;
  int frac_bits = kRecommendedFracBits;
};

int Fail(const Error& e) {
  std::cerr << "mpcache-model share: " << e.ToString() << "\n";
  return 1;
}

int RunShare(const ShareArgs& args) {
  std::cerr << "share: loading " << args.model << "\n";
  std::shared_ptr<const infer::RingModel> ring;
  {
    auto w = model::LoadCheckpoint(args.model);
    if (!w.ok()) return Fail(w.error());
    auto r = infer::EncodeModel(*w, args.frac_bits);
    if (!r.ok()) return Fail(r.error());
    ring = std::move(r).value();
  }
  std::error_code ec;
  std::filesystem::create_directories(args.out, ec);
  if (ec) return Fail(IoError("cannot create " + args.out + ": " + ec.message()));
  auto seed = OsSeed();
  if (!seed.ok()) return Fail(seed.error());
  std::cerr << "share: splitting " << ring->config.Describe() << " into " << args.parties
            << " additive shares (" << args.frac_bits << " fractional bits)\n";
  auto shares = infer::SplitModel(*ring, args.parties, *seed);
  if (!shares.ok()) return Fail(shares.error());
  // Every file of this run carries its split id and the model's hash: parties given files
  // of different runs refuse to compute (infer/model_identity.h).
  auto split = infer::NewSplit(*ring);
  if (!split.ok()) return Fail(split.error());
  std::cerr << "share: " << split->ToString() << "\n";
  ring.reset();
  for (int p = 0; p < args.parties; ++p) {
    const std::string path = infer::ShareFileName(args.out, p);
    int last = -1;
    auto progress = [&](std::uint64_t done, std::uint64_t total) {
      const int percent = total == 0 ? 100 : static_cast<int>(100 * done / total);
      if (percent != last) {
        last = percent;
        std::cerr << "\rshare: party " << p << ": " << percent << "% (" << (done >> 20) << " MiB)"
                  << std::flush;
      }
    };
    const Status s = infer::WriteShareFile(path, (*shares)[static_cast<std::size_t>(p)], p,
                                           args.parties, *split, progress);
    std::cerr << "\n";
    if (!s.ok()) return Fail(s.error());
    std::cerr << "share: wrote " << path << "\n";
  }
  return 0;
}

}  // namespace

void AddShareCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ShareArgs>();
  CLI::App* cmd = app.add_subcommand(
      "share", "Split a checkpoint into private-weight share files, one per party");
  cmd->add_option("--model", args->model, "Checkpoint (llama2.c .bin or GGUF)")->required();
  cmd->add_option("--parties", args->parties, "Number of parties (3)")->check(CLI::Range(2, 16));
  cmd->add_option("--out", args->out, "Output folder (party<i>.mpcw)")->required();
  cmd->add_option("--frac-bits", args->frac_bits, "Fixed-point fractional bits")
      ->check(CLI::Range(1, 30));
  cmd->callback([args, exit_code] { *exit_code = RunShare(*args); });
}

}  // namespace mpcache::tools
