// Size limits per message type on a message link, checked while a message is reassembled
// from its DATA frames (daemon/sync_link.h), so that a peer cannot make the receiver hold
// more than the largest message the protocol allows at that point — not the link's
// 1 GiB ceiling. Each limit says where it comes from (the request, the model, a config
// field), and a refusal names it.
//
// Fragments: a message travels as DATA frames of at most kFragmentBytes payload bytes, each
// led by one byte: 1 = more of this message follows, 0 = last. Header-only: the client CLI
// uses it without linking the daemon.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace mpcache::daemon {

inline constexpr std::size_t kFragmentBytes = std::size_t{4} << 20;

// Cuts a message into fragments (continuation byte + at most kFragmentBytes bytes).
inline std::vector<std::vector<std::uint8_t>> Fragment(
    const std::vector<std::uint8_t>& payload, std::size_t fragment_bytes = kFragmentBytes) {
  std::vector<std::vector<std::uint8_t>> frames;
  std::size_t at = 0;
  do {
    const std::size_t n = std::min(fragment_bytes, payload.size() - at);
    std::vector<std::uint8_t> f;
    f.reserve(n + 1);
    f.push_back(at + n < payload.size() ? 1 : 0);
    f.insert(f.end(), payload.begin() + static_cast<std::ptrdiff_t>(at),
             payload.begin() + static_cast<std::ptrdiff_t>(at + n));
    frames.push_back(std::move(f));
    at += n;
  } while (at < payload.size());
  return frames;
}

// The messages a receiver accepts next, by type byte, each with its largest size.
class MessageLimits {
 public:
  using Namer = std::string (*)(std::uint8_t type);
  explicit MessageLimits(Namer namer = nullptr) : namer_(namer) {}

  // Accept messages of `type` of at most `max_bytes` (type byte included); `why` says
  // where the limit comes from, e.g. "8 x prompt_len 5 x vocab 512 + 17: the request's
  // Generate and the model of model.checkpoint".
  MessageLimits& Allow(std::uint8_t type, std::size_t max_bytes, std::string why) {
    limits_[type] = {max_bytes, std::move(why)};
    return *this;
  }

  // Ok when a message of `type` may hold `bytes` bytes (so far); otherwise a protocol error
  // naming `peer`, the message, the limit and where the limit comes from.
  Status Check(std::uint8_t type, std::size_t bytes, const std::string& peer) const {
    const auto it = limits_.find(type);
    if (it == limits_.end()) {
      std::string expected;
      for (const auto& [t, l] : limits_) expected += (expected.empty() ? "" : " or ") + Name(t);
      return ProtocolError(peer + " sent " + Article(type) + " message where " +
                           (expected.empty() ? "nothing" : expected) + " was expected: refused");
    }
    if (bytes > it->second.first) {
      return ProtocolError(peer + " sent " + Article(type) + " message of more than " +
                           std::to_string(it->second.first) +
                           " bytes (the limit: " + it->second.second + "): refused");
    }
    return Status::Ok();
  }

  std::string Name(std::uint8_t type) const {
    return namer_ ? namer_(type) : "type-" + std::to_string(type);
  }

 private:
  std::string Article(std::uint8_t type) const {
    const std::string n = Name(type);
    const bool vowel = !n.empty() && std::string("AEIOUaeiou").find(n[0]) != std::string::npos;
    return (vowel ? "an " : "a ") + n;
  }
  Namer namer_;
  std::map<std::uint8_t, std::pair<std::size_t, std::string>> limits_;
};

// Reassembles one message from its fragments, checking the limits as bytes arrive: the
// message's type is known from the first fragment, and nothing beyond its limit is kept.
// Fragments of at least kKeptFragmentBytes are kept as they come and joined once, into a
// buffer of the message's exact size, when the last arrives (appending each to a growing
// buffer copied a large message — the dealer's answers run to hundreds of MB — about twice,
// into ever fresh pages). Smaller ones are appended to the last kept part, so a peer that
// cuts a message into tiny fragments cannot make the assembler hold a vector per byte: the
// parts kept stay at most hard_max / kKeptFragmentBytes + 1.
class MessageAssembler {
 public:
  // `limits` may be null: then only `hard_max` bounds the message. `peer` names the sender.
  MessageAssembler(const MessageLimits* limits, std::size_t hard_max, std::string peer)
      : limits_(limits), hard_max_(hard_max), peer_(std::move(peer)) {}

  // Adds one fragment. true when the message is complete (then Take() it).
  Result<bool> Add(const std::vector<std::uint8_t>& fragment) {
    return Add(std::vector<std::uint8_t>(fragment));
  }
  Result<bool> Add(std::vector<std::uint8_t>&& fragment) {
    if (fragment.empty()) return ProtocolError(peer_ + " sent an empty frame");
    if (fragment[0] > 1) {
      return ProtocolError(peer_ + " sent a fragment with continuation byte " +
                           std::to_string(fragment[0]) + " (0 or 1 expected)");
    }
    const bool last = fragment[0] == 0;
    const std::size_t n = fragment.size() - 1;
    // A sender never cuts an empty non-final fragment: refusing it bounds the frames one
    // message may take.
    if (!last && n == 0) return ProtocolError(peer_ + " sent an empty non-final fragment");
    const std::size_t total = size_ + n;
    if (total > hard_max_) {
      return ProtocolError(peer_ + " sent a message of more than " + std::to_string(hard_max_) +
                           " bytes");
    }
    if (limits_) {  // an empty message has no type: type 0, which no protocol uses
      const std::uint8_t type = total == 0 ? 0 : size_ == 0 ? fragment[1] : Type();
      MPCACHE_RETURN_IF_ERROR(limits_->Check(type, total, peer_));
    }
    if (n >= kKeptFragmentBytes || (n > 0 && parts_.empty())) {
      parts_.push_back(std::move(fragment));
    } else if (n > 0) {
      parts_.back().insert(parts_.back().end(), fragment.begin() + 1, fragment.end());
    }
    size_ = total;
    return last;
  }

  // Fragments this small are appended to the last part kept instead of kept on their own.
  static constexpr std::size_t kKeptFragmentBytes = std::size_t{64} << 10;
  // The parts held for the message so far (tests: the bound above).
  std::size_t parts_kept() const { return parts_.size(); }

  // The message (its fragments without their continuation bytes, end to end).
  std::vector<std::uint8_t> Take() {
    std::vector<std::uint8_t> message;
    message.reserve(size_);
    for (const std::vector<std::uint8_t>& f : parts_)
      message.insert(message.end(), f.begin() + 1, f.end());
    parts_.clear();
    size_ = 0;
    return message;
  }

 private:
  const MessageLimits* limits_;
  std::size_t hard_max_;
  // The type byte: the first byte of the first non-empty fragment's payload.
  std::uint8_t Type() const { return parts_.front()[1]; }

  std::string peer_;
  std::vector<std::vector<std::uint8_t>> parts_;  // fragments with payload, as received
  std::size_t size_ = 0;                          // payload bytes in parts_
};

}  // namespace mpcache::daemon
