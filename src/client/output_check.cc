#include "client/output_check.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "net/tls/tls_context.h"

namespace mpcache::client {

namespace cp = daemon::client_proto;

TokenReleases::TokenReleases(std::uint64_t session, int prompt_len, int vocab,
                             std::vector<std::uint64_t> out_masks, int skip)
    : session_(session),
      prompt_len_(prompt_len),
      vocab_(vocab),
      skip_(skip),
      out_masks_(std::move(out_masks)),
      next_pos_(static_cast<std::uint32_t>(prompt_len)) {}

Result<std::optional<int>> TokenReleases::Add(int party, const cp::Token& t) {
  if (party < 0 || party > 2) return Internal("no party " + std::to_string(party));
  const std::string who = "party " + std::to_string(party);
  if (t.session != session_) {
    return ProtocolError(
        fmt::format("{} released a token of session {:016x}, not of this "
                    "request ({:016x}): refusing the output",
                    who, t.session, session_));
  }
  if (t.pos != next_pos_) {
    return ProtocolError(who + " released position " + std::to_string(t.pos) + " while position " +
                         std::to_string(next_pos_) + " is the next: refusing the output");
  }
  auto& mine = slot_[static_cast<std::size_t>(party)];
  if (mine) {
    return ProtocolError(who + " released position " + std::to_string(t.pos) +
                         " twice: refusing the output");
  }
  mine = t;
  for (const auto& s : slot_) {
    if (!s) return std::optional<int>();
  }
  const auto same = [this](int a, int b) {
    const cp::Token& x = *slot_[static_cast<std::size_t>(a)];
    const cp::Token& y = *slot_[static_cast<std::size_t>(b)];
    return x.masked == y.masked && x.mask_seq == y.mask_seq;
  };
  if (!same(0, 1) || !same(1, 2)) {
    // Blame voting: the party that differs from two agreeing parties is named.
    for (int odd = 0; odd < 3; ++odd) {
      const int a = (odd + 1) % 3, b = (odd + 2) % 3;
      if (same(a, b)) {
        return ProtocolError("party " + std::to_string(odd) +
                             " released a different value for position " + std::to_string(t.pos) +
                             " than parties " + std::to_string(std::min(a, b)) + " and " +
                             std::to_string(std::max(a, b)) + ": refusing the output");
      }
    }
    return ProtocolError("the three parties released three different values for position " +
                         std::to_string(t.pos) + ": refusing the output");
  }
  const cp::Token agreed = *slot_[0];
  // The mask of this position, and only it: a token unmasked with another position's mask
  // (or a mask the request does not have) is not the token.
  const std::uint64_t first_out =
      static_cast<std::uint64_t>(prompt_len_) + static_cast<std::uint64_t>(skip_);
  const std::uint64_t want = std::uint64_t{agreed.pos} + static_cast<std::uint64_t>(skip_);
  if (agreed.mask_seq != want || agreed.mask_seq < first_out ||
      agreed.mask_seq - first_out >= out_masks_.size()) {
    return ProtocolError("the parties released position " + std::to_string(agreed.pos) +
                         " under mask " + std::to_string(agreed.mask_seq) + ", not under mask " +
                         std::to_string(want) + " of " + std::to_string(first_out) + ".." +
                         std::to_string(first_out + out_masks_.size() - 1) +
                         ": refusing the output");
  }
  const std::uint64_t token = agreed.masked - out_masks_[agreed.mask_seq - first_out];
  if (token >= static_cast<std::uint64_t>(vocab_)) {
    return ProtocolError("the released token at position " + std::to_string(agreed.pos) + " (" +
                         std::to_string(token) + ") is outside the vocabulary of " +
                         std::to_string(vocab_) + " tokens: refusing the output");
  }
  for (auto& s : slot_) s.reset();
  ++next_pos_;
  return std::optional<int>(static_cast<int>(token));
}

namespace {

// A party's words as one line of printable text: a corrupt party must not be able to forge
// lines of the client's output.
std::string Said(const cp::ErrorMsg& e) {
  return net::PrintableText(e.message, cp::kMaxErrorText);
}

}  // namespace

Error ChooseFailure(const std::array<PartyOutcome, 3>& parties) {
  // Reports are named by the link they came on (each party's is authenticated), not by the
  // reporter field the party filled in.
  // The party blamed by most reports (a stalled party that wakes up may blame an honest
  // one; the two honest parties outvote it).
  std::array<int, 3> votes{};
  for (const PartyOutcome& p : parties) {
    if (p.error && p.error->blamed >= 0 && p.error->blamed < 3) {
      ++votes[static_cast<std::size_t>(p.error->blamed)];
    }
  }
  const auto top = std::max_element(votes.begin(), votes.end());
  if (*top > 0) {
    const int blamed = static_cast<int>(top - votes.begin());
    for (std::size_t i = 0; i < parties.size(); ++i) {
      const PartyOutcome& p = parties[i];
      if (p.error && p.error->blamed == blamed) {
        // What the blamed party says of its own failure, when it says it blames nobody (e.g.
        // it could not reach the dealer): the cause, where the others only saw it missing.
        // (Not when the report already quotes it: a party that failed before the mesh told
        // the others why.)
        const PartyOutcome& own = parties[static_cast<std::size_t>(blamed)];
        const std::string cause =
            own.error && own.error->blamed < 0 &&
                    Said(*p.error).find(Said(*own.error)) == std::string::npos
                ? "; party " + std::to_string(blamed) + " itself reports: " + Said(*own.error)
                : std::string();
        return Aborted("party " + std::to_string(blamed) + " failed (reported by party " +
                       std::to_string(i) + "): " + Said(*p.error) + cause);
      }
    }
  }
  for (const PartyOutcome& p : parties) {
    if (p.lost) return Aborted(p.where + " failed: " + p.lost->message());
  }
  // A MAC check that failed fails at every party alike (all see the same sum), whoever
  // lied: it cannot name the culprit, and the client says so rather than pointing at the
  // party whose report happens to come first.
  const std::string mac_failed(ErrorCodeName(ErrorCode::kMacCheckFailed));
  for (std::size_t i = 0; i < parties.size(); ++i) {
    const PartyOutcome& p = parties[i];
    if (p.error && p.error->message.rfind(mac_failed + ": ", 0) == 0) {
      return MacCheckFailed(
          "a party deviated from the protocol, and a failed MAC check cannot tell which, so "
          "none is named; nothing was released after the failing check (party " +
          std::to_string(i) + " reports: " + Said(*p.error).substr(mac_failed.size() + 2) + ")");
    }
  }
  for (std::size_t i = 0; i < parties.size(); ++i) {
    const PartyOutcome& p = parties[i];
    if (p.error) return Aborted("party " + std::to_string(i) + ": " + Said(*p.error));
  }
  return Internal("the request failed for no stated reason");
}

}  // namespace mpcache::client
