// Private-weight share files: the shares add up to the encoded model, single shares look
// nothing like it, the file round-trips and rejects corruption, and a private session
// loaded from the files gives the same tokens as one split in memory.
#include "infer/share_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "infer/in_process.h"
#include "model/synth.h"

namespace mpcache::infer {
namespace {

std::shared_ptr<const RingModel> SmallModel() {
  auto config = model::ParseDims("16x1x2x2x32x20x8");
  EXPECT_TRUE(config.ok());
  config->shared_classifier = false;
  auto w = model::MakeSyntheticWeights(*config, 3);
  EXPECT_TRUE(w.ok());
  auto m = EncodeModel(*w, 18);
  EXPECT_TRUE(m.ok());
  return *m;
}

TEST(ShareFile, SharesAddUpAndRoundTrip) {
  const auto model = SmallModel();
  auto shares = SplitModel(*model, 3, TestSeed(5));
  ASSERT_TRUE(shares.ok());
  auto split = NewSplit(*model);
  ASSERT_TRUE(split.ok());
  const auto dir = std::filesystem::temp_directory_path() / "mpcache_share_test";
  std::filesystem::create_directories(dir);
  std::vector<ShareFile> read;
  for (int p = 0; p < 3; ++p) {
    const std::string path = ShareFileName(dir.string(), p);
    ASSERT_TRUE(WriteShareFile(path, (*shares)[static_cast<std::size_t>(p)], p, 3, *split).ok());
    auto f = ReadShareFile(path);
    ASSERT_TRUE(f.ok()) << f.error().ToString();
    EXPECT_EQ(f->party, p);
    EXPECT_EQ(f->identity, *split);  // the run's split id and the clear model's hash
    read.push_back(std::move(*f));
  }
  std::vector<const RingVec*> want, got[3];
  model->ForEachTensor([&](const std::string&, const RingVec& t) { want.push_back(&t); });
  for (int p = 0; p < 3; ++p) {
    read[static_cast<std::size_t>(p)].share.ForEachTensor(
        [&](const std::string&, const RingVec& t) { got[p].push_back(&t); });
  }
  std::size_t equal_to_clear = 0, total = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    for (std::size_t j = 0; j < want[i]->size(); ++j) {
      EXPECT_EQ((*got[0][i])[j] + (*got[1][i])[j] + (*got[2][i])[j], (*want[i])[j]);
      equal_to_clear += (*got[0][i])[j] == (*want[i])[j];
      ++total;
    }
  }
  EXPECT_LT(equal_to_clear, total / 100 + 1);
  // Corruption: truncated file and bad magic.
  const std::string path = ShareFileName(dir.string(), 0);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 8);
  EXPECT_FALSE(ReadShareFile(path).ok());
  std::ofstream(path) << "NOTASHAREFILE";
  EXPECT_FALSE(ReadShareFile(path).ok());
  // A file of the first format (no split id) is refused with the fix.
  std::ofstream(path) << "MPCWSHR1" << std::string(64, '\0');
  auto v1 = ReadShareFile(path);
  ASSERT_FALSE(v1.ok());
  EXPECT_EQ(v1.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(v1.error().message().find("mpcache-model share"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mpcache::infer

namespace mpcache::infer {
namespace {

// The share-file path end to end: files written by the owner, each party loads its own.
TEST(ShareFile, PrivateSessionFromFiles) {
  const auto model = SmallModel();
  auto shares = SplitModel(*model, 3, TestSeed(6));
  ASSERT_TRUE(shares.ok());
  auto split = NewSplit(*model);
  ASSERT_TRUE(split.ok());
  const auto dir = std::filesystem::temp_directory_path() / "mpcache_share_session_test";
  std::filesystem::create_directories(dir);
  for (int p = 0; p < 3; ++p) {
    ASSERT_TRUE(WriteShareFile(ShareFileName(dir.string(), p),
                               (*shares)[static_cast<std::size_t>(p)], p, 3, *split)
                    .ok());
  }
  InProcessOptions o;
  o.private_weights = true;
  auto direct = RunInProcess<mpc::Spdz2k>(model, {1, 2}, 1, 5, o);
  o.share_dir = dir.string();
  auto from_files = RunInProcess<mpc::Spdz2k>(model, {1, 2}, 1, 5, o);
  ASSERT_TRUE(direct.ok()) << direct.error().ToString();
  ASSERT_TRUE(from_files.ok()) << from_files.error().ToString();
  EXPECT_EQ(direct->tokens, from_files->tokens);
  // A file of the wrong party is refused.
  std::filesystem::copy_file(ShareFileName(dir.string(), 0), ShareFileName(dir.string(), 1),
                             std::filesystem::copy_options::overwrite_existing);
  auto swapped = RunInProcess<mpc::Spdz2k>(model, {1, 2}, 1, 5, o);
  EXPECT_FALSE(swapped.ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mpcache::infer
