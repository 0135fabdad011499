// A private key that group or others may read is refused when a TLS context is made (so
// by every daemon and the client at start-up), with one line naming the file and the fix;
// a 0600 or 0400 key is accepted; deploy/gen-certs.sh writes 0600 keys and brings an
// existing key back to 0600.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "tls_test_util.h"

namespace mpcache::net {
namespace {

namespace fs = std::filesystem;
using testing::Files;

unsigned Mode(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<unsigned>(st.st_mode & 07777) : 0xFFFFu;
}

class KeyFile : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(testing::CertDir().empty()) << "gen-certs.sh failed";
    ASSERT_FALSE(dir_.path().empty());
    files_ = Files("party1");
    const std::string key = dir_.path() + "/my key.pem";  // a space: the fix must quote it
    fs::copy_file(files_.key_file, key);
    files_.key_file = key;
  }
  Status Make(unsigned mode) {
    if (::chmod(files_.key_file.c_str(), mode) != 0) return Internal("chmod failed");
    auto ctx = MakeTlsContext(files_);
    return ctx.ok() ? Status::Ok() : Status(ctx.error());
  }
  testing::TempDir dir_;
  TlsFiles files_;
};

TEST_F(KeyFile, ReadableByGroupOrOthersIsRefusedNamingTheFileAndTheFix) {
  for (const unsigned mode : {0644u, 0640u, 0604u, 0660u, 0606u, 0700u | 0010u}) {
    const Status s = Make(mode);
    ASSERT_FALSE(s.ok()) << std::oct << mode;
    EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument);
    const std::string& m = s.error().message();
    EXPECT_NE(m.find("private key file '" + files_.key_file + "'"), std::string::npos) << m;
    EXPECT_NE(m.find("fix: chmod 600 '" + files_.key_file + "'"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  const Status s = Make(0644);
  EXPECT_NE(s.error().message().find("has mode 0644"), std::string::npos) << testing::Msg(s);
}

TEST_F(KeyFile, OwnerOnlyKeysAreAccepted) {
  EXPECT_TRUE(Make(0600).ok()) << testing::Msg(Make(0600));
  EXPECT_TRUE(Make(0400).ok()) << testing::Msg(Make(0400));
}

TEST_F(KeyFile, MissingDirectoryOrGarbageKeysAreClearErrors) {
  auto f = files_;
  f.key_file = dir_.path() + "/absent.key";
  auto ctx = MakeTlsContext(f);
  ASSERT_FALSE(ctx.ok());
  EXPECT_EQ(ctx.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(ctx.error().message().find("absent.key"), std::string::npos);
  f.key_file = dir_.path();
  ctx = MakeTlsContext(f);
  ASSERT_FALSE(ctx.ok());
  EXPECT_NE(ctx.error().message().find("not a regular file"), std::string::npos)
      << ctx.error().message();
  f.key_file = dir_.path() + "/garbage.key";
  { std::ofstream(f.key_file) << "not a key\n"; }
  ::chmod(f.key_file.c_str(), 0600);
  ctx = MakeTlsContext(f);
  ASSERT_FALSE(ctx.ok());
  EXPECT_NE(ctx.error().message().find("cannot load private key file"), std::string::npos)
      << ctx.error().message();
}

TEST(GenCerts, KeysAre0600AndARerunRepairsAnOpenKey) {
  testing::TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string out = dir.path() + "/certs";
  const std::string cmd = std::string(MPCACHE_GEN_CERTS) + " '" + out + "' 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  for (const char* k : {"ca", "party0", "party1", "party2", "dealer", "client"}) {
    EXPECT_EQ(Mode(out + "/" + k + ".key"), 0600u) << k;
  }
  ASSERT_EQ(::chmod((out + "/party0.key").c_str(), 0644), 0);
  ASSERT_EQ(std::system(cmd.c_str()), 0);  // keeps the files, but not their open mode
  EXPECT_EQ(Mode(out + "/party0.key"), 0600u);
  TlsFiles f{out + "/party0.crt", out + "/party0.key", out + "/ca.crt"};
  EXPECT_TRUE(MakeTlsContext(f).ok());
}

}  // namespace
}  // namespace mpcache::net
