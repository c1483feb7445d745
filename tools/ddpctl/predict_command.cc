#include "tools/ddpctl/predict_command.h"

#include <ostream>

#include "common/datafiles/npy_file.h"
#include "common/datafiles/npy_write.h"
#include "tools/ddpctl/checkpoint_source.h"
#include "worker/data/standardize.h"
#include "worker/model/gpt.h"
#include "worker/model/module.h"

namespace ddp::ddpctl {
namespace {

// The samples of `npy` as floats, standardized as the checkpoint's data was.
Result<std::vector<float>> features(const datafiles::MappedNpy& npy, int64_t numel, const runtime::CheckpointModel& m) {
  const datafiles::NpyHeader& h = npy.header();
  if (h.shape.empty() || h.rows() == 0 || h.count() != h.rows() * numel) {
    return invalidArgument(npy.path() + ": shape " + model::shapeString(h.shape) + " is not (N, ...) samples of " +
                           std::to_string(numel) + " values (the model's input)");
  }
  data::Dataset d;
  d.sampleShape = {numel};
  d.images.resize(static_cast<size_t>(h.count()));
  d.labels.assign(static_cast<size_t>(h.rows()), 0);
  for (int64_t i = 0; i < h.count(); ++i) d.images[static_cast<size_t>(i)] = static_cast<float>(npy.at(i));
  if (m.standardize) {
    DDP_ASSIGN_OR_RETURN(data::Standardization s, data::Standardization::decode(*m.standardize));
    DDP_RETURN_IF_ERROR(data::checkStandardization(s, numel).withContext(m.path));
    data::applyStandardization(s, &d);
  }
  return std::move(d.images);
}

Status predictClassifier(model::Module& module, const datafiles::MappedNpy& npy, const runtime::CheckpointModel& m,
                         const std::string& outPath) {
  const int64_t numel = model::shapeNumel(module.inputShape());
  DDP_ASSIGN_OR_RETURN(std::vector<float> x, features(npy, numel, m));
  const int64_t n = npy.header().rows(), classes = module.outputFeatures();
  std::vector<float> logits(static_cast<size_t>(n * classes));
  constexpr int64_t kBatch = 256;
  for (int64_t i = 0; i < n; i += kBatch) {
    const int b = static_cast<int>(std::min(kBatch, n - i));
    module.setTraining(false, 0);  // dropout off
    const float* y = module.forward(x.data() + i * numel, b);
    DDP_RETURN_IF_ERROR(module.status());
    std::copy(y, y + b * classes, logits.begin() + i * classes);
  }
  return datafiles::writeNpy(outPath, datafiles::NpyDType::kF32, {n, classes}, logits.data());
}

Status predictGpt(model::Gpt& gpt, const datafiles::MappedNpy& npy, const std::string& outPath) {
  const datafiles::NpyHeader& h = npy.header();
  const int t = gpt.config().contextLength, v = gpt.config().vocabSize;
  if (h.shape.size() != 2 || h.shape[1] != t || datafiles::npyDTypeIsFloat(h.dtype)) {
    return invalidArgument(npy.path() + ": a GPT takes integer token windows of shape (N, " + std::to_string(t) +
                           "), not " + npyDTypeName(h.dtype) + " " + model::shapeString(h.shape));
  }
  std::vector<int32_t> tokens(static_cast<size_t>(h.count()));
  for (int64_t i = 0; i < h.count(); ++i) tokens[static_cast<size_t>(i)] = static_cast<int32_t>(npy.at(i));
  DDP_ASSIGN_OR_RETURN(std::vector<float> logits, gpt.logits(tokens.data(), static_cast<int>(h.rows())));
  return datafiles::writeNpy(outPath, datafiles::NpyDType::kF32, {h.rows(), t, v}, logits.data());
}

}  // namespace

std::string predictUsage() {
  return "usage: ddpctl predict (JOB | --checkpoint-dir DIR) --input FILE.npy [-o OUT.npy] [--step N]\n"
         "Runs the model of a job's last committed checkpoint (or of step N) on this machine's CPU.\n"
         "A classifier takes samples (N, ...) standardized as its training data was and writes its\n"
         "logits (N, classes); a GPT takes token windows (N, contextLength) and writes the logits\n"
         "(N, contextLength, vocab). JOB asks the controller for the checkpoint directory.\n"
         "  -o, --output OUT.npy   where to write (default predictions.npy)\n";
}

int predictCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  auto parsed = parseModelArgs(args, {"-o=--output", "--input", "--step", "--checkpoint-dir", "--server",
                                      "--token-file", "--timeout"});
  if (!parsed.isOk() || !parsed->flag("--input")) {
    err << "ddpctl predict: " << (parsed.isOk() ? "--input FILE.npy is required" : parsed.status().message()) << "\n"
        << predictUsage();
    return 2;
  }
  Status s = [&]() -> Status {
    DDP_ASSIGN_OR_RETURN(runtime::CheckpointModel m, loadNamedCheckpoint(*parsed, args));
    DDP_ASSIGN_OR_RETURN(runtime::ModelDescription d, describedModel(m));
    DDP_ASSIGN_OR_RETURN(std::unique_ptr<model::TrainableModel> built, loadCheckpointModel(m, d));
    DDP_ASSIGN_OR_RETURN(datafiles::MappedNpy npy, datafiles::MappedNpy::open(*parsed->flag("--input")));
    const std::string outPath = parsed->flag("--output").value_or("predictions.npy");
    if (auto* gpt = dynamic_cast<model::Gpt*>(built.get())) {
      DDP_RETURN_IF_ERROR(predictGpt(*gpt, npy, outPath));
    } else {
      DDP_RETURN_IF_ERROR(predictClassifier(dynamic_cast<model::Module&>(*built), npy, m, outPath));
    }
    out << "wrote " << outPath << ": " << npy.header().rows() << " predictions of job " << m.job << ", step "
        << m.step << "\n";
    return Status::ok();
  }();
  if (s.isOk()) return 0;
  err << "ddpctl predict: " << s.message() << "\n";
  return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

}  // namespace ddp::ddpctl
