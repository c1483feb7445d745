#include "controller/jobs/membership/membership_state.h"

namespace ddp::controller {

bool MembershipState::settled(const std::vector<std::string>& members) const {
  for (const auto& id : members) {
    if (!steppedInGeneration.count(id)) return false;
  }
  return true;
}

std::vector<std::string> MembershipState::retiredAlive(const std::function<bool(const std::string&)>& alive) const {
  std::vector<std::string> kill;
  for (const auto& id : retired) {
    if (alive(id)) kill.push_back(id);
  }
  return kill;
}

void MembershipState::generationFormed(const std::vector<std::string>& members) {
  lastMembers = members;
  note.clear();
  firstLateJoinAt.reset();
}

}  // namespace ddp::controller
