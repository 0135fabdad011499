// mpcache-netdelay --delay-us N --port IF --port IF ...: a userspace Ethernet switch that
// holds every frame for a fixed one-way delay (delay_switch.h). deploy/netns/netns.sh runs
// it in the switch namespace, in place of the bridge, on a kernel without sch_netem.
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "common/guarded_main.h"
#include "tools/common/cli_checks.h"
#include "tools/netdelay/delay_switch.h"

namespace {

// Exit codes: 2 for a bad command line (as every mpcache command), 1 for the rest.
int ExitCode(const mpcache::Error& error) {
  return error.code() == mpcache::ErrorCode::kInvalidArgument ? 2 : 1;
}

std::string SignalName(std::uint32_t signo) {
  if (signo == SIGTERM) return "SIGTERM";
  if (signo == SIGINT) return "SIGINT";
  return "signal " + std::to_string(signo);
}

}  // namespace

int main(int argc, char** argv) {
  return mpcache::GuardedMain([&]() -> int {
    namespace nd = mpcache::netdelay;
    CLI::App app{
        "mpcache-netdelay: a userspace Ethernet switch between the given interfaces that holds "
        "every frame for a fixed one-way delay (learns MACs, floods unknown destinations; GSO "
        "and checksum-offload metadata pass through). deploy/netns/netns.sh runs it in the "
        "switch namespace when the kernel has no tc netem. Needs CAP_NET_RAW; stops on "
        "SIGTERM or SIGINT and prints its counts."};
    std::int64_t delay_us = 0;
    std::vector<std::string> ports;
    std::uint64_t max_queue_bytes = nd::kDefaultMaxQueueBytes;
    app.add_option("--delay-us", delay_us, "One-way delay added to every frame, microseconds")
        ->required();
    app.add_option("--port", ports, "An interface to switch between (give two or more)")
        ->required();
    app.add_option("--max-queue-bytes", max_queue_bytes,
                   "Bytes queued per output port at most; frames beyond it are dropped")
        ->capture_default_str();
    if (auto code = mpcache::tools::ParseCommandLine(app, argc, argv, "mpcache-netdelay")) {
      return *code;
    }
    const nd::SwitchOptions options{
        .ports = ports,
        .delay = std::chrono::microseconds(delay_us),
        .max_queue_bytes = static_cast<std::size_t>(max_queue_bytes),
    };
    if (const mpcache::Status valid = nd::ValidateOptions(options); !valid.ok()) {
      std::cerr << "mpcache-netdelay: " << valid.error().message() << " (see --help)\n";
      return 2;
    }

    // SIGTERM and SIGINT are blocked and read from a signalfd, which stops Run.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    if (sigprocmask(SIG_BLOCK, &stop_signals, nullptr) != 0) {
      std::cerr << "mpcache-netdelay: sigprocmask: " << std::strerror(errno) << "\n";
      return 1;
    }
    const int stop_fd = signalfd(-1, &stop_signals, SFD_NONBLOCK | SFD_CLOEXEC);
    if (stop_fd < 0) {
      std::cerr << "mpcache-netdelay: signalfd: " << std::strerror(errno) << "\n";
      return 1;
    }

    auto opened = nd::DelaySwitch::Open(options);
    if (!opened.ok()) {
      std::cerr << "mpcache-netdelay: " << opened.error().ToString() << "\n";
      (void)close(stop_fd);
      return ExitCode(opened.error());
    }
    std::string names;
    for (const std::string& port : ports) names += (names.empty() ? "" : " ") + port;
    std::cerr << "mpcache-netdelay: ready: delay " << delay_us << " us one way, ports " << names
              << ", at most " << max_queue_bytes << " bytes queued per port\n"
              << std::flush;

    const mpcache::Result<nd::SwitchStats> stats = (*opened)->Run(stop_fd);
    signalfd_siginfo info{};
    const bool got_signal = read(stop_fd, &info, sizeof(info)) == sizeof(info);
    (void)close(stop_fd);
    if (!stats.ok()) {
      std::cerr << "mpcache-netdelay: " << stats.error().ToString() << "\n";
      return 1;
    }
    std::cerr << "mpcache-netdelay: stopped"
              << (got_signal ? std::string(" by ") + SignalName(info.ssi_signo) : std::string())
              << ": " << nd::FormatStats(*stats) << "\n";
    return 0;
  });
}
