// The containers end to end (issue 14): scripts/container-test.sh builds the image from
// docker/Dockerfile and starts the dealer and three parties as four containers from
// deploy/compose.yaml, each with its own YAML and certificate; the client on this host
// must print the golden 64-step story; everything the script created is removed at the
// end, also when the test fails. Label `containers` (minutes: an image build), run by
// `ctest -L containers`, not by the default suite.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "e2e/cluster.h"
#include "golden/golden_texts.h"

namespace mpcache::e2e {
namespace {

using namespace std::chrono_literals;

class Containers : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mpcache-container-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    up_ = true;
  }
  void TearDown() override {
    if (!up_) return;
    Process down({MPCACHE_CONTAINER_TEST_SH, "down", dir_}, dir_ + "/down.out", dir_ + "/down.err");
    const auto code = down.Wait(300s);
    EXPECT_EQ(code, 0) << ReadFile(dir_ + "/down.err");
    if (!HasFailure()) {
      std::vector<std::string> rm{"/bin/rm", "-rf", dir_};
      Process(rm, "/dev/null", "/dev/null").Wait(30s);
    }
  }
  std::string dir_;
  bool up_ = false;
};

TEST_F(Containers, FourContainersFromTheComposeFileGiveTheGoldenStory) {
  ASSERT_FALSE(golden::RequireModelDir().empty());
  Process up({MPCACHE_CONTAINER_TEST_SH, "up", dir_}, dir_ + "/up.out", dir_ + "/up.err");
  ASSERT_EQ(up.Wait(1800s), 0) << ReadFile(dir_ + "/up.err");

  Process client({MPCACHE_CLIENT_BIN, "generate", "--config", dir_ + "/client.yaml", "--prompt",
                  "Once upon a time", "--max-tokens", "64"},
                 dir_ + "/client.out", dir_ + "/client.err");
  ASSERT_EQ(client.Wait(300s), 0) << ReadFile(dir_ + "/client.err");
  std::string text = ReadFile(dir_ + "/client.out");
  if (!text.empty() && text.back() == '\n') text.pop_back();
  EXPECT_EQ(text, golden::kOnceUponATime64) << ReadFile(dir_ + "/client.err");
}

}  // namespace
}  // namespace mpcache::e2e
