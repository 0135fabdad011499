// StepHeartbeat (daemon/step_heartbeat.h): beats at its interval naming the latest
// position, none after it is destroyed, none once the link is gone. The whole-system check
// is the throttled-link fault test (tests/e2e/fault_test.cc): a step slower than the
// client's receive timeout is served instead of aborted.
#include "daemon/step_heartbeat.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace mpcache::daemon {
namespace {

using namespace std::chrono_literals;

TEST(StepHeartbeat, IntervalIsASecondOrAQuarterOfAShortTimeout) {
  EXPECT_EQ(StepHeartbeat::IntervalFor(30000ms), 1000ms);
  EXPECT_EQ(StepHeartbeat::IntervalFor(8000ms), 1000ms);
  EXPECT_EQ(StepHeartbeat::IntervalFor(2000ms), 500ms);
  EXPECT_EQ(StepHeartbeat::IntervalFor(20ms), 10ms);
}

TEST(StepHeartbeat, BeatsWithTheLatestPositionAndStopsWhenDestroyed) {
  std::mutex mu;
  std::vector<int> seen;
  std::atomic<int> after_end{0};
  std::atomic<bool> ended{false};
  {
    StepHeartbeat hb(20ms, [&](int pos) {
      if (ended) ++after_end;
      std::lock_guard<std::mutex> lock(mu);
      seen.push_back(pos);
      return true;
    });
    hb.At(3);
    std::this_thread::sleep_for(150ms);
    hb.At(7);
    std::this_thread::sleep_for(150ms);
    EXPECT_GE(hb.beats(), 4);
  }
  ended = true;
  const std::size_t n = seen.size();
  std::this_thread::sleep_for(100ms);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(seen.size(), n) << "a beat after the heartbeat was destroyed";
  EXPECT_EQ(after_end.load(), 0);
  ASSERT_GE(seen.size(), 4u);
  EXPECT_EQ(seen.front(), 3);
  EXPECT_EQ(seen.back(), 7);
  for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_LE(seen[i - 1], seen[i]);
}

TEST(StepHeartbeat, NoBeatBeforeOneIntervalAndNoneOnceTheLinkIsGone) {
  std::atomic<int> calls{0};
  {
    StepHeartbeat quick(1000ms, [&](int) {
      ++calls;
      return true;
    });
    std::this_thread::sleep_for(50ms);
  }  // destroyed within its first interval: no beat, and no wait for the interval
  EXPECT_EQ(calls.load(), 0);
  {
    StepHeartbeat hb(10ms, [&](int) {
      ++calls;
      return false;  // the client link is gone
    });
    std::this_thread::sleep_for(120ms);
    EXPECT_EQ(hb.beats(), 0);
  }
  EXPECT_EQ(calls.load(), 1);
}

}  // namespace
}  // namespace mpcache::daemon
