#include "tools/ddpctl/client_commands.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "tools/ddpctl/output_format.h"

namespace ddp::ddpctl {
namespace {

// A command's arguments once its options are taken out.
struct ParsedArgs {
  std::vector<std::string> positional;
  std::map<std::string, std::string> values;  // by the option's long name
  std::set<std::string> flags;
  bool has(const std::string& name) const { return values.count(name) > 0; }
  std::string value(const std::string& name) const {
    auto it = values.find(name);
    return it == values.end() ? "" : it->second;
  }
};

// One option of a command: "--output" with short "-o"; `takesValue` or a flag.
struct OptionSpec {
  const char* name;
  const char* shortName;  // nullptr: none
  bool takesValue;
};

struct CommandContext {
  const ClientIo& io;
  const ApiClient& api;
  const std::string& command;
};

using CommandFn = int (*)(const CommandContext&, const ParsedArgs&);

struct CommandSpec {
  const char* name;
  const char* synopsis;  // after "ddpctl NAME"
  const char* summary;
  std::vector<OptionSpec> options;
  size_t minArgs;
  size_t maxArgs;
  CommandFn run;
  const char* details;  // option descriptions and notes for --help
};

int usageError(const ClientIo& io, const std::string& command, const std::string& message) {
  io.err << "ddpctl " << command << ": " << message << " (see `ddpctl " << command << " --help`)\n";
  return kClientUsage;
}

Result<ParsedArgs> parseArgs(const CommandSpec& spec, const std::vector<std::string>& args) {
  ParsedArgs p;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 2 || a[0] != '-') {  // "-" alone is a positional (stdin)
      p.positional.push_back(a);
      continue;
    }
    const OptionSpec* opt = nullptr;
    std::optional<std::string> inlineValue;
    for (const OptionSpec& o : spec.options) {
      for (const char* n : {o.name, o.shortName}) {
        if (n == nullptr) continue;
        const std::string name = n;
        if (a == name) {
          opt = &o;
        } else if (o.takesValue && a.rfind(name + "=", 0) == 0) {
          opt = &o;
          inlineValue = a.substr(name.size() + 1);
        } else if (o.takesValue && name.size() == 2 && a.rfind(name, 0) == 0 && a[1] != '-') {
          opt = &o;
          inlineValue = a.substr(2);  // -ojson
        }
        if (opt != nullptr) break;
      }
      if (opt != nullptr) break;
    }
    if (opt == nullptr) return invalidArgument("unknown option '" + a + "'");
    if (!opt->takesValue) {
      p.flags.insert(opt->name);
    } else if (inlineValue) {
      p.values[opt->name] = *inlineValue;
    } else if (i + 1 < args.size()) {
      p.values[opt->name] = args[++i];
    } else {
      return invalidArgument(std::string(opt->name) + ": missing value");
    }
  }
  if (p.positional.size() < spec.minArgs) {
    return invalidArgument(std::string("missing argument, expected: ddpctl ") + spec.name + " " + spec.synopsis);
  }
  if (p.positional.size() > spec.maxArgs) {
    return invalidArgument("unexpected argument '" + p.positional[spec.maxArgs] + "'");
  }
  return p;
}

bool parseCount(const std::string& text, int64_t* out) {
  if (text.empty() || text.size() > 12 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  *out = std::stoll(text);
  return true;
}

// --- errors -------------------------------------------------------------------------------------

int reportUnreachable(const CommandContext& c, const Status& st) {
  c.io.err << "ddpctl: cannot reach the controller at " << c.api.server() << ": " << st.message()
           << " (is ddp-controller running? set --server or DDP_SERVER)\n";
  return kClientFailed;
}

std::string detailLine(const ApiErrorDetail& d) {
  std::string where = d.path.empty() ? "document" : d.path;
  if (d.line > 0) where += " (line " + std::to_string(d.line) + ", column " + std::to_string(d.column) + ")";
  return "  " + where + ": " + d.message;
}

// The message and exit status for an HTTP error answer; `job` names the job the request was
// about ("" for none).
int reportReply(const CommandContext& c, const ApiReply& r, const std::string& job) {
  std::ostream& err = c.io.err;
  switch (r.status) {
    case 401:
      err << "ddpctl: the controller refused the token (401): check --token-file / DDP_TOKEN_FILE\n";
      return kClientFailed;
    case 404:
      if (!job.empty()) {
        err << "ddpctl: job " << job << " not found\n";
      } else {
        err << "ddpctl: not found (404): " << r.error << "\n";
      }
      return kClientFailed;
    case 400:
      err << "ddpctl: " << (r.error.empty() ? "bad request (400)" : r.error) << "\n";
      for (const ApiErrorDetail& d : r.details) err << detailLine(d) << "\n";
      return kClientUsage;
    case 409:
    case 413:
    case 415:
      err << "ddpctl: " << (r.error.empty() ? "the controller refused the request" : r.error) << " ("
          << r.status << ")\n";
      return kClientFailed;
    default:
      err << "ddpctl: the controller answered HTTP " << r.status << (r.error.empty() ? "" : ": " + r.error) << "\n";
      return kClientFailed;
  }
}

// Reports a failed call (unreachable or an HTTP error) and returns its exit status; nullopt
// when `reply` is a success.
std::optional<int> failure(const CommandContext& c, const Result<ApiReply>& reply, const std::string& job) {
  if (!reply.isOk()) return reportUnreachable(c, reply.status());
  if (!reply->ok()) return reportReply(c, *reply, job);
  return std::nullopt;
}

// The reply's body as JSON; an error message and nullopt when it is not.
std::optional<Json> bodyJson(const CommandContext& c, const ApiReply& reply) {
  Json doc = Json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    c.io.err << "ddpctl: the controller's answer is not JSON: " << reply.body.substr(0, 200) << "\n";
    return std::nullopt;
  }
  return doc;
}

// --- submit -------------------------------------------------------------------------------------

bool endsWith(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

std::string documentContentType(const std::string& file, const std::string& content) {
  if (endsWith(file, ".json")) return "application/json";
  if (endsWith(file, ".yaml") || endsWith(file, ".yml")) return "application/yaml";
  const size_t first = content.find_first_not_of(" \t\r\n");
  return first != std::string::npos && (content[first] == '{' || content[first] == '[') ? "application/json"
                                                                                         : "application/yaml";
}

// metadata.name of the document ("" when it has none or does not parse: the server says why).
std::string documentName(const std::string& content) {
  try {  // yaml-cpp reports errors by exception: kept inside this function
    YAML::Node doc = YAML::Load(content);  // JSON is YAML too
    YAML::Node name = doc.IsMap() && doc["metadata"].IsMap() ? doc["metadata"]["name"] : YAML::Node();
    return name.IsScalar() ? name.as<std::string>() : "";
  } catch (const std::exception&) {
    return "";
  }
}

int submitCommand(const CommandContext& c, const ParsedArgs& p) {
  const std::string& file = p.positional[0];
  std::string content;
  if (file == "-") {
    std::stringstream ss;
    ss << c.io.in.rdbuf();
    content = ss.str();
  } else {
    std::ifstream in(file, std::ios::binary);
    if (!in) return usageError(c.io, c.command, "cannot read '" + file + "': " + std::strerror(errno));
    std::stringstream ss;
    ss << in.rdbuf();
    content = ss.str();
  }
  const std::string localName = documentName(content);
  Result<ApiReply> reply = c.api.post("/v1/jobs", content, documentContentType(file, content));
  if (reply.isOk() && reply->status == 409) {
    c.io.err << "ddpctl: job " << (localName.empty() ? "?" : localName) << " already exists"
             << (localName.empty() ? " (" + reply->error + ")" : "") << "\n";
    return kClientFailed;
  }
  if (auto code = failure(c, reply, "")) return *code;
  const Json job = Json::parse(reply->body, nullptr, false);
  c.io.out << "job " << fields::text(job, {"metadata", "name"}).value_or(localName) << " created\n";
  return kClientOk;
}

// --- get / describe / checkpoints ---------------------------------------------------------------

int64_t nowUnix(const ClientIo& io) {
  if (io.nowUnixSeconds) return io.nowUnixSeconds();
  const auto sinceEpoch = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::seconds>(sinceEpoch).count();
}

int getCommand(const CommandContext& c, const ParsedArgs& p) {
  const std::string output = p.value("--output");
  if (output != "" && output != "wide" && output != "json" && output != "yaml") {
    return usageError(c.io, c.command, "-o: '" + output + "' is not wide, json or yaml");
  }
  const bool one = !p.positional.empty();
  if (one && p.has("--phase")) return usageError(c.io, c.command, "--phase lists jobs: give it without NAME");
  const std::string phase = p.value("--phase");
  const std::string path =
      one ? jobPath(p.positional[0]) : "/v1/jobs" + (phase.empty() ? "" : "?phase=" + percentEncode(phase));
  Result<ApiReply> reply = c.api.get(path);
  if (auto code = failure(c, reply, one ? p.positional[0] : "")) return *code;
  std::optional<Json> doc = bodyJson(c, *reply);
  if (!doc) return kClientFailed;
  if (output == "json") {
    c.io.out << doc->dump(2) << "\n";
    return kClientOk;
  }
  if (output == "yaml") {
    c.io.out << jsonToYaml(*doc);
    return kClientOk;
  }
  const Json jobs = one ? Json::array({*doc}) : doc->value("jobs", Json::array());
  if (jobs.empty()) {
    c.io.err << "No jobs found" << (phase.empty() ? "" : " in phase " + phase) << ".\n";
    return kClientOk;
  }
  c.io.out << renderTable(jobTable(jobs, nowUnix(c.io), output == "wide"));
  return kClientOk;
}

int describeCommand(const CommandContext& c, const ParsedArgs& p) {
  const std::string& name = p.positional[0];
  Result<ApiReply> jobReply = c.api.get(jobPath(name));
  if (auto code = failure(c, jobReply, name)) return *code;
  std::optional<Json> job = bodyJson(c, *jobReply);
  if (!job) return kClientFailed;
  Result<ApiReply> eventsReply = c.api.get(jobPath(name) + "/events");
  if (auto code = failure(c, eventsReply, name)) return *code;
  std::optional<Json> events = bodyJson(c, *eventsReply);
  if (!events) return kClientFailed;
  // Flight records of its hangs; a controller without the route (older) just has none.
  Json flightRecords = Json::array();
  Result<ApiReply> recordsReply = c.api.get(jobPath(name) + "/flightrecords");
  if (recordsReply.isOk() && recordsReply->ok()) {
    Json doc = Json::parse(recordsReply->body, nullptr, /*allow_exceptions=*/false);
    if (doc.is_object()) flightRecords = doc.value("flightRecords", Json::array());
  }
  c.io.out << describeJob(*job, events->value("events", Json::array()), nowUnix(c.io), flightRecords);
  return kClientOk;
}

int checkpointsCommand(const CommandContext& c, const ParsedArgs& p) {
  const std::string& name = p.positional[0];
  Result<ApiReply> reply = c.api.get(jobPath(name) + "/checkpoints");
  if (auto code = failure(c, reply, name)) return *code;
  std::optional<Json> doc = bodyJson(c, *reply);
  if (!doc) return kClientFailed;
  const Json list = doc->value("checkpoints", Json::array());
  if (list.empty()) {
    c.io.err << "No checkpoints for job " << name << ".\n";
    return kClientOk;
  }
  c.io.out << renderTable(checkpointTable(list));
  return kClientOk;
}

// --- logs ---------------------------------------------------------------------------------------

int logsCommand(const CommandContext& c, const ParsedArgs& p) {
  const std::string& name = p.positional[0];
  std::string query;
  for (const char* opt : {"--rank", "--tail"}) {
    if (!p.has(opt)) continue;
    int64_t n = 0;
    if (!parseCount(p.value(opt), &n)) {
      return usageError(c.io, c.command, std::string(opt) + ": '" + p.value(opt) + "' is not a whole number >= 0");
    }
    query += std::string(query.empty() ? "?" : "&") + (opt + 2) + "=" + std::to_string(n);
  }
  const bool follow = p.flags.count("--follow") > 0;
  if (follow) query += std::string(query.empty() ? "?" : "&") + "follow=1";
  bool received = false;
  auto sink = [&](std::string_view chunk) {
    received = true;
    c.io.out.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    c.io.out.flush();
    return static_cast<bool>(c.io.out);
  };
  Result<ApiReply> reply = c.api.stream(jobPath(name) + "/logs" + query,
                                        follow ? kLogsFollowIdleTimeout : c.api.timeout(), sink);
  if (!reply.isOk() && received) {
    c.io.err << "ddpctl: the log stream from " << c.api.server() << " broke: " << reply.status().message() << "\n";
    return kClientFailed;
  }
  if (reply.isOk() && reply->status == 404 && c.api.get(jobPath(name)).valueOr(ApiReply{}).ok()) {
    // The job exists: what is missing is the log (a rank that never ran, say).
    c.io.err << "ddpctl: " << reply->error << " (404)\n";
    return kClientFailed;
  }
  if (auto code = failure(c, reply, name)) return *code;
  return kClientOk;
}

// --- cancel / delete ----------------------------------------------------------------------------

int cancelCommand(const CommandContext& c, const ParsedArgs& p) {
  const std::string& name = p.positional[0];
  Result<ApiReply> reply = c.api.post(jobPath(name) + "/cancel", "", "application/json");
  if (reply.isOk() && reply->status == 409) {
    c.io.err << "ddpctl: cannot cancel job " << name << ": " << reply->error << "\n";
    return kClientFailed;
  }
  if (auto code = failure(c, reply, name)) return *code;
  const Json job = Json::parse(reply->body, nullptr, false);
  const bool done = fields::text(job, {"status", "phase"}).value_or("") == "Cancelled";
  c.io.out << "job " << name << (done ? " cancelled" : " cancelling (the workers checkpoint, then stop)") << "\n";
  return kClientOk;
}

// --- checkpoint (on demand) ----------------------------------------------------------------------

int checkpointCommand(const CommandContext& c, const ParsedArgs& p) {
  const std::string& name = p.positional[0];
  Result<ApiReply> reply = c.api.post(jobPath(name) + "/checkpoints", "", "application/json");
  if (reply.isOk() && reply->status == 409) {
    c.io.err << "ddpctl: cannot checkpoint job " << name << ": " << reply->error << "\n";
    return kClientFailed;
  }
  if (auto code = failure(c, reply, name)) return *code;
  c.io.out << "checkpoint of job " << name
           << " requested: the workers write it at the next step they all agree on (see `ddpctl checkpoints "
           << name << "`)\n";
  return kClientOk;
}

// --- scale (Note [Elastic membership] in controller/jobs/membership/membership.h) --------------

int scaleCommand(const CommandContext& c, const ParsedArgs& p) {
  const std::string& name = p.positional[0];
  const std::string& count = p.positional[1];
  int64_t workers = 0;
  const auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), workers);
  if (ec != std::errc() || end != count.data() + count.size() || workers < 1) {
    c.io.err << "ddpctl: scale: N must be a positive number of workers, got '" << count << "'\n";
    return kClientUsage;
  }
  const std::string body = Json{{"workers", workers}}.dump();
  Result<ApiReply> reply = c.api.post(jobPath(name) + "/scale", body, "application/json");
  if (reply.isOk() && (reply->status == 400 || reply->status == 409)) {
    c.io.err << "ddpctl: cannot scale job " << name << ": " << reply->error << "\n";
    return kClientFailed;
  }
  if (auto code = failure(c, reply, name)) return *code;
  c.io.out << "job " << name << " scaled to " << workers
           << " worker(s): the next generation forms with them (see `ddpctl describe " << name << "`)\n";
  return kClientOk;
}

int deleteCommand(const CommandContext& c, const ParsedArgs& p) {
  const std::string& name = p.positional[0];
  Result<ApiReply> reply = c.api.del(jobPath(name));
  if (auto code = failure(c, reply, name)) return *code;
  c.io.out << "job " << name << " deleted\n";
  return kClientOk;
}

// --- watch --------------------------------------------------------------------------------------

int exitForPhase(const std::string& phase) {
  if (phase == "Succeeded") return kClientOk;
  if (phase == "Cancelled") return kClientCancelled;
  return kClientFailed;
}

int watchCommand(const CommandContext& c, const ParsedArgs& p) {
  const std::string& name = p.positional[0];
  std::ostream& out = c.io.out;
  std::string last;
  bool lineOpen = false;  // a TTY line drawn without its newline yet
  auto endLine = [&] {
    if (lineOpen) out << "\n" << std::flush;
    lineOpen = false;
  };
  int missed = 0;
  bool reached = false;  // an unreachable controller is reported at once, a lost one after retries
  while (true) {
    Result<ApiReply> reply = c.api.get(jobPath(name));
    if (!reply.isOk() && reached && ++missed < kWatchMaxMissedPolls) {
      c.io.sleep(kWatchInterval);
      continue;
    }
    reached = true;
    missed = 0;
    if (!reply.isOk() || !reply->ok()) {
      endLine();
      return *failure(c, reply, name);
    }
    std::optional<Json> job = bodyJson(c, *reply);
    if (!job) {
      endLine();
      return kClientFailed;
    }
    const std::string line = progressLine(*job);
    if (c.io.outIsTty) {
      out << "\r" << line << "\x1b[K" << std::flush;
      lineOpen = true;
    } else if (line != last) {
      out << line << "\n" << std::flush;
    }
    last = line;
    const std::string phase = fields::text(*job, {"status", "phase"}).value_or("");
    if (isTerminalPhase(phase)) {
      endLine();
      out << watchSummary(*job) << "\n";
      return exitForPhase(phase);
    }
    c.io.sleep(phase == "Pending" ? kWatchPendingInterval : kWatchInterval);
  }
}

// --- the table ----------------------------------------------------------------------------------

const std::vector<CommandSpec>& commands() {
  static const std::vector<CommandSpec> kCommands = {
      {"submit", "FILE", "create a job from a DDPJob document (FILE - reads stdin)", {}, 1, 1, submitCommand,
       "FILE is sent as application/json when it ends in .json (or starts with '{'), else as\n"
       "application/yaml. Prints `job NAME created`.\n"},
      {"get", "[NAME] [-o wide|json|yaml] [--phase P]", "list jobs, or show one",
       {{"--output", "-o", true}, {"--phase", nullptr, true}}, 0, 1, getCommand,
       "  -o, --output F   wide (adds GENERATION RESTARTS ETA, and TOKENS/S MFU for language\n"
       "                   models), json or yaml (the API objects)\n"
       "A VAL-LOSS column follows LOSS when a listed job is a language model that reported one.\n"
       "  --phase P        only jobs in phase P (Pending, Running, Restarting, Succeeded,\n"
       "                   Failed, Cancelled)\n"},
      {"describe", "NAME", "a job's spec summary, status, conditions, workers and events", {}, 1, 1,
       describeCommand, ""},
      {"logs", "NAME [--rank R] [-f] [--tail N]", "a job's worker output",
       {{"--rank", nullptr, true}, {"--follow", "-f", false}, {"--tail", nullptr, true}}, 1, 1, logsCommand,
       "  --rank R       only rank R's output (else every rank's, each line prefixed [rank R])\n"
       "  -f, --follow   keep streaming until the job ends\n"
       "  --tail N       only the last N lines\n"},
      {"cancel", "NAME", "stop a job (its workers checkpoint first)", {}, 1, 1, cancelCommand, ""},
      {"checkpoint", "NAME", "ask a running job for a checkpoint now", {}, 1, 1, checkpointCommand, ""},
      {"delete", "NAME", "delete a job (cancelling it first if it runs)", {}, 1, 1, deleteCommand, ""},
      {"scale", "NAME N", "set a job's worker count (within spec.workers.min..max)", {}, 2, 2, scaleCommand,
       "Workers are started (or the highest ranks' workers stopped) to reach N; the next generation\n"
       "forms with them. A membership change is not a failure restart.\n"},
      {"watch", "NAME", "follow a job's progress until it ends", {}, 1, 1, watchCommand,
       "Redraws one progress line on a terminal (one line per change otherwise) and ends with a\n"
       "summary. Exit status: 0 Succeeded, 1 Failed, 3 Cancelled.\n"},
      {"checkpoints", "NAME", "list a job's checkpoints", {}, 1, 1, checkpointsCommand, ""},
  };
  return kCommands;
}

const CommandSpec* findCommand(const std::string& name) {
  for (const CommandSpec& s : commands()) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

}  // namespace

ClientIo processClientIo() {
  return ClientIo{
      .out = std::cout,
      .err = std::cerr,
      .in = std::cin,
      .env = processEnvironment(),
      .outIsTty = ::isatty(STDOUT_FILENO) == 1,
      .sleep = [](Duration d) { std::this_thread::sleep_for(d); },
      .nowUnixSeconds = nullptr,
  };
}

bool isClientCommand(const std::string& name) { return findCommand(name) != nullptr; }

std::string clientCommandsSummary() {
  std::string out;
  for (const CommandSpec& s : commands()) {
    std::string head = std::string("  ") + s.name + " " + s.synopsis;
    if (head.size() < 22) head.resize(22, ' ');
    out += head + (head.size() > 22 ? "\n" + std::string(22, ' ') : "") + s.summary + "\n";
  }
  return out;
}

std::string clientGlobalOptionsUsage() {
  return "options of every command but run:\n"
         "  --server URL         the controller (env DDP_SERVER; default " +
         std::string(kDefaultServer) +
         ")\n"
         "  --token-file FILE    the controller's token (env DDP_TOKEN_FILE, or the token itself\n"
         "                       in DDP_TOKEN)\n"
         "  --timeout SECONDS    per request (default 10)\n";
}

std::string clientCommandUsage(const std::string& name) {
  const CommandSpec* s = findCommand(name);
  if (s == nullptr) return "";
  return std::string("usage: ddpctl ") + s->name + " " + s->synopsis + "\n" + s->summary + ".\n" +
         (*s->details != '\0' ? std::string("\n") + s->details : "") + "\n" + clientGlobalOptionsUsage();
}

int runClientCommand(const std::string& name, std::vector<std::string> args, const ClientIo& io) {
  const CommandSpec* spec = findCommand(name);
  if (spec == nullptr) {
    io.err << "ddpctl: unknown command '" << name << "'\n";
    return kClientUsage;
  }
  for (const std::string& a : args) {
    if (a == "-h" || a == "--help") {
      io.out << clientCommandUsage(name);
      return kClientOk;
    }
  }
  Result<ClientOptions> options = takeClientOptions(&args, io.env);
  if (!options.isOk()) return usageError(io, name, options.status().message());
  Result<ParsedArgs> parsed = parseArgs(*spec, args);
  if (!parsed.isOk()) return usageError(io, name, parsed.status().message());
  Result<std::unique_ptr<ApiClient>> api = ApiClient::create(*options);
  if (!api.isOk()) return usageError(io, name, api.status().message());
  const CommandContext context{io, **api, name};
  return spec->run(context, *parsed);
}

}  // namespace ddp::ddpctl
