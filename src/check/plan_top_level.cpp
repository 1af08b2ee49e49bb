// Unknown top-level plan members: ignored, one warning line each (plan_top_level.hpp says why).
#include "check/plan_top_level.hpp"

#include <algorithm>
#include <iostream>

namespace kvlayout::check {

std::vector<std::string> ignore_unknown_top_level(const nlohmann::json& plan, const std::vector<std::string>& known,
                                                  const std::string& file) {
  std::vector<std::string> ignored;
  for (auto it = plan.begin(); it != plan.end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) != known.end()) continue;
    ignored.push_back(it.key());
    std::cerr << "kvlayout: warning: " << file << ": /" << it.key() << ": ignoring an unknown top-level member of the plan\n";
  }
  return ignored;
}

}  // namespace kvlayout::check
