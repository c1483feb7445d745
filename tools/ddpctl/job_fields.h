#pragma once
// Null-safe, typed reads of the controller's JSON objects (docs/API.md) and the job figures
// ddpctl derives from them. Any step of a path may be missing, null or of the wrong type:
// the read is then empty (nullopt / nullptr / "-"), never an exception.
// Thread model: pure functions.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

namespace ddp::ddpctl {

using Json = nlohmann::json;

// The phases after which a job changes no more: Succeeded, Failed, Cancelled.
bool isTerminalPhase(const std::string& phase);

namespace fields {

using Path = std::initializer_list<const char*>;

// The value at `path` under `j`; nullptr when a step is missing, not an object, or null.
const Json* find(const Json& j, Path path);
std::optional<double> number(const Json& j, Path path);
std::optional<int64_t> integer(const Json& j, Path path);  // a number, rounded
std::optional<std::string> text(const Json& j, Path path);
bool flag(const Json& j, Path path);  // true only for a JSON true
// `*v` when it is an array, else an empty array.
const Json& arrayOrEmpty(const Json* v);

// snprintf of one number into a std::string.
std::string formatNumber(const char* fmt, double v);
// The age of the RFC 3339 time at `path` ("5m"), "-" when there is none.
std::string ageSince(const Json& j, Path path, int64_t nowUnix);

// Of a job object:
// "ready/total": workers in state Running over the larger of spec.workers.count and the
// number of workers the controller lists; "-" when neither is known.
std::string workersText(const Json& job);
// Whether training reported any progress (the controller sends zeros before the first
// heartbeat).
bool started(const Json& job);
std::string stepText(const Json& job);  // "120/2814", "120", or "-" before the first step
std::optional<double> progressFraction(const Json& job);  // step / totalSteps in [0, 1]
std::string lossText(const Json& job);                    // "0.5200" or "-"
std::string accuracyText(const Json& job, const char* missing);  // "87.3%" or `missing`
// samples/s, when a speed was measured (the controller reports 0 before the first one).
std::optional<double> speed(const Json& job);
// Seconds left: only for a job not finished whose speed was measured.
std::optional<double> eta(const Json& job);

// Language models (status.progress.valLoss, perplexity, tokensPerSecond, mfu): empty when the
// job does not report them (other models, older controllers).
std::optional<double> valLoss(const Json& job);
// The controller's perplexity, else exp(valLoss) (a controller that sends only the loss).
std::optional<double> perplexity(const Json& job);
std::optional<double> tokensPerSecond(const Json& job);  // only once measured (> 0)
std::optional<double> mfu(const Json& job);              // fraction of the devices' peak
std::string valLossText(const Json& job);     // "2.2500" or "-"
std::string perplexityText(const Json& job);  // "9.49" or "-"
std::string tokensPerSecondText(const Json& job);  // "81920 tokens/s" or ""
std::string mfuText(const Json& job);              // "MFU 42.0%" or ""

}  // namespace fields
}  // namespace ddp::ddpctl
