// The full Llama-2-7B shape cut to 2 layers (~2 GB): size and header (label heavy).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "model/synth.h"

namespace mpcache::model {
namespace {

TEST(SynthHeavy, SevenBTwoLayers) {
  ModelConfig c = *ParseDims("7b");
  ASSERT_TRUE(CutLayers(c, 2).ok());
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("mpcache_synth_7b2_" + std::to_string(::getpid()) + ".bin"))
                               .string();
  auto bytes = WriteSyntheticCheckpoint(c, path);
  ASSERT_TRUE(bytes.ok()) << bytes.error().ToString();
  // 32000*4096 + 2*(2*4096 + 4*4096^2 + 3*11008*4096) + 4096 + 4096*128 floats + header.
  const std::uint64_t floats = 32000ull * 4096 +
                               2 * (2 * 4096 + 4ull * 4096 * 4096 + 3ull * 11008 * 4096) + 4096 +
                               4096ull * 128;
  EXPECT_EQ(*bytes, 28 + 4 * floats);
  EXPECT_EQ(std::filesystem::file_size(path), 28 + 4 * floats);
  std::ifstream in(path, std::ios::binary);
  std::int32_t header[7];
  in.read(reinterpret_cast<char*>(header), sizeof(header));
  const std::int32_t want[7] = {4096, 11008, 2, 32, 32, 32000, 4096};
  for (int i = 0; i < 7; ++i) EXPECT_EQ(header[i], want[i]) << "header field " << i;
  std::remove(path.c_str());
}

}  // namespace
}  // namespace mpcache::model
