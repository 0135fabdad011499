// `mpcache-bench generate --rtt-ms R --link-mbit B` (issue 19): the estimate between sites,
// checked field by field against the run's own measured figures (the model is
// tools/bench/link_estimate.h: each round costs rtt/2, the bytes a party sends per token go
// through its uplink).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "golden/golden_texts.h"

namespace {

nlohmann::json RunBench(const std::string& args) {
  const std::string cmd = std::string(MPCACHE_BENCH_BIN) + " generate --model " +
                          mpcache::golden::RequireModelDir() + "/stories260K.bin --tokenizer " +
                          mpcache::golden::RequireModelDir() + "/tok512.bin " + args +
                          " --json 2>/dev/null";
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return {};
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = ::pclose(p);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
  return nlohmann::json::parse(out, nullptr, false);
}

TEST(BenchLinkEstimate, MeasuredTimePlusHalfARoundTripPerRoundPlusTheUplink) {
  const auto j =
      RunBench("--prompt Once --steps 5 --security malicious --rtt-ms 40 --link-mbit 100");
  ASSERT_TRUE(j.is_object() && j.contains("over_link")) << j.dump();
  const double rounds = j["rounds_per_token"], bytes = j["bytes_per_token"];
  const double measured = j["seconds_per_token"];
  ASSERT_GT(rounds, 100);  // stories260K decodes in hundreds of rounds per token
  ASSERT_GT(bytes, 1000);
  const auto& e = j["over_link"];
  EXPECT_EQ(e["rtt_ms"].get<double>(), 40);
  EXPECT_EQ(e["link_mbit"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(e["round_seconds_per_token"].get<double>(), rounds * 0.020);
  EXPECT_DOUBLE_EQ(e["transfer_seconds_per_token"].get<double>(), bytes * 8 / 100e6);
  EXPECT_DOUBLE_EQ(e["seconds_per_token"].get<double>(),
                   measured + rounds * 0.020 + bytes * 8 / 100e6);
}

TEST(BenchLinkEstimate, NoLinkFlagsNoEstimateAndAnUnlimitedUplinkCostsNothing) {
  const auto plain = RunBench("--prompt Once --steps 3 --security semi-honest");
  ASSERT_TRUE(plain.is_object());
  EXPECT_FALSE(plain.contains("over_link"));
  const auto j = RunBench("--prompt Once --steps 3 --security semi-honest --rtt-ms 1");
  ASSERT_TRUE(j.is_object() && j.contains("over_link")) << j.dump();
  EXPECT_EQ(j["over_link"]["transfer_seconds_per_token"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(j["over_link"]["round_seconds_per_token"].get<double>(),
                   j["rounds_per_token"].get<double>() * 0.0005);
}

}  // namespace
