#include "model/gguf.h"

#include <cstring>
#include <type_traits>

#include "model/checkpoint_internal.h"

namespace mpcache::model {

namespace {

constexpr int kMaxArrayDepth = 4;
constexpr std::uint32_t kMaxDims = 4;  // GGML_MAX_DIMS

std::string Num(std::uint64_t v) {
  return std::to_string(v);
}

std::uint64_t ScalarSize(GgufValueType t) {
  switch (t) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kBool:
      return 1;
    case GgufValueType::kUint16:
    case GgufValueType::kInt16:
      return 2;
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kFloat32:
      return 4;
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
    case GgufValueType::kFloat64:
    case GgufValueType::kString:  // at least its 8-byte length
      return 8;
    case GgufValueType::kArray:  // at least type + count
      return 12;
  }
  return 0;  // not a valid type
}

class GgufParser {
 public:
  explicit GgufParser(FileReader& reader) : r_(reader) {}

  Result<std::string> ReadString(std::string_view what) {
    MPCACHE_ASSIGN_OR_RETURN(std::uint64_t len, r_.ReadValue<std::uint64_t>(what));
    if (len > r_.remaining()) return r_.Truncated(what, len);
    std::string s(len, '\0');
    MPCACHE_RETURN_IF_ERROR(r_.Read(s.data(), len, what));
    return s;
  }

  // An integer scalar: v.u and v.i both set (v.u = 0 for a negative value; v.i wraps
  // for a uint64 above INT64_MAX).
  template <typename T>
  Result<GgufValue> ReadInteger(GgufValue v, const std::string& what) {
    MPCACHE_ASSIGN_OR_RETURN(T x, r_.template ReadValue<T>(what));
    if constexpr (std::is_signed_v<T>) {
      v.i = x;  // NOLINT(bugprone-signed-char-misuse): int8 metadata is signed
      v.u = x >= 0 ? static_cast<std::uint64_t>(x) : 0;
    } else {
      v.u = x;
      v.i = static_cast<std::int64_t>(x);
    }
    return v;
  }

  Result<GgufValue> ReadValue(GgufValueType type, const std::string& key, int depth) {
    GgufValue v;
    v.type = type;
    const std::string what = "value of metadata key '" + key + "'";
    switch (type) {
      case GgufValueType::kUint8:
        return ReadInteger<std::uint8_t>(v, what);
      case GgufValueType::kInt8:
        return ReadInteger<std::int8_t>(v, what);
      case GgufValueType::kUint16:
        return ReadInteger<std::uint16_t>(v, what);
      case GgufValueType::kInt16:
        return ReadInteger<std::int16_t>(v, what);
      case GgufValueType::kUint32:
        return ReadInteger<std::uint32_t>(v, what);
      case GgufValueType::kInt32:
        return ReadInteger<std::int32_t>(v, what);
      case GgufValueType::kUint64:
        return ReadInteger<std::uint64_t>(v, what);
      case GgufValueType::kInt64:
        return ReadInteger<std::int64_t>(v, what);
      case GgufValueType::kFloat32: {
        MPCACHE_ASSIGN_OR_RETURN(float x, r_.ReadValue<float>(what));
        v.f = x;
        return v;
      }
      case GgufValueType::kFloat64: {
        MPCACHE_ASSIGN_OR_RETURN(double x, r_.ReadValue<double>(what));
        v.f = x;
        return v;
      }
      case GgufValueType::kBool: {
        MPCACHE_ASSIGN_OR_RETURN(std::uint8_t x, r_.ReadValue<std::uint8_t>(what));
        if (x > 1) {
          return CorruptData(r_.path() + ": metadata key '" + key + "': bool value " + Num(x) +
                             " is neither 0 nor 1");
        }
        v.u = x;
        v.i = x;
        return v;
      }
      case GgufValueType::kString: {
        MPCACHE_ASSIGN_OR_RETURN(v.s, ReadString(what));
        return v;
      }
      case GgufValueType::kArray:
        return ReadArray(std::move(v), key, depth);
    }
    return CorruptData(r_.path() + ": metadata key '" + key + "' has unknown value type " +
                       Num(static_cast<std::uint32_t>(type)) + " (expected 0..12)");
  }

  Result<GgufValue> ReadArray(GgufValue v, const std::string& key, int depth) {
    if (depth >= kMaxArrayDepth) {
      return CorruptData(r_.path() + ": metadata key '" + key + "': arrays nested deeper than " +
                         Num(kMaxArrayDepth));
    }
    const std::string what = "array header of metadata key '" + key + "'";
    MPCACHE_ASSIGN_OR_RETURN(std::uint32_t at, r_.ReadValue<std::uint32_t>(what));
    MPCACHE_ASSIGN_OR_RETURN(std::uint64_t n, r_.ReadValue<std::uint64_t>(what));
    v.array_type = static_cast<GgufValueType>(at);
    const std::uint64_t min_size = ScalarSize(v.array_type);
    if (min_size == 0) {
      return CorruptData(r_.path() + ": metadata key '" + key + "': unknown array element type " +
                         Num(at) + " (expected 0..12)");
    }
    std::uint64_t need = 0;
    if (!CheckedMul(n, min_size, &need) || need > r_.remaining()) {
      return r_.Truncated("the " + Num(n) + " elements of metadata array '" + key + "'",
                          need == 0 ? UINT64_MAX : need);
    }
    v.array.reserve(n);
    for (std::uint64_t k = 0; k < n; ++k) {
      MPCACHE_ASSIGN_OR_RETURN(GgufValue e, ReadValue(v.array_type, key, depth + 1));
      v.array.push_back(std::move(e));
    }
    return v;
  }

 private:
  FileReader& r_;
};

std::uint64_t TypeBytes(std::uint32_t type, std::uint64_t elements) {
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::kF32:
      return elements * 4;
    case GgmlType::kF16:
    case GgmlType::kBF16:
      return elements * 2;
    case GgmlType::kQ8_0:
      return elements / 32 * 34;
  }
  return 0;
}

}  // namespace

bool GgufValue::IsInteger() const {
  switch (type) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kUint16:
    case GgufValueType::kInt16:
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
      return true;
    default:
      return false;
  }
}

std::string GgmlTypeName(std::uint32_t type) {
  static const char* const kNames[] = {
      "F32",     "F16",    "Q4_0",    "Q4_1",  "Q4_2",   "Q4_3",  "Q5_0",  "Q5_1",
      "Q8_0",    "Q8_1",   "Q2_K",    "Q3_K",  "Q4_K",   "Q5_K",  "Q6_K",  "Q8_K",
      "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS",
      "I8",      "I16",    "I32",     "I64",   "F64",    "IQ1_M", "BF16"};
  if (type < sizeof(kNames) / sizeof(kNames[0])) return kNames[type];
  return "type " + std::to_string(type);
}

const GgufValue* GgufFile::Find(const std::string& key) const {
  auto it = metadata.find(key);
  return it == metadata.end() ? nullptr : &it->second;
}

const GgufTensorInfo* GgufFile::FindTensor(const std::string& name) const {
  for (const GgufTensorInfo& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

float HalfToFloat(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1Fu;
  std::uint32_t mant = h & 0x3FFu;
  std::uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);  // inf / nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;  // +-0
  } else {
    // Subnormal: normalise.
    exp = 113;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((mant & 0x3FFu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

Result<GgufFile> ReadGgufHeader(FileReader& reader) {
  const std::string& path = reader.path();
  GgufFile file;
  MPCACHE_RETURN_IF_ERROR(reader.Seek(0));
  MPCACHE_ASSIGN_OR_RETURN(std::uint32_t magic, reader.ReadValue<std::uint32_t>("GGUF magic"));
  if (magic != kGgufMagic) {
    return CorruptData(path + ": wrong magic: expected \"GGUF\" (0x46554747)");
  }
  MPCACHE_ASSIGN_OR_RETURN(file.version, reader.ReadValue<std::uint32_t>("GGUF version"));
  if (file.version != 2 && file.version != 3) {
    return Unsupported(path + ": GGUF version " + Num(file.version) +
                       " is not supported (supported: 2, 3)");
  }
  MPCACHE_ASSIGN_OR_RETURN(std::uint64_t n_tensors,
                           reader.ReadValue<std::uint64_t>("tensor count"));
  MPCACHE_ASSIGN_OR_RETURN(std::uint64_t n_kv, reader.ReadValue<std::uint64_t>("metadata count"));
  // Each key/value needs >= 8 + 4 + 1 bytes, each tensor info >= 8 + 4 + 8 + 4 + 8.
  if (n_kv > reader.remaining() / 13 || n_tensors > reader.remaining() / 32) {
    return CorruptData(path + ": header claims " + Num(n_kv) + " metadata entries and " +
                       Num(n_tensors) + " tensors, more than the " + Num(reader.size()) +
                       "-byte file can hold (truncated?)");
  }
  GgufParser parser(reader);
  for (std::uint64_t k = 0; k < n_kv; ++k) {
    MPCACHE_ASSIGN_OR_RETURN(std::string key, parser.ReadString("metadata key " + Num(k)));
    MPCACHE_ASSIGN_OR_RETURN(std::uint32_t type,
                             reader.ReadValue<std::uint32_t>("type of metadata key '" + key + "'"));
    MPCACHE_ASSIGN_OR_RETURN(GgufValue value,
                             parser.ReadValue(static_cast<GgufValueType>(type), key, 0));
    file.metadata.insert_or_assign(std::move(key), std::move(value));
  }
  if (const GgufValue* a = file.Find("general.alignment")) {
    if (!a->IsInteger() || a->i <= 0 || (a->u & (a->u - 1)) != 0 || a->u > (1u << 20)) {
      return CorruptData(path + ": general.alignment must be a power of two, got " +
                         std::to_string(a->i));
    }
    file.alignment = a->u;
  }
  for (std::uint64_t k = 0; k < n_tensors; ++k) {
    GgufTensorInfo t;
    MPCACHE_ASSIGN_OR_RETURN(t.name, parser.ReadString("name of tensor " + Num(k)));
    const std::string what = "info of tensor '" + t.name + "'";
    MPCACHE_ASSIGN_OR_RETURN(std::uint32_t n_dims, reader.ReadValue<std::uint32_t>(what));
    if (n_dims == 0 || n_dims > kMaxDims) {
      return CorruptData(path + ": tensor '" + t.name + "' has " + Num(n_dims) +
                         " dimensions, expected 1.." + Num(kMaxDims));
    }
    t.elements = 1;
    for (std::uint32_t d = 0; d < n_dims; ++d) {
      MPCACHE_ASSIGN_OR_RETURN(std::uint64_t ne, reader.ReadValue<std::uint64_t>(what));
      if (!CheckedMul(t.elements, ne, &t.elements) || t.elements > (std::uint64_t{1} << 40)) {
        return CorruptData(path + ": tensor '" + t.name + "' has an impossible size");
      }
      t.dims.push_back(ne);
    }
    MPCACHE_ASSIGN_OR_RETURN(t.type, reader.ReadValue<std::uint32_t>(what));
    MPCACHE_ASSIGN_OR_RETURN(t.offset, reader.ReadValue<std::uint64_t>(what));
    if (t.type == static_cast<std::uint32_t>(GgmlType::kQ8_0) && t.dims[0] % 32 != 0) {
      return CorruptData(path + ": Q8_0 tensor '" + t.name + "' has row length " + Num(t.dims[0]) +
                         ", not a multiple of the block size 32");
    }
    t.bytes = TypeBytes(t.type, t.elements);
    if (t.offset % file.alignment != 0) {
      return CorruptData(path + ": tensor '" + t.name + "' offset " + Num(t.offset) +
                         " is not aligned to " + Num(file.alignment));
    }
    file.tensors.push_back(std::move(t));
  }
  const std::uint64_t pos = reader.position();
  file.data_offset = (pos + file.alignment - 1) / file.alignment * file.alignment;
  for (const GgufTensorInfo& t : file.tensors) {
    const std::uint64_t end = file.data_offset + t.offset + t.bytes;
    if (t.offset > reader.size() || end > reader.size() || end < t.offset) {
      return CorruptData(path + ": file is truncated: tensor '" + t.name + "' (" +
                         GgmlTypeName(t.type) + ", " + Num(t.bytes) + " bytes) ends at offset " +
                         Num(end) + ", the file has " + Num(reader.size()) + " bytes");
    }
  }
  return file;
}

Result<std::vector<float>> ReadGgufTensor(FileReader& reader, const GgufFile& file,
                                          const GgufTensorInfo& t) {
  const std::string& path = reader.path();
  if (t.bytes == 0 && t.elements != 0) {
    return Unsupported(path + ": tensor '" + t.name + "' has type " + GgmlTypeName(t.type) +
                       ", which is not supported (supported: F32, F16, BF16, Q8_0)");
  }
  MPCACHE_RETURN_IF_ERROR(reader.Seek(file.data_offset + t.offset));
  std::vector<float> out;
  const std::string what = "tensor '" + t.name + "'";
  switch (static_cast<GgmlType>(t.type)) {
    case GgmlType::kF32:
      MPCACHE_RETURN_IF_ERROR(reader.ReadFloats(out, t.elements, what));
      return out;
    case GgmlType::kF16:
    case GgmlType::kBF16: {
      std::vector<std::uint16_t> raw(t.elements);
      MPCACHE_RETURN_IF_ERROR(reader.Read(raw.data(), t.bytes, what));
      out.resize(t.elements);
      const bool bf16 = t.type == static_cast<std::uint32_t>(GgmlType::kBF16);
      for (std::size_t i = 0; i < raw.size(); ++i) {
        if (bf16) {
          const std::uint32_t bits = static_cast<std::uint32_t>(raw[i]) << 16;
          std::memcpy(&out[i], &bits, 4);
        } else {
          out[i] = HalfToFloat(raw[i]);
        }
      }
      return out;
    }
    case GgmlType::kQ8_0: {
      std::vector<std::uint8_t> raw(t.bytes);
      MPCACHE_RETURN_IF_ERROR(reader.Read(raw.data(), t.bytes, what));
      out.resize(t.elements);
      const std::size_t blocks = t.elements / 32;
      for (std::size_t b = 0; b < blocks; ++b) {
        const std::uint8_t* block = raw.data() + b * 34;
        std::uint16_t d_bits;
        std::memcpy(&d_bits, block, 2);
        const float d = HalfToFloat(d_bits);
        for (std::size_t k = 0; k < 32; ++k) {
          out[b * 32 + k] = d * static_cast<float>(static_cast<std::int8_t>(block[2 + k]));
        }
      }
      return out;
    }
  }
  return Internal("unreachable tensor type");
}

Result<Checkpoint> LoadGguf(const std::string& path) {
  MPCACHE_ASSIGN_OR_RETURN(FileReader reader, FileReader::Open(path));
  return LoadGgufCheckpoint(reader);
}

}  // namespace mpcache::model
