// The three parties run one protocol: their kernel prices (config::KernelPrices, the party
// YAML's `kernels:` section) pick between fewer rounds and fewer comparisons in softmax's row
// max, the classifier's argmax and SiLU's clip, so parties with different prices would run
// differently shaped protocols and stall or fail each other. AgreeOnKernelPrices exchanges them
// over the session's mesh (one round, 12 bytes to each peer) and refuses the session, naming
// the field, the party and both values, when a peer's differ. Like the model identity
// (infer/model_identity.h) this catches misconfiguration, not a lying party.
#pragma once

#include <string>

#include "common/config.h"
#include "common/result.h"
#include "net/channel.h"

namespace mpcache::daemon {

Status AgreeOnKernelPrices(net::Channel& channel, const config::KernelPrices& mine,
                           const std::string& my_file);

}  // namespace mpcache::daemon
