// mpcache-tune's outputs: the party-YAML `mpcache:` fragment of the chosen policy, the
// frontier table, and its PNG plot (gnuplot).
#pragma once

#include <optional>
#include <string>

#include "common/config.h"
#include "common/result.h"
#include "model/mpcache_policy.h"
#include "tune/search.h"

namespace mpcache::tune {

// The knobs of a party file that configure `policy` (none: cache: full); PolicyFromConfig of
// them gives the policy back.
config::MpcacheKnobs KnobsFromPolicy(const std::optional<model::MpcachePolicy>& policy);
// The `mpcache:` section, every knob written, after `comment` lines (each prefixed "# ").
std::string FragmentYaml(const std::optional<model::MpcachePolicy>& policy,
                         const std::string& comment);

// The frontier (and, with `all`, every candidate) as a text table: cost per token, accuracy,
// whether it keeps the floor, the knobs; the chosen row marked.
std::string FrontierTable(const SearchResult& r, const Floor& floor, bool all);

// Accuracy against cost per token (objective's unit) of every candidate, the frontier as a
// line, the floor and the chosen point, as a PNG at `png_path` (runs gnuplot).
Status PlotFrontier(const SearchResult& r, const Floor& floor, Objective objective,
                    const std::string& title, const std::string& png_path);

}  // namespace mpcache::tune
