// mpcache-fuzz-seeds OUT SOURCE_DIR [MODEL_DIR]: writes a seed corpus for every fuzz target
// under OUT/<target>/ from real inputs: messages made by the encoders, frame streams as a
// party sends them, the shipped YAML configs (SOURCE_DIR/config, SOURCE_DIR/deploy),
// checkpoints and share files written by the project's own writers (small models), and
// the real tokenizer files of MODEL_DIR when given (tok*.bin: read there, never copied
// into the repository).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "../unit/model/test_util.h"
#include "common/prg.h"
#include "daemon/client_protocol.h"
#include "daemon/dealer_protocol.h"
#include "daemon/message_limits.h"
#include "infer/model_identity.h"
#include "infer/ring_model.h"
#include "infer/share_file.h"
#include "mesh.pb.h"
#include "model/checkpoint.h"
#include "model/gguf.h"
#include "model/tokenizer.h"
#include "net/tls/frame_rules.h"
#include "preproc/bit_dealer.h"
#include "preproc/dealer.h"

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;
namespace cp = mpcache::daemon::client_proto;
namespace dp = mpcache::daemon::dealer_proto;
namespace model = mpcache::model;
namespace preproc = mpcache::preproc;

namespace {

class Corpus {
 public:
  Corpus(const fs::path& out, const std::string& target) : dir_(out / target) {
    fs::create_directories(dir_);
    n_ = static_cast<int>(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()));
  }
  void Add(const Bytes& b) {
    std::ofstream f(dir_ / ("seed-" + std::to_string(n_++)), std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
  void AddFile(const fs::path& p, const Bytes& prefix = {}) {
    std::ifstream in(p, std::ios::binary);
    Bytes b = prefix;
    b.insert(b.end(), std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    Add(b);
  }
  fs::path Temp(const std::string& name) const { return dir_ / ("." + name); }

 private:
  fs::path dir_;
  int n_ = 0;
};

Bytes Frame(mpcache::proto::FrameKind kind, std::uint64_t seq, const Bytes& payload) {
  mpcache::proto::FrameHeader h;
  h.set_session_id(42);
  h.set_sequence(seq);
  h.set_kind(kind);
  h.set_payload_length(static_cast<std::uint32_t>(payload.size()));
  const std::string head = h.SerializeAsString();
  Bytes out(4);
  for (int i = 0; i < 4; ++i)
    out[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(head.size() >> (8 * i));
  out.insert(out.end(), head.begin(), head.end());
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

void MeshFrames(const fs::path& out) {
  Corpus c(out, "mesh_frames");
  mpcache::proto::Hello hello;
  hello.set_party_id(1);
  hello.set_num_parties(3);
  hello.set_protocol_version(mpcache::net::kWireProtocolVersion);
  hello.set_session_id(42);
  const std::string hs = hello.SerializeAsString();
  Bytes stream = Frame(mpcache::proto::FRAME_HELLO, 0, Bytes(hs.begin(), hs.end()));
  c.Add(stream);
  std::uint64_t seq = 1;
  cp::Token token{42, 3, 7, 0x1234};
  cp::ErrorMsg error{42, 1, 2, "party 2 (mpcache-party-2) sent a bad MAC"};
  for (const Bytes& m : {cp::Encode(cp::SeedShare{42, {}, {}, 16}), cp::Encode(cp::Progress{42, 1}),
                         cp::Encode(token), cp::Encode(error), cp::Encode(cp::Done{})}) {
    for (const auto& f : mpcache::daemon::Fragment(m, 16)) {
      const Bytes fr = Frame(mpcache::proto::FRAME_DATA, seq++, f);
      stream.insert(stream.end(), fr.begin(), fr.end());
    }
    c.Add(stream);
  }
  const Bytes abort = Frame(mpcache::proto::FRAME_ABORT, 0, {'b', 'y', 'e'});
  stream.insert(stream.end(), abort.begin(), abort.end());
  const Bytes close = Frame(mpcache::proto::FRAME_CLOSE, seq, {});
  stream.insert(stream.end(), close.begin(), close.end());
  c.Add(stream);
  hello.set_setup_failed("the dealer is unreachable");
  hello.set_setup_failed_by(3);
  const std::string hf = hello.SerializeAsString();
  c.Add(Frame(mpcache::proto::FRAME_HELLO, 0, Bytes(hf.begin(), hf.end())));
}

void ClientMessages(const fs::path& out) {
  Corpus c(out, "client_messages");
  c.Add(cp::Encode(cp::Generate{42, 5, 64, 512, 0.8, 0.9, 40}));
  c.Add(cp::Encode(cp::SeedShare{42, {1, 2, 3}, {4, 5, 6}, 16}));
  c.Add(cp::Encode(cp::Prompt{42, {1, 2, 3, 4, 5, 6}}));
  c.Add(cp::Encode(cp::Progress{42, 2}));
  c.Add(cp::Encode(cp::Token{42, 3, 7, 0x1234}));
  c.Add(cp::Encode(cp::Continue{42, 3, true}));
  c.Add(cp::Encode(cp::Done{}));
  c.Add(cp::Encode(cp::ErrorMsg{42, 0, 1, "party 1 timed out"}));
}

template <typename P>
mpcache::Status DealerMessages(const fs::path& out) {
  Corpus c(out, "dealer_messages");
  c.Add(dp::Encode(dp::Hello{2, preproc::Security::kMalicious}));
  c.Add(dp::Encode(dp::HelloReply{preproc::Security::kSemiHonest}));
  dp::Join join;
  join.session = 42;
  join.party = 2;
  join.prompt_len = 5;
  join.steps = 16;
  join.vocab = 32;
  c.Add(dp::Encode(join));
  const auto sec = P::kMalicious ? preproc::Security::kMalicious : preproc::Security::kSemiHonest;
  MPCACHE_ASSIGN_OR_RETURN(auto dealer, preproc::Dealer::Create(sec, mpcache::TestSeed(1), 3));
  std::vector<preproc::BatchRequest> requests(5);
  requests[0].type = preproc::ItemType::kTriple;
  requests[0].count = 3;
  requests[1].type = preproc::ItemType::kTrunc;
  requests[1].count = 2;
  requests[1].frac_bits = 16;
  requests[2].type = preproc::ItemType::kInputMask;
  requests[2].count = 4;
  requests[2].owner = mpcache::mpc::kClient;
  requests[3].type = preproc::ItemType::kMatrixMask;
  requests[3].rows = 2;
  requests[3].cols = 3;
  requests[4].type = preproc::ItemType::kSquare;  // corrections to party 0 (a role table's)
  requests[4].count = 5;
  requests[4].corrector = 0;
  dp::Setup setup;
  for (const auto& r : requests) {
    c.Add(dp::Encode(dp::BatchRequest{r, 0}));
    MPCACHE_ASSIGN_OR_RETURN(auto made, dealer->Make(r));
    for (const auto& b : made.parties) c.Add(dp::EncodeBatch(b));
    if (r.corrector == preproc::kStaticCorrector)
      setup.client_batches.push_back(made.parties.back());
  }
  c.Add(dp::Encode(setup));
  MPCACHE_ASSIGN_OR_RETURN(auto bits, preproc::InProcessBitDealer<P>::Create(mpcache::TestSeed(2),
                                                                             dealer->mac_key(), 3));
  for (int item = 0; item < preproc::kNumBitItems; ++item) {
    const auto it = static_cast<preproc::BitItem>(item);
    const std::int32_t corrector = item % 3;  // role tables name any party
    c.Add(dp::Encode(dp::BitRequest{it, 64, corrector}));
    MPCACHE_ASSIGN_OR_RETURN(auto batches, bits->MakeBatch(it, 64, corrector));
    for (const auto& b : batches) c.Add(dp::EncodeBitBatch(b));
  }
  c.Add(dp::EncodeError("the request differs from party 0's"));
  return mpcache::Status::Ok();
}

void Configs(const fs::path& out, const fs::path& source) {
  Corpus c(out, "configs");
  for (const auto* dir : {"config", "deploy"}) {
    if (!fs::exists(source / dir)) continue;
    for (const auto& e : fs::recursive_directory_iterator(source / dir)) {
      if (!e.is_regular_file() || e.path().extension() != ".yaml") continue;
      const std::string name = e.path().filename().string();
      const std::uint8_t kind = name.find("dealer") != std::string::npos   ? 1
                                : name.find("client") != std::string::npos ? 2
                                                                           : 0;
      c.AddFile(e.path(), {kind});
    }
  }
}

mpcache::Status Models(const fs::path& out, const fs::path& model_dir) {
  Corpus ck(out, "checkpoint");
  Corpus sh(out, "share_file");
  Corpus tk(out, "tokenizer");
  const auto vocab = model::testing::TinyVocabulary({"Once", " upon", " a", " time", "on", "ce"});
  // Small shapes keep the fuzzer fast: rows of 8 for the float formats, rows of 32 (one
  // Q8_0 block) for the quantised ones, one seed with the GGUF vocabulary.
  const int full_vocab = static_cast<int>(vocab.tokens.size());
  for (const bool shared : {true, false}) {
    const model::ModelWeights w =
        model::testing::TinyModel(shared ? 1 : 2, shared, 8, 16, 1, 2, 1, 16, 4);
    const model::ModelWeights q =
        model::testing::TinyModel(shared ? 3 : 4, shared, 32, 32, 1, 2, 1, 16, 4);
    const fs::path tmp = ck.Temp("model");
    MPCACHE_RETURN_IF_ERROR(model::WriteLlama2c(w, tmp.string()));
    ck.AddFile(tmp);
    MPCACHE_RETURN_IF_ERROR(model::WriteLlama2cVersioned(w, tmp.string(), 1));
    ck.AddFile(tmp);
    MPCACHE_RETURN_IF_ERROR(model::WriteLlama2cVersioned(q, tmp.string(), 2));
    ck.AddFile(tmp);
    for (const auto type : {model::GgmlType::kF32, model::GgmlType::kF16}) {
      MPCACHE_RETURN_IF_ERROR(model::WriteGguf(w, nullptr, tmp.string(), type));
      ck.AddFile(tmp);
    }
    MPCACHE_RETURN_IF_ERROR(model::WriteGguf(q, nullptr, tmp.string(), model::GgmlType::kQ8_0));
    ck.AddFile(tmp);
    if (shared) {
      const model::ModelWeights v =
          model::testing::TinyModel(5, true, 8, 16, 1, 2, 1, full_vocab, 4);
      MPCACHE_RETURN_IF_ERROR(model::WriteGguf(v, &vocab, tmp.string(), model::GgmlType::kF16));
      ck.AddFile(tmp);
    }
    fs::remove(tmp);
    MPCACHE_ASSIGN_OR_RETURN(auto ring, mpcache::infer::EncodeModel(w, 16));
    MPCACHE_ASSIGN_OR_RETURN(auto identity, mpcache::infer::NewSplit(*ring));
    MPCACHE_ASSIGN_OR_RETURN(auto shares,
                             mpcache::infer::SplitModel(*ring, 3, mpcache::TestSeed(3)));
    const fs::path stmp = sh.Temp("share");
    MPCACHE_RETURN_IF_ERROR(
        mpcache::infer::WriteShareFile(stmp.string(), shares[0], 0, 3, identity));
    sh.AddFile(stmp);
    fs::remove(stmp);
  }
  const fs::path ttmp = tk.Temp("tok");
  MPCACHE_RETURN_IF_ERROR(model::Tokenizer::WriteLlama2c(vocab, ttmp.string()));
  const auto n = static_cast<std::uint16_t>(vocab.tokens.size() - 1);
  tk.AddFile(ttmp, {static_cast<std::uint8_t>(n & 0xff), static_cast<std::uint8_t>(n >> 8)});
  fs::remove(ttmp);
  if (!model_dir.empty() && fs::exists(model_dir)) {
    for (const auto& e : fs::directory_iterator(model_dir)) {
      const std::string name = e.path().filename().string();
      // tokN.bin holds N tokens (the 32000-token tokenizer.bin is past the target's range).
      const std::string digits = name.size() > 7 ? name.substr(3, name.size() - 7) : "";
      if (name.rfind("tok", 0) != 0 || e.path().extension() != ".bin" || digits.empty() ||
          digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 4) {
        continue;
      }
      const auto count = static_cast<std::uint16_t>(std::stoi(digits) - 1);
      tk.AddFile(e.path(),
                 {static_cast<std::uint8_t>(count & 0xff), static_cast<std::uint8_t>(count >> 8)});
    }
  }
  return mpcache::Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::cerr << "usage: mpcache-fuzz-seeds OUT SOURCE_DIR [MODEL_DIR]\n";
    return 2;
  }
  const fs::path out = argv[1];
  MeshFrames(out);
  ClientMessages(out);
  Configs(out, argv[2]);
  for (const auto& s :
       {DealerMessages<mpcache::mpc::Spdz2k>(out), DealerMessages<mpcache::mpc::SemiHonest>(out),
        Models(out, argc == 4 ? argv[3] : "")}) {
    if (!s.ok()) {
      std::cerr << "mpcache-fuzz-seeds: " << s.error().message() << "\n";
      return 1;
    }
  }
  return 0;
}
