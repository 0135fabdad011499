// The parties refuse to compute with model files that do not belong together: share files
// of two `mpcache-model share` runs of one model (split ids differ), or of two models
// (hashes differ). Each party names the odd one out; files of one split are accepted.
#include "infer/model_identity.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "infer/in_process.h"
#include "infer/share_file.h"
#include "model/synth.h"
#include "net/mem_mesh.h"

namespace mpcache::infer {
namespace {

std::shared_ptr<const RingModel> SmallModel(std::uint64_t seed) {
  auto config = model::ParseDims("16x1x2x2x32x20x8");
  EXPECT_TRUE(config.ok());
  config->shared_classifier = false;
  auto w = model::MakeSyntheticWeights(*config, seed);
  EXPECT_TRUE(w.ok());
  auto m = EncodeModel(*w, 18);
  EXPECT_TRUE(m.ok());
  return *m;
}

TEST(ModelIdentity, HashAndSplitIds) {
  const auto a = SmallModel(3), b = SmallModel(4);
  EXPECT_EQ(ModelHash(*a), ModelHash(*SmallModel(3)));
  EXPECT_NE(ModelHash(*a), ModelHash(*b));
  RingModel finer = *a;
  finer.frac_bits = 17;  // the same numbers at another precision are another model
  EXPECT_NE(ModelHash(*a), ModelHash(finer));
  auto s1 = NewSplit(*a), s2 = NewSplit(*a);
  ASSERT_TRUE(s1.ok() && s2.ok());
  EXPECT_EQ(s1->model_hash, s2->model_hash);
  EXPECT_NE(s1->split_id, s2->split_id);
  EXPECT_TRUE(s1->is_split());
}

TEST(ModelIdentity, CompareNamesTheOddParty) {
  const auto m = SmallModel(3);
  auto a = NewSplit(*m), b = NewSplit(*m), other = NewSplit(*SmallModel(4));
  ASSERT_TRUE(a.ok() && b.ok() && other.ok());
  EXPECT_TRUE(CompareIdentities({*a, *a, *a}, 0, "p0.mpcw").ok());

  // Another split of the same model at party 2: every party names party 2.
  for (int self = 0; self < 3; ++self) {
    const Status s = CompareIdentities({*a, *a, *b}, self, "dir/party" + std::to_string(self));
    ASSERT_FALSE(s.ok());
    const std::string& msg = s.error().message();
    EXPECT_NE(msg.find("party 2 holds " + b->ToString()), std::string::npos) << msg;
    EXPECT_NE(msg.find("parties 0 and 1 hold " + a->ToString()), std::string::npos) << msg;
    EXPECT_NE(msg.find("another split of the same model"), std::string::npos) << msg;
    EXPECT_NE(msg.find("dir/party" + std::to_string(self)), std::string::npos) << msg;
    EXPECT_NE(msg.find("fix:"), std::string::npos) << msg;
  }
  // Another model at party 1.
  const Status s1 = CompareIdentities({*a, *other, *a}, 0, "p0");
  ASSERT_FALSE(s1.ok());
  EXPECT_NE(s1.error().message().find("party 1 holds"), std::string::npos);
  EXPECT_NE(s1.error().message().find("a different model or precision"), std::string::npos);
  // No two alike: all three are listed.
  const Status s3 = CompareIdentities({*a, *b, *other}, 0, "p0");
  ASSERT_FALSE(s3.ok());
  EXPECT_NE(s3.error().message().find("no two alike"), std::string::npos);
  EXPECT_NE(s3.error().message().find("party 2 holds " + other->ToString()), std::string::npos);
  // Public weights: same hash, no split id.
  ModelIdentity pub;
  pub.model_hash = ModelHash(*m);
  EXPECT_TRUE(CompareIdentities({pub, pub, pub}, 1, "stories260K.bin").ok());
  EXPECT_FALSE(CompareIdentities({pub, pub, *a}, 1, "stories260K.bin").ok());
}

// What the daemons run at every session: one exchange over the mesh, the same verdict at
// every party.
TEST(ModelIdentity, AgreeOnModelOverTheMesh) {
  const auto m = SmallModel(3);
  auto a = NewSplit(*m), b = NewSplit(*m);
  ASSERT_TRUE(a.ok() && b.ok());
  for (const bool mixed : {false, true}) {
    auto mesh = net::MemMesh::Create(3);
    ASSERT_TRUE(mesh.ok());
    std::vector<ModelIdentity> ids{*a, *a, mixed ? *b : *a};
    std::vector<Status> results(3);
    std::vector<std::thread> threads;
    for (int p = 0; p < 3; ++p) {
      threads.emplace_back([&, p] {
        results[static_cast<std::size_t>(p)] =
            AgreeOnModel((*mesh)->party(p), ids[static_cast<std::size_t>(p)], "file");
      });
    }
    for (auto& t : threads) t.join();
    for (int p = 0; p < 3; ++p) {
      const Status& s = results[static_cast<std::size_t>(p)];
      EXPECT_EQ(s.ok(), !mixed) << p;
      if (!s.ok()) {
        EXPECT_NE(s.error().message().find("party 2 holds"), std::string::npos);
      }
    }
  }
}

// Two splits of one model made in the test: files mixed from both are refused at the
// first session, naming the party with the other split; one split's files are accepted.
TEST(ModelIdentity, MixedSplitFilesAreRefused) {
  const auto model = SmallModel(3);
  const auto root = std::filesystem::temp_directory_path() / "mpcache_split_test";
  std::filesystem::remove_all(root);
  const auto dir = [&](const std::string& name) { return (root / name).string(); };
  for (const auto& [name, seed] : {std::pair{std::string("a"), 7}, {std::string("b"), 8}}) {
    auto shares = SplitModel(*model, 3, TestSeed(static_cast<std::uint64_t>(seed)));
    auto split = NewSplit(*model);
    ASSERT_TRUE(shares.ok() && split.ok());
    std::filesystem::create_directories(dir(name));
    for (int p = 0; p < 3; ++p) {
      ASSERT_TRUE(WriteShareFile(ShareFileName(dir(name), p),
                                 (*shares)[static_cast<std::size_t>(p)], p, 3, *split)
                      .ok());
    }
  }
  std::filesystem::create_directories(dir("mixed"));
  for (int p = 0; p < 3; ++p) {
    std::filesystem::copy_file(ShareFileName(dir(p == 2 ? "b" : "a"), p),
                               ShareFileName(dir("mixed"), p));
  }
  InProcessOptions o;
  o.private_weights = true;
  o.share_dir = dir("a");
  auto same = RunInProcess<mpc::Spdz2k>(model, {1, 2}, 1, 4, o);
  EXPECT_TRUE(same.ok()) << same.error().ToString();
  o.share_dir = dir("mixed");
  auto mixed = RunInProcess<mpc::Spdz2k>(model, {1, 2}, 1, 4, o);
  ASSERT_FALSE(mixed.ok());
  const std::string msg = mixed.error().message();
  EXPECT_NE(msg.find("party 2 holds split"), std::string::npos) << msg;
  EXPECT_NE(msg.find("another split of the same model"), std::string::npos) << msg;
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace mpcache::infer
