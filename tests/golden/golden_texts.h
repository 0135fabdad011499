// The reference outputs of llama2.c (float32, greedy) on stories260K.bin + tok512.bin, from
// ../shared/models/README.md. llama2.c prints each text followed by one "\n".
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace mpcache::golden {

// Prompt "Once upon a time", 64 steps (the prompt's tokens count as steps, BOS first).
inline constexpr const char* kOnceUponATime64 =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.\n"
    "Lily";

// The same prompt and steps with the weights written as Q8_0 (ak42 v2) by the project's own
// writer: the F32 story up to "too high." — then the quantization tips one step.
inline constexpr const char* kOnceUponATime64Q8 =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park. One day, she saw a big, red ball. She wanted to play with it, but it was too high. "
    "She as";

// No prompt (BOS only), 200 steps.
inline constexpr const char* kBosOnly200 =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.\n"
    "Lily's mom said, \"Lily, let's go to the park.\" Lily was sad and didn't know what to do. "
    "She said, \"I want to play with your ball, but I can't find it.\"\n"
    "Lily was sad and didn't know what to do. She said, \"I'm sorry, Lily. I didn't know what "
    "to do.\"\n"
    "Lily didn't want to help her mom, so she";

// Whether `text` (a trailing newline aside) is the golden 64-step story's beginning and goes
// past `prompt`: an empty completion, or the prompt echoed alone, is no pass.
inline ::testing::AssertionResult ContinuesTheGoldenStory(
    std::string text, const std::string& prompt = "Once upon a time") {
  if (!text.empty() && text.back() == '\n') text.pop_back();
  if (text.size() <= prompt.size()) {
    return ::testing::AssertionFailure() << "no generated text after the prompt: '" << text << "'";
  }
  if (std::string(kOnceUponATime64).rfind(text, 0) != 0) {
    return ::testing::AssertionFailure() << "not the golden story's beginning: '" << text << "'";
  }
  return ::testing::AssertionSuccess();
}

// The folder with the test models, from MPCACHE_MODEL_DIR. Records a test failure (never a
// silent skip) and returns "" when it is not set.
inline std::string RequireModelDir() {
  const char* dir = std::getenv("MPCACHE_MODEL_DIR");
  if (dir == nullptr || *dir == '\0') {
    ADD_FAILURE() << "MPCACHE_MODEL_DIR is not set: point it at the folder with "
                     "stories260K.bin, tok512.bin, stories260K.gguf and tokenizer.bin "
                     "(../shared/models here); golden tests cannot run without real weights";
    return "";
  }
  return dir;
}

}  // namespace mpcache::golden
