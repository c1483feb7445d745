#include "common/jobspec/job_names.h"

namespace ddp {
namespace {

bool isLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

}  // namespace

bool isDns1123Label(std::string_view s) {
  if (s.empty() || s.size() > kMaxDnsLabelLength) return false;
  for (char c : s) {
    if (!isLowerAlnum(c) && c != '-') return false;
  }
  return isLowerAlnum(s.front()) && isLowerAlnum(s.back());
}

bool isDns1035Label(std::string_view s) { return isDns1123Label(s) && s.front() >= 'a' && s.front() <= 'z'; }

Status checkJobName(const std::string& name) {
  if (!isDns1035Label(name)) {
    return invalidArgument("must be a DNS-1035 label, as the job's Service is named after it: 1-63 characters of "
                           "a-z, 0-9 and '-', starting with a letter and ending with a letter or digit (got '" +
                           name + "')");
  }
  if (name.size() > kMaxJobNameLength) {
    return invalidArgument("must have at most " + std::to_string(kMaxJobNameLength) + " characters, so that its " +
                           "longest generated name, the worker pod '" + name + std::string(kWorkerPodInfix) +
                           std::to_string(kMaxWorkersPerJob - 1) + "', fits a DNS label's " +
                           std::to_string(kMaxDnsLabelLength) + " (got " + std::to_string(name.size()) + ")");
  }
  return Status::ok();
}

}  // namespace ddp
