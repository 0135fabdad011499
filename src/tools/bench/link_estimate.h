// What a decoding step measured in process (no network) would cost between sites: the
// `--rtt-ms` / `--link-mbit` estimate of `mpcache-bench generate` (issue 19).
//
// Model. A round is one send-then-wait (net::CommStats::RecordRound): in an all-to-all
// opening every party sends at once and waits for its peers, so a round costs one one-way
// delay (rtt / 2) — a king-mode opening is two rounds, two one-way delays. The bytes a party
// sends per token leave through its site's uplink at `link_mbit` (both peers' shares of them;
// 0: unlimited). Local compute is what the in-process run measured, which has no network in
// it. So
//
//   s/token(rtt, B) = measured + rounds x rtt/2 + 8 x bytes / (B x 10^6)
//
// an estimate that ignores TCP's congestion window (long-fat links fill it in a few rounds)
// and assumes the parties compute in lockstep (each waits for the slowest peer anyway).
#pragma once

namespace mpcache::tools {

struct LinkEstimate {
  double rtt_ms = 0;
  double link_mbit = 0;          // 0: unlimited
  double round_seconds = 0;      // rounds x rtt / 2
  double transfer_seconds = 0;   // bytes through the uplink
  double seconds_per_token = 0;  // measured + both
};

inline LinkEstimate EstimateOverLink(double measured_seconds, double rounds, double bytes_sent,
                                     double rtt_ms, double link_mbit) {
  LinkEstimate e;
  e.rtt_ms = rtt_ms;
  e.link_mbit = link_mbit;
  e.round_seconds = rounds * rtt_ms / 2 / 1000;
  e.transfer_seconds = link_mbit > 0 ? 8 * bytes_sent / (link_mbit * 1e6) : 0;
  e.seconds_per_token = measured_seconds + e.round_seconds + e.transfer_seconds;
  return e;
}

}  // namespace mpcache::tools
