// ddp-jobspec-schema: writes what the job spec's field table gives to readers other than the
// parser (common/jobspec/job_spec_schema.h). scripts/render_manifests.sh runs it:
//   ddp-jobspec-schema crd TEMPLATE     # the DDPJob CRD, to stdout
//   ddp-jobspec-schema docs JOB_SPEC.md # the document with its field table regenerated, to stdout
// Exit 0, or 2 with a message naming what is wrong.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "common/jobspec/job_spec_schema.h"

namespace {

bool readFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  *out = s.str();
  return static_cast<bool>(in) || in.eof();
}

int usage() {
  std::fprintf(stderr, "usage: ddp-jobspec-schema crd TEMPLATE | docs JOB_SPEC.md\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return usage();
  const std::string what = argv[1];
  std::string text;
  if (!readFile(argv[2], &text)) {
    std::fprintf(stderr, "ddp-jobspec-schema: cannot read %s\n", argv[2]);
    return 2;
  }
  ddp::Result<std::string> out = what == "crd"    ? ddp::renderJobSpecCrd(text)
                                 : what == "docs" ? ddp::renderJobSpecDocs(text)
                                                  : ddp::Result<std::string>(ddp::invalidArgument("unknown output " + what));
  if (!out.isOk()) {
    std::fprintf(stderr, "ddp-jobspec-schema: %s: %s\n", argv[2], out.status().message().c_str());
    return what == "crd" || what == "docs" ? 2 : usage();
  }
  std::cout << *out;
  return 0;
}
