// GGUF v3 (llama.cpp's model format) -> Checkpoint: header, metadata key/values (all
// value types, arrays included), tensor infos, aligned tensor data (general.alignment,
// default 32); F32, F16 and Q8_0 tensors dequantised to float; llama.* hyper-parameters;
// the embedded tokenizer.ggml.* vocabulary converted to llama2.c's convention.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "common/result.h"
#include "model/checkpoint.h"
#include "model/file_io.h"

namespace mpcache::model {

// Loads a GGUF file whose magic has been checked; `reader` is positioned at 0.
Result<Checkpoint> LoadGgufCheckpoint(FileReader& reader);
Result<Checkpoint> LoadGguf(const std::string& path);

}  // namespace mpcache::model
