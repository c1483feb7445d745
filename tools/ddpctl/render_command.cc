#include "tools/ddpctl/render_command.h"

#include <ostream>

#include "common/jobspec/job_spec.h"
#include "controller/launch/kubernetes/job_objects.h"
#include "tools/ddpctl/output_format.h"
#include "tools/ddpctl/run_command.h"

namespace ddp::ddpctl {
namespace {

struct RenderArgs {
  std::string file;
  controller::kube::RenderOptions options;
  bool advertised = false;
  bool help = false;
};

// Options take "--flag value" or "--flag=value".
Result<RenderArgs> parseRenderArgs(const std::vector<std::string>& args) {
  RenderArgs a;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i], inlineValue;
    const bool hasInline = flag.rfind("--", 0) == 0 && flag.find('=') != std::string::npos;
    if (hasInline) {
      inlineValue = flag.substr(flag.find('=') + 1);
      flag = flag.substr(0, flag.find('='));
    }
    auto value = [&]() -> Result<std::string> {
      if (hasInline) return inlineValue;
      if (i + 1 >= args.size()) return invalidArgument(flag + " needs a value");
      return args[++i];
    };
    if (flag == "-h" || flag == "--help") {
      a.help = true;
    } else if (flag == "--worker-image" || flag == "--image") {
      DDP_ASSIGN_OR_RETURN(a.options.defaultImage, value());
    } else if (flag == "--watch-namespace" || flag == "--namespace" || flag == "-n") {
      DDP_ASSIGN_OR_RETURN(a.options.nameSpace, value());
    } else if (flag == "--gang-scheduler-name") {
      DDP_ASSIGN_OR_RETURN(a.options.schedulerName, value());
    } else if (flag == "--advertise-url") {
      DDP_ASSIGN_OR_RETURN(a.options.settings.controllerUrl, value());
      a.advertised = true;
    } else if (!flag.empty() && flag[0] == '-' && flag != "-") {
      return invalidArgument("unknown option " + flag);
    } else if (a.file.empty()) {
      a.file = args[i];
    } else {
      return invalidArgument("one job file only (got '" + a.file + "' and '" + args[i] + "')");
    }
  }
  if (!a.help && a.file.empty()) return invalidArgument("the job file is missing");
  if (!a.advertised) a.options.settings.controllerUrl = defaultAdvertiseUrl(a.options.nameSpace);
  return a;
}

}  // namespace

std::string defaultAdvertiseUrl(const std::string& nameSpace) { return "http://ddp." + nameSpace + ".svc:8081"; }

std::string renderUsage() {
  return "usage: ddpctl render JOB.yaml [--worker-image IMAGE] [--watch-namespace NS]\n"
         "                      [--gang-scheduler-name NAME] [--advertise-url URL]\n"
         "\n"
         "Prints, as YAML, every object the controller would create for the job on Kubernetes: its\n"
         "token Secret, headless Service, PodGroup (with a gang scheduler) and worker pods, exactly\n"
         "as the launcher builds them (docs/KUBERNETES.md). No cluster is needed. The options are\n"
         "the controller's flags:\n"
         "  --worker-image IMAGE   the default worker image (--image); spec.kubernetes.image wins\n"
         "  --watch-namespace NS   the controller's namespace (--namespace, -n; default: default)\n"
         "  --gang-scheduler-name NAME  the pods' scheduler: volcano or scheduler-plugins-scheduler\n"
         "                         get a PodGroup (default: the default scheduler)\n"
         "  --advertise-url URL    what workers dial (default: the chart's, http://ddp.NS.svc:8081)\n"
         "The worker token and the DDPJob's uid exist only on a cluster: placeholders stand for them.\n"
         "Exit status: 0 ok; 2 bad arguments, an invalid job, or an object the API server would\n"
         "refuse (the reason is printed); 1 the file cannot be read.\n";
}

int renderCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  auto a = parseRenderArgs(args);
  if (!a.isOk()) {
    err << "ddpctl render: " << a.status().message() << "\n" << renderUsage();
    return kExitUsage;
  }
  if (a->help) {
    out << renderUsage();
    return kExitOk;
  }
  auto spec = loadJobSpecFile(a->file);
  if (!spec.isOk()) {
    err << "ddpctl render: " << spec.status().message() << "\n";
    return spec.status().code() == StatusCode::kNotFound ? kExitFailed : kExitUsage;
  }
  auto objects = controller::kube::renderJobObjects(*spec, a->options);
  if (!objects.isOk()) {
    err << "ddpctl render: " << a->file << ": the API server would refuse " << objects.status().message() << "\n";
    return kExitUsage;
  }
  for (const Json& o : *objects) out << "---\n" << jsonToYaml(o);
  return kExitOk;
}

}  // namespace ddp::ddpctl
