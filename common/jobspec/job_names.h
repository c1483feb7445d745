#pragma once
// The names a job's Kubernetes objects are given, and the job name rule they imply (Note [Job
// names]). The Kubernetes launcher builds its object names with these (worker_objects.h);
// JobSpec::validate checks metadata.name against kMaxJobNameLength and the DNS-1035 form.
//
// Note [Job names]
// A job's name becomes the name of its headless Service (`<job>`, a DNS-1035 label: 1-63
// characters of a-z, 0-9 and '-', starting with a letter, ending with a letter or digit), the
// `ddp.dev/job` label value of its objects (at most 63 characters) and the prefix of its other
// objects: its worker pods `<job>-worker-<slot>` (a pod name that is also the pod's hostname, a
// DNS-1123 label of at most 63 characters) and its token Secret `<job>-worker-token` (a DNS-1123
// subdomain, at most 253). The longest generated name is the last slot's pod,
// `<job>-worker-4095`, so a job name has at most 63 - 8 - 4 = 51 characters. A name that breaks
// either rule is refused at submission (REST and DDPJob alike), naming the rule, rather than
// when the API server refuses the Service or the pods.
// Thread model: constants and pure functions.

#include <cstddef>
#include <string>
#include <string_view>

#include "common/jobspec/job_spec.h"

namespace ddp {

// The longest name Kubernetes takes for a DNS label (a Service, a pod's hostname, a label value).
inline constexpr size_t kMaxDnsLabelLength = 63;
// Between a job's name and a worker slot in its pods' names.
inline constexpr std::string_view kWorkerPodInfix = "-worker-";
// Suffix of a job's worker token Secret.
inline constexpr std::string_view kWorkerTokenSuffix = "-worker-token";

constexpr size_t decimalDigits(int n) { return n < 10 ? 1 : 1 + decimalDigits(n / 10); }

// The longest job name whose every generated name fits (Note [Job names]): 51.
inline constexpr size_t kMaxJobNameLength =
    kMaxDnsLabelLength - kWorkerPodInfix.size() - decimalDigits(kMaxWorkersPerJob - 1);
static_assert(kMaxJobNameLength == 51);

// Whether `s` is a DNS-1035 label (a Service name): 1-63 characters of a-z, 0-9 and '-',
// starting with a letter, ending with a letter or digit.
bool isDns1035Label(std::string_view s);
// Whether `s` is a DNS-1123 label (a pod's hostname, a namespace): as DNS-1035, but it may start
// with a digit.
bool isDns1123Label(std::string_view s);
// Ok, or the job name rule `name` breaks, in words (Note [Job names]).
Status checkJobName(const std::string& name);

}  // namespace ddp
