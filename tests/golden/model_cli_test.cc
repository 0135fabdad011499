// Runs the built mpcache-model binary: exact stdout of `run` (golden texts), `info`, and
// one-line errors with non-zero exit codes.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "golden/golden_texts.h"

namespace {

using mpcache::golden::kBosOnly200;
using mpcache::golden::kOnceUponATime64;
using mpcache::golden::RequireModelDir;

struct Output {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

Output RunTool(const std::string& args) {
  const std::string err_file = (std::filesystem::temp_directory_path() /
                                ("mpcache_cli_err_" + std::to_string(::getpid()) + ".txt"))
                                   .string();
  const std::string cmd = Quote(MPCACHE_MODEL_BIN) + " " + args + " 2>" + Quote(err_file);
  Output o;
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return o;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) o.out.append(buf.data(), n);
  const int status = ::pclose(p);
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err_file);
  std::stringstream ss;
  ss << in.rdbuf();
  o.err = ss.str();
  std::filesystem::remove(err_file);
  return o;
}

int Lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

TEST(ModelCliTest, RunLlama2cPrintsGoldenText) {
  const std::string dir = RequireModelDir();
  if (dir.empty()) return;
  const std::string model = Quote(dir + "/stories260K.bin");
  const std::string tok = Quote(dir + "/tok512.bin");
  Output o = RunTool("run --model " + model + " --tokenizer " + tok +
                     " --prompt 'Once upon a time' --steps 64 --temperature 0");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, std::string(kOnceUponATime64) + "\n");
  EXPECT_NE(o.err.find("tok/s"), std::string::npos);  // stats on stderr only
  o = RunTool("run --model " + model + " --tokenizer " + tok + " --steps 200 --temperature 0");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, std::string(kBosOnly200) + "\n");
}

TEST(ModelCliTest, RunGgufWithEmbeddedVocabulary) {
  const std::string dir = RequireModelDir();
  if (dir.empty()) return;
  const std::string model = Quote(dir + "/stories260K.gguf");
  Output o = RunTool("run --model " + model + " --prompt 'Once upon a time' --steps 64");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, std::string(kOnceUponATime64) + "\n");
  o = RunTool("run --model " + model + " --steps 200 --temperature 0");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, std::string(kBosOnly200) + "\n");
}

TEST(ModelCliTest, RunJson) {
  const std::string dir = RequireModelDir();
  if (dir.empty()) return;
  Output o = RunTool("run --model " + Quote(dir + "/stories260K.gguf") +
                     " --prompt 'Once upon a time' --steps 64 --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto j = nlohmann::json::parse(o.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << o.out;
  EXPECT_EQ(j["text"], kOnceUponATime64);
  EXPECT_EQ(j["positions"], 64);
  EXPECT_EQ(j["tokens"][0], 1);
}

TEST(ModelCliTest, SampledRunIsReproducibleWithSeed) {
  const std::string dir = RequireModelDir();
  if (dir.empty()) return;
  const std::string args = "run --model " + Quote(dir + "/stories260K.gguf") +
                           " --steps 40 --temperature 1 --topp 0.9 --seed 1234";
  const Output a = RunTool(args), b = RunTool(args);
  EXPECT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_FALSE(a.out.empty());
}

// Private sampling's twin (issue 18): one seed, one story; the float engine's encoded logits
// and the fixed engine's (the secure engine's arithmetic) agree on it here; another seed
// tells another story; the JSON names the seed and the parameters.
TEST(ModelCliTest, PrivateSamplingTwinIsReproducibleAcrossEngines) {
  const std::string dir = RequireModelDir();
  if (dir.empty()) return;
  const std::string base = "run --model " + Quote(dir + "/stories260K.bin") + " --tokenizer " +
                           Quote(dir + "/tok512.bin") +
                           " --prompt 'Once upon a time' --steps 48 --temperature 0.9 --top-p 0.9 "
                           "--json --seed ";
  const Output fl = RunTool(base + "21"), fx = RunTool(base + "21 --engine fixed"),
               other = RunTool(base + "22 --engine fixed");
  ASSERT_EQ(fl.exit_code, 0) << fl.err;
  ASSERT_EQ(fx.exit_code, 0) << fx.err;
  const auto a = nlohmann::json::parse(fl.out), b = nlohmann::json::parse(fx.out),
             c = nlohmann::json::parse(other.out);
  EXPECT_EQ(a["tokens"], b["tokens"]);
  EXPECT_NE(b["tokens"], c["tokens"]);
  EXPECT_EQ(b["seed"], 21);
  EXPECT_EQ(b["engine"], "fixed");
  EXPECT_EQ(b["sampling"], "temperature 0.9, top-p 0.9");
  EXPECT_EQ(b["sampler"], "private");
}

// Limits that change what runs are said (issue 20), under one rule with the private
// generation: a prompt longer than --steps runs whole and one token is generated; steps
// beyond the context run the context.
TEST(ModelCliTest, LimitsThatChangeWhatRunsAreSaid) {
  const std::string dir = RequireModelDir();
  if (dir.empty()) return;
  const std::string base = "run --model " + Quote(dir + "/stories260K.bin") + " --tokenizer " +
                           Quote(dir + "/tok512.bin") + " --json ";
  const Output longer =
      RunTool(base + "--prompt 'Once upon a time, there was a little girl named Lily' --steps 4");
  ASSERT_EQ(longer.exit_code, 0) << longer.err;
  const auto j = nlohmann::json::parse(longer.out);
  EXPECT_EQ(j["positions"], 15);
  EXPECT_EQ(j["tokens"].size(), 16u);  // the whole prompt and one generated token
  EXPECT_NE(longer.err.find("note: the prompt has 15 tokens (BOS included), more than 4 positions "
                            "asked for: all 15 run and one token is generated"),
            std::string::npos)
      << longer.err;
  const Output beyond = RunTool(base + "--prompt Hi --steps 1000");
  ASSERT_EQ(beyond.exit_code, 0) << beyond.err;
  EXPECT_NE(beyond.err.find("note: steps 1000 is more than the model's context of 512 positions: "
                            "512 run"),
            std::string::npos)
      << beyond.err;
  const Output fits = RunTool(base + "--prompt Hi --steps 20");
  EXPECT_EQ(fits.err.find("note:"), std::string::npos) << fits.err;
}

TEST(ModelCliTest, Info) {
  const std::string dir = RequireModelDir();
  if (dir.empty()) return;
  Output o = RunTool("info --model " + Quote(dir + "/stories260K.bin") + " --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const auto j = nlohmann::json::parse(o.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << o.out;
  EXPECT_EQ(j["format"], "llama2.c legacy");
  EXPECT_EQ(j["dim"], 64);
  EXPECT_EQ(j["n_kv_heads"], 4);
  EXPECT_EQ(j["parameters"], 260032);
  o = RunTool("info --model " + Quote(dir + "/stories260K.gguf"));
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("GGUF"), std::string::npos);
  EXPECT_NE(o.out.find("260032"), std::string::npos);
}

TEST(ModelCliTest, ErrorsAreOneLineAndNonZero) {
  const std::string dir = RequireModelDir();
  if (dir.empty()) return;
  const std::string bin = Quote(dir + "/stories260K.bin");
  struct Case {
    std::string args;
    std::string expect;  // substring of the error line
  };
  const Case cases[] = {
      {"run --model " + bin + " --prompt x", "--tokenizer"},
      {"run --model " + bin + " --tokenizer /nonexistent/tok.bin", "/nonexistent/tok.bin"},
      {"run --model " + bin + " --tokenizer " + Quote(dir + "/tokenizer.bin"), "different model"},
      {"run --model /nonexistent/model.bin --tokenizer x", "/nonexistent/model.bin"},
      {"run --model " + Quote(dir + "/tok512.bin"), "not a model checkpoint"},
      {"info --model /nonexistent/m.gguf", "no such file"},
      {"info --model " + Quote(dir + "/README.md"), "README.md"},
      {"run --model " + Quote(dir), "is a folder, not a file: pass the file itself"},
      {"frobnicate", "unknown command 'frobnicate'; the commands are: info, run, synth"},
      // A misspelt flag is named, also when a required one is missing (CLI11 alone said only
      // "--model is required").
      {"run --modle " + bin, "unknown flag '--modle' for 'run'"},
      {"run --model " + bin + " --tokenizer " + Quote(dir + "/tok512.bin") + " --top_p=0.5",
       "unknown flag '--top_p' for 'run'"},
      // Sampling values outside their ranges: the flag and its range named.
      {"run --model " + bin + " --tokenizer " + Quote(dir + "/tok512.bin") + " --temperature 500",
       "--temperature 500 is out of range: 0 (greedy) or 0.01 .. 100"},
      {"run --model " + bin + " --tokenizer " + Quote(dir + "/tok512.bin") + " --top-p 0",
       "--top-p 0 is out of range: a nucleus mass in (0, 1]"},
      {"run --model " + bin + " --tokenizer " + Quote(dir + "/tok512.bin") + " --top-k 513",
       "--top-k 513 is out of range: 0 (off) .. 512"},
      {"run --model " + bin + " --tokenizer " + Quote(dir + "/tok512.bin") +
           " --temperature 1 --top-k 5 --sampler llama2c",
       "--top-k needs --sampler private"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    const Output o = RunTool(c.args);
    EXPECT_NE(o.exit_code, 0);
    EXPECT_TRUE(o.out.empty()) << o.out;
    EXPECT_EQ(Lines(o.err), 1) << o.err;
    EXPECT_NE(o.err.find(c.expect), std::string::npos) << o.err;
  }
  // Bad arguments: rejected with one line and a non-zero exit.
  for (const std::string& args :
       {"run --model " + bin + " --steps -1", std::string("run --steps 3"),
        std::string("frobnicate"), std::string(""), "run --model " + bin + " --temperature abc"}) {
    SCOPED_TRACE(args);
    const Output o = RunTool(args);
    EXPECT_NE(o.exit_code, 0);
    EXPECT_EQ(Lines(o.err), 1) << o.err;
  }
  const Output help = RunTool("run --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--tokenizer"), std::string::npos);
}

}  // namespace
