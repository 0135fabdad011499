// Internal to the step cost model (infer/step_cost.h): the running account of a party that
// the closed forms charge, and the fixed_math kernels' closed forms (kernel_cost.cc), which
// the step (step_cost.cc) composes.
#pragma once

#include <cstdint>
#include <set>

#include "common/fixed_backend.h"
#include "infer/step_cost.h"
#include "mpc/compare/binary_context.h"
#include "mpc/compare/compare.h"
#include "mpc/context.h"

namespace mpcache::infer::step_cost_detail {

using u64 = std::uint64_t;

// The running account of a party: where costs go (one phase at a time) and, for the batched
// MAC check, what was opened since the last check (the distinct opening widths, the pending
// counts, whether the binary domain opened anything, whether an input was broadcast).
class Ledger {
 public:
  explicit Ledger(bool malicious) : mal_(malicious) {}

  bool malicious() const { return mal_; }
  void Into(PhaseCost* to) { to_ = to; }
  // Bytes per value of an opening that keeps `bits` bits (mpc::OpenBytes<P>).
  u64 Width(int bits) const {
    return mal_ ? mpc::OpenBytes<mpc::Spdz2k>(bits) : mpc::OpenBytes<mpc::SemiHonest>(bits);
  }
  u64 B() const { return Width(64); }

  // One round opening `values` full-width values (all-to-all: 2 B each).
  void Exchange(u64 values) {
    Add(1, 0);
    Ride(values);
  }
  // Values opened in the current exchange without a round of their own (pending
  // truncations and deferred K/V rows: mpc::Context::Defer; full width).
  void Ride(u64 values) {
    if (values == 0) return;
    Add(0, 2 * B() * values);
    Log(B(), values);
  }
  // mpc::LessThanZero of n `bits`-bit values: LtzRounds(bits) rounds, 2 x
  // LtzBytesPerPeer(n, bits, OpenBytes<P>(bits)); its first round opens c = x + r at that
  // width, the next ones open bits (combine_bits + root_bits per value) in the binary domain.
  void Ltz(u64 n, int bits) {
    if (n == 0) return;
    Add(static_cast<u64>(mpc::LtzRounds(bits)), 2 * mpc::LtzBytesPerPeer(n, bits, Width(bits)));
    to_->compared_bits += n * static_cast<u64>(bits);
    Log(Width(bits), n);
    const mpc::LtzShape s = mpc::LtzShapeFor(bits);
    binary_bits_ += n * static_cast<u64>(s.combine_bits + s.root_bits);
  }
  // mpc::InputSum of n values: 1 round, every party sends its n masked 8-byte values to each
  // peer (folded into the transcript hash the next MAC check compares).
  void InputSum(u64 n) {
    Add(1, 2 * sizeof(std::uint64_t) * n);
    broadcast_ = true;
  }
  // mpc::CheckAllMacs: malicious, when something is pending: 3 rounds, the arithmetic check
  // (ArithCheckBytes of the distinct opening widths, in bytes; B() when only broadcasts are
  // pending) and the binary one (kBinaryCheckBytes) when bits were opened. Semi-honest: free.
  void Check() {
    if (!mal_) return;
    const bool arith = arith_pending_ > 0 || broadcast_;
    const bool binary = binary_bits_ > 0;
    if (!arith && !binary) return;
    u64 bytes = 0;
    if (arith) {
      u64 widths = 0;
      for (const u64 w : widths_) widths += w;
      bytes += mpc::ArithCheckBytes(widths_.empty() ? B() : widths);
    }
    if (binary) bytes += mpc::kBinaryCheckBytes;
    Add(mpc::kMacCheckRounds, bytes);
    widths_.clear();
    arith_pending_ = 0;
    binary_bits_ = 0;
    broadcast_ = false;
  }
  // Values and bits opened since the last check (malicious).
  u64 pending() const { return arith_pending_ + binary_bits_; }

 private:
  void Add(u64 rounds, u64 bytes) {
    to_->rounds += rounds;
    to_->bytes += bytes;
  }
  void Log(u64 width, u64 values) {
    if (values == 0) return;
    widths_.insert(width);
    arith_pending_ += values;
  }

  bool mal_;
  PhaseCost* to_ = nullptr;
  std::set<u64> widths_;
  u64 arith_pending_ = 0, binary_bits_ = 0;
  bool broadcast_ = false;
};

// The kernels' closed forms (kernel_cost.cc states each one's derivation): the cost of one
// call in the input state the engine gives it.
void SoftmaxCore(Ledger& g, const FixedMathParams& p, u64 rows, u64 cols, int in_shift,
                 int max_bits);
void RmsNormCore(Ledger& g, const FixedMathParams& p, u64 rows, u64 cols, bool in_pending);
void SiluTimesCore(Ledger& g, const FixedMathParams& p, u64 n);
void ArgMaxCore(Ledger& g, const FixedMathParams& p, u64 cols);
void RowMaxCore(Ledger& g, u64 rows, u64 cols, int bits);

// The kernel parameters the closed forms model (FixedMathParams::Validate).
Status CheckMath(const FixedMathParams& p);

}  // namespace mpcache::infer::step_cost_detail
