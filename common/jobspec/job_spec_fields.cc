// The DDPJob field table (Note [Job spec field table] in job_spec_fields.h): the document, its
// metadata and the training fields. spec.kubernetes is in job_spec_fields_kubernetes.cc.
#include "common/jobspec/job_spec_fields.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "common/jobspec/job_spec_field_builder.h"

namespace ddp {

// job_spec_fields_kubernetes.cc
void appendKubernetesFields(std::vector<SpecField>* fields);
void appendPodTemplateFields(std::vector<SpecField>* fields);
// job_spec_fields_stack.cc
void appendStackFields(std::vector<SpecField>* fields);

namespace {

using namespace spec_fields;  // NOLINT: the table's vocabulary

bool cnn(const JobSpec& s) { return s.model.type == ModelType::kCnn; }
bool gpt(const JobSpec& s) { return s.model.type == ModelType::kGpt; }
bool mlpOrCnn(const JobSpec& s) { return s.model.type == ModelType::kMlp || s.model.type == ModelType::kCnn; }
bool synthetic(const JobSpec& s) { return s.data.dataset == DatasetKind::kSynthetic; }
bool fashionMnist(const JobSpec& s) { return s.data.dataset == DatasetKind::kFashionMnist; }
bool userData(const JobSpec& s) {
  return s.data.dataset == DatasetKind::kIdx || s.data.dataset == DatasetKind::kNpy ||
         s.data.dataset == DatasetKind::kCsv;
}
bool fromFiles(const JobSpec& s) {
  return s.data.dataset == DatasetKind::kTokens || s.data.dataset == DatasetKind::kText || userData(s);
}
bool npy(const JobSpec& s) { return s.data.dataset == DatasetKind::kNpy; }
bool notNpy(const JobSpec& s) { return !npy(s); }
bool csv(const JobSpec& s) { return s.data.dataset == DatasetKind::kCsv; }
bool tokenFiles(const JobSpec& s) { return s.data.dataset == DatasetKind::kTokens; }
bool adam(const JobSpec& s) { return s.optimizer.type != OptimizerType::kSgd; }
bool powerSgd(const JobSpec& s) {
  return s.commHook.type == CommHookType::kPowerSgd || s.commHook.type == CommHookType::kBatchedPowerSgd;
}

constexpr double kInt32Max = 2147483647.0;

void appendDocumentFields(std::vector<SpecField>* out) {
  const char* meta = "Kubernetes object metadata; accepted and ignored.";
  std::vector<SpecField> f;
  f.push_back(string("apiVersion", at(&JobSpec::apiVersion), "Always ddp.dev/v1.").required().plain());
  f.push_back(string("kind", at(&JobSpec::kind), "Always DDPJob.").required().plain());
  f.push_back(object("metadata", "The job's name and labels.").required());
  f.push_back(string("metadata.name", at(&JobSpec::name),
                     "The job's name, unique in the controller: a DNS-1035 label (a-z, 0-9 and -, starting with a "
                     "letter) of at most 51 characters, so that every object named after it fits.")
                  .required());
  f.push_back(stringMap("metadata.labels", at(&JobSpec::labels), "Free labels of the job.")
                  .emitWhen([](const JobSpec& s) { return !s.labels.empty(); }));
  f.push_back(string("metadata.namespace", at(&JobSpec::nameSpace),
                     "On Kubernetes, the namespace of the job's pods, Service and Secret: the DDPJob's own; a job "
                     "submitted through the REST API may name one its controller serves (--watch-namespace).")
                  .note("empty: the controller's first --watch-namespace")
                  .emitWhen([](const JobSpec& s) { return !s.nameSpace.empty(); }));
  for (const char* k : {"metadata.annotations", "metadata.uid", "metadata.resourceVersion",
                        "metadata.generation", "metadata.creationTimestamp", "metadata.deletionTimestamp",
                        "metadata.deletionGracePeriodSeconds", "metadata.managedFields", "metadata.ownerReferences",
                        "metadata.finalizers", "metadata.generateName", "metadata.selfLink"}) {
    f.push_back(ignored(k, meta));
  }
  for (SpecField& x : f) out->push_back(std::move(x));
}

void appendGptFields(std::vector<SpecField>* out) {
  using G = GptSpec;
  const auto g = [](auto member) { return at(&JobSpec::model, &ModelSpec::gpt, member); };
  const std::string_view when = "spec.model.type is gpt";
  out->push_back(integer("spec.model.vocabSize", g(&G::vocabSize),
                         "Tokens in the vocabulary; required for token files (their header does not say it).")
                     .atLeast(0).note("0: from the data, 256 for text").onlyWhen(gpt, when));
  out->push_back(integer("spec.model.contextLength", g(&G::contextLength), "Tokens per training window.")
                     .atLeast(1).atMost(1 << 20).onlyWhen(gpt, when));
  out->push_back(integer("spec.model.layers", g(&G::layers), "Transformer blocks.").atLeast(1).atMost(1024).onlyWhen(gpt, when));
  out->push_back(integer("spec.model.heads", g(&G::heads), "Attention heads; dModel must divide by it.")
                     .atLeast(1).onlyWhen(gpt, when));
  out->push_back(integer("spec.model.dModel", g(&G::dModel), "Width of the residual stream.").atLeast(1).onlyWhen(gpt, when));
  out->push_back(integer("spec.model.mlpHidden", g(&G::mlpHidden), "Hidden width of each block's MLP.")
                     .atLeast(0).note("0: 4 x dModel").onlyWhen(gpt, when));
  out->push_back(enumeration("spec.model.norm", g(&G::norm), kGptNormNames, "layernorm or rmsnorm (pre-norm blocks).")
                     .onlyWhen(gpt, when));
  out->push_back(enumeration("spec.model.positions", g(&G::positions), kGptPositionsNames,
                             "learned position embeddings, or rope (rotary; needs an even head size).")
                     .onlyWhen(gpt, when));
  out->push_back(boolean("spec.model.tiedEmbeddings", g(&G::tiedEmbeddings),
                         "The LM head shares the token embedding's weights.")
                     .onlyWhen(gpt, when));
  out->push_back(number("spec.model.dropout", g(&G::dropout),
                        "Dropout probability, deterministic from the seed, rank and step (recovery stays bitwise).")
                     .atLeast(0).below(1).onlyWhen(gpt, when));
}

// spec.data.train / val (Note [Spec shapes] in docs/JOB_SPEC.md) and valFraction.
void appendSplitFields(std::vector<SpecField>* out) {
  using D = DataSpec;
  using S = DataSplitSpec;
  const std::string_view when = "spec.data.dataset is tokens, text, idx, npy or csv";
  for (const bool train : {true, false}) {
    const auto split = train ? &D::train : &D::val;
    out->push_back(object(train ? "spec.data.train" : "spec.data.val",
                          train ? "The training split's files." : "The evaluation split's files; absent: valFraction of train.")
                       .onlyWhen(fromFiles, when));
    out->push_back(string(train ? "spec.data.train.path" : "spec.data.val.path", at(&JobSpec::data, split, &S::path),
                          "tokens, text: a file, or a glob of files (read in sorted order); csv: the file; idx: the "
                          "directory of the IDX files.")
                       .onlyWhen(notNpy, "spec.data.dataset is tokens, text, idx or csv"));
    out->push_back(string(train ? "spec.data.train.features" : "spec.data.val.features",
                          at(&JobSpec::data, split, &S::features),
                          "npy: the features array (N, ...) of '<f4', '<f8' or '|u1', C order.")
                       .onlyWhen(npy, "spec.data.dataset is npy"));
    out->push_back(string(train ? "spec.data.train.targets" : "spec.data.val.targets",
                          at(&JobSpec::data, split, &S::targets),
                          "npy: the targets array (N,): '<i4' or '<i8' class labels ('<f4' or '<f8': float targets).")
                       .onlyWhen(npy, "spec.data.dataset is npy"));
    out->push_back(string(train ? "spec.data.train.dtype" : "spec.data.val.dtype", at(&JobSpec::data, split, &S::dtype),
                          "tokens: the token type of raw files, uint16 or uint32; empty: llm.c files with a header.")
                       .oneOf({"", "uint16", "uint32"}).onlyWhen(tokenFiles, "spec.data.dataset is tokens"));
  }
  out->push_back(number("spec.data.valFraction", at(&JobSpec::data, &D::valFraction),
                        "Without val: the last fraction of train held out for evaluation.")
                     .atLeast(0).below(1).onlyWhen(fromFiles, when));
}

// The fields of a user's dataset (idx, npy, csv: docs/DATA.md) beside train and val.
void appendUserDataFields(std::vector<SpecField>* out) {
  using D = DataSpec;
  using St = StandardizeSpec;
  const std::string_view when = "spec.data.dataset is idx, npy or csv";
  out->push_back(string("spec.data.target", at(&JobSpec::data, &D::target), "csv: the name of the label column.")
                     .onlyWhen(csv, "spec.data.dataset is csv"));
  out->push_back(integer("spec.data.classes", at(&JobSpec::data, &D::classes),
                         "Classes the model tells apart; a label must be below it.")
                     .atLeast(0).atMost(1 << 24).note("0: the largest training label + 1").onlyWhen(userData, when));
  out->push_back(object("spec.data.standardize", "x -> (x - mean) / std per feature, the same on both splits (docs/DATA.md).")
                     .onlyWhen(userData, when));
  out->push_back(boolean("spec.data.standardize.auto", at(&JobSpec::data, &D::standardize, &St::automatic),
                         "Compute mean and std on the training split (saved in checkpoints)."));
  out->push_back(numberList("spec.data.standardize.mean", at(&JobSpec::data, &D::standardize, &St::mean),
                            "The means: one value, or one per feature.").single());
  out->push_back(numberList("spec.data.standardize.std", at(&JobSpec::data, &D::standardize, &St::std),
                            "The standard deviations (> 0): one value, or one per feature.").single());
}

void appendWorkerFields(std::vector<SpecField>* out) {
  const auto count = [](const JobSpec& s) { return SpecValue(static_cast<int64_t>(s.workers.count)); };
  std::vector<SpecField> f;
  f.push_back(object("spec", "What to train and how.").required());
  f.push_back(object("spec.workers", "How many worker processes; min and max bound an elastic job."));
  f.push_back(integer("spec.workers.count", at(&JobSpec::workers, &WorkersSpec::count),
                      "Workers (ranks) to start.")
                  .atLeast(1).atMost(kMaxWorkersPerJob).checkedByRule());
  f.push_back(integer("spec.workers.min", at(&JobSpec::workers, &WorkersSpec::min),
                      "The fewest workers the job trains with after a loss (elastic).")
                  .atLeast(1).atMost(kMaxWorkersPerJob).checkedByRule().whenAbsent(count, "spec.workers.count"));
  f.push_back(integer("spec.workers.max", at(&JobSpec::workers, &WorkersSpec::max),
                      "The most workers a scale may give the job (elastic).")
                  .atLeast(1).atMost(kMaxWorkersPerJob).checkedByRule().whenAbsent(count, "spec.workers.count"));
  f.push_back(integer("spec.workers.perPod", at(&JobSpec::workers, &WorkersSpec::perPod),
                      "Ranks per worker pod on Kubernetes (one GPU each with device cuda); count, min and max are "
                      "multiples of it. The local launcher ignores it.")
                  .atLeast(1).atMost(kMaxRanksPerPod));
  f.push_back(enumeration("spec.device", at(&JobSpec::device), kJobDeviceNames,
                          "Where each worker trains: cpu, or cuda (rank r on cuda:(r mod visible GPUs); NCCL for gradients; not with zero, join or the PowerSGD hooks)."));
  f.push_back(integer("spec.threadsPerWorker", at(&JobSpec::threadsPerWorker),
                      "OpenBLAS and kernel threads of each worker.").atLeast(1).atMost(256));
  for (SpecField& x : f) out->push_back(std::move(x));
}

void appendModelFields(std::vector<SpecField>* out) {
  std::vector<SpecField> f;
  f.push_back(object("spec.model", "The network every worker trains a replica of.").required());
  f.push_back(enumeration("spec.model.type", at(&JobSpec::model, &ModelSpec::type), kModelTypeNames,
                          "mlp (fully connected), cnn (conv blocks, then fully connected), gpt (a decoder-only "
                          "transformer language model) or sequential (the layers of spec.model.stack).")
                  .required());
  f.push_back(integerList("spec.model.hidden", at(&JobSpec::model, &ModelSpec::hidden),
                          "Widths of the hidden fully connected layers (cnn: after the conv blocks).")
                  .atLeast(1)
                  .whenAbsent([](const JobSpec& s) { return SpecValue(cnn(s) ? kCnnDefaultHidden : std::vector<int64_t>{256, 256}); },
                              "[256, 256] (cnn: [128])")
                  .onlyWhen(mlpOrCnn, "spec.model.type is mlp or cnn"));
  f.push_back(string("spec.model.activation", at(&JobSpec::model, &ModelSpec::activation),
                     "The activation after each hidden layer.")
                  .oneOf({"relu", "tanh", "gelu"}).plain().onlyWhen(mlpOrCnn, "spec.model.type is mlp or cnn"));
  f.push_back(integerList("spec.model.convChannels", at(&JobSpec::model, &ModelSpec::convChannels),
                          "Output channels of each conv block (conv k x k, activation, 2x2 max pool); the cnn takes 1x28x28 images.")
                  .atLeast(1).onlyWhen(cnn, "spec.model.type is cnn"));
  f.push_back(integer("spec.model.kernelSize", at(&JobSpec::model, &ModelSpec::kernelSize),
                      "The square kernel of every conv (odd).")
                  .atLeast(1).onlyWhen(cnn, "spec.model.type is cnn"));
  appendGptFields(&f);
  appendStackFields(&f);
  f.push_back(enumeration("spec.loss", at(&JobSpec::loss), kLossNames,
                          "crossEntropy (softmax over the outputs, int class targets) or mse (mean squared error "
                          "over the outputs, float targets: regression)."));
  for (SpecField& x : f) out->push_back(std::move(x));
}

void appendDataFields(std::vector<SpecField>* out) {
  using D = DataSpec;
  using Syn = SyntheticSpec;
  std::vector<SpecField> f;
  f.push_back(object("spec.data", "The training and evaluation data.").required());
  f.push_back(enumeration("spec.data.dataset", at(&JobSpec::data, &D::dataset), kDatasetNames,
                          "fashion-mnist (IDX files in dir), synthetic (separable clusters from the seed), tokens or text "
                          "(a gpt's token windows), idx (an IDX directory), npy (feature and target arrays) or csv "
                          "(a numeric table).")
                  .required());
  f.push_back(string("spec.data.dir", at(&JobSpec::data, &D::dir), "The directory of the Fashion-MNIST IDX files (Debian package dataset-fashion-mnist).")
                  .onlyWhen(fashionMnist, "spec.data.dataset is fashion-mnist"));
  appendSplitFields(&f);
  appendUserDataFields(&f);
  f.push_back(integer("spec.data.batchSize", at(&JobSpec::data, &D::batchSize), "Samples per worker and step (global batch: workers x batchSize).")
                  .atLeast(1));
  f.push_back(integer("spec.data.globalBatchSize", at(&JobSpec::data, &D::globalBatchSize),
                      "The global batch an elastic job keeps across world sizes (spec.elastic.keepGlobalBatch); a scale pins it; not with data.uneven.")
                  .atLeast(0).note("0: batchSize x workers.count"));
  f.push_back(boolean("spec.data.shuffle", at(&JobSpec::data, &D::shuffle), "Reshuffle every epoch, seeded by spec.seed and the epoch (identical on every rank)."));
  f.push_back(boolean("spec.data.dropLast", at(&JobSpec::data, &D::dropLast),
                      "Drop the samples that do not fill every rank instead of padding."));
  f.push_back(boolean("spec.data.normalize", at(&JobSpec::data, &D::normalize),
                      "fashion-mnist: standardize the pixels by the training split's constants, (x - 0.2860) / "
                      "0.3530 (idx, npy, csv: spec.data.standardize)."));
  f.push_back(integer("spec.data.limit", at(&JobSpec::data, &D::limit), "Train on the first limit samples only.")
                  .atLeast(0).note("0: all"));
  f.push_back(object("spec.data.uneven", "Uneven inputs: ranks read different sample counts (needs spec.join)."));
  f.push_back(boolean("spec.data.uneven.enabled", at(&JobSpec::data, &D::uneven, &UnevenSpec::enabled),
                      "Split the samples unevenly, neither padding nor dropping."));
  f.push_back(integerList("spec.data.uneven.counts", at(&JobSpec::data, &D::uneven, &UnevenSpec::counts),
                          "Samples per rank, one entry per worker, summing to at most the training samples; empty: as even as possible.")
                  .atLeast(1).checkedByRule());
  f.push_back(object("spec.data.synthetic", "The Gaussian clusters of synthetic data (docs/DATA.md).")
                  .onlyWhen(synthetic, "spec.data.dataset is synthetic"));
  f.push_back(integer("spec.data.synthetic.samples", at(&JobSpec::data, &D::synthetic, &Syn::samples),
                      "Training samples (the evaluation split has samples / 4).").atLeast(1));
  f.push_back(integer("spec.data.synthetic.features", at(&JobSpec::data, &D::synthetic, &Syn::features),
                      "Features per sample (784 for a cnn: 1x28x28).").atLeast(1));
  f.push_back(integer("spec.data.synthetic.classes", at(&JobSpec::data, &D::synthetic, &Syn::classes),
                      "Clusters, one per class.").atLeast(2));
  f.push_back(number("spec.data.synthetic.separation", at(&JobSpec::data, &D::synthetic, &Syn::separation),
                     "Distance scale between the cluster centres.").atLeast(0).single());
  f.push_back(number("spec.data.synthetic.noise", at(&JobSpec::data, &D::synthetic, &Syn::noise),
                     "Standard deviation of the samples around their centre.").atLeast(0).single());
  for (SpecField& x : f) out->push_back(std::move(x));
}

void appendOptimizerFields(std::vector<SpecField>* out) {
  using O = OptimizerSpec;
  using S = ScheduleSpec;
  const auto schedule = [](ScheduleType t) { return [t](const JobSpec& s) { return s.optimizer.schedule.type == t; }; };
  std::vector<SpecField> f;
  f.push_back(object("spec.optimizer", "The optimizer and its learning-rate schedule."));
  f.push_back(enumeration("spec.optimizer.type", at(&JobSpec::optimizer, &O::type), kOptimizerNames,
                          "sgd, adam or adamw (decoupled weight decay)."));
  f.push_back(number("spec.optimizer.lr", at(&JobSpec::optimizer, &O::lr), "The base learning rate (the peak, after warmup).")
                  .above(0).single());
  f.push_back(number("spec.optimizer.weightDecay", at(&JobSpec::optimizer, &O::weightDecay), "L2 penalty (sgd, adam) or decoupled weight decay (adamw).")
                  .atLeast(0).single());
  f.push_back(number("spec.optimizer.momentum", at(&JobSpec::optimizer, &O::momentum), "sgd: momentum, in [0, 1).")
                  .atLeast(0).below(1).checkedByRule());
  f.push_back(number("spec.optimizer.dampening", at(&JobSpec::optimizer, &O::dampening),
                     "sgd: dampening of the momentum, in [0, 1].")
                  .atLeast(0).atMost(1).checkedByRule());
  f.push_back(boolean("spec.optimizer.nesterov", at(&JobSpec::optimizer, &O::nesterov),
                      "sgd: Nesterov momentum (needs momentum > 0 and dampening 0)."));
  f.push_back(Field("spec.optimizer.betas", SpecFieldType::kNumberList, "adam, adamw: [beta1, beta2], each in [0, 1).")
                  .bind([](const JobSpec& s) { return SpecValue(std::vector<double>{s.optimizer.beta1, s.optimizer.beta2}); },
                        [](JobSpec& s, const SpecValue& v) {
                          s.optimizer.beta1 = std::get<std::vector<double>>(v)[0];
                          s.optimizer.beta2 = std::get<std::vector<double>>(v)[1];
                        })
                  .length(2).atLeast(0).below(1).checkedByRule()
                  .onlyWhen(adam, "spec.optimizer.type is adam or adamw"));
  f.push_back(number("spec.optimizer.eps", at(&JobSpec::optimizer, &O::eps), "adam, adamw: the denominator's epsilon.")
                  .above(0).checkedByRule().onlyWhen(adam, "spec.optimizer.type is adam or adamw"));
  f.push_back(number("spec.optimizer.maxGradNorm", at(&JobSpec::optimizer, &O::maxGradNorm),
                     "Clip the gradients to this global L2 norm.")
                  .atLeast(0).single().note("0: no clipping"));
  f.push_back(enumeration("spec.optimizer.weightDecayOn", at(&JobSpec::optimizer, &O::weightDecayOn),
                          kWeightDecayOnNames,
                          "Which parameters decay: all, or linearWeights (the weight matrices of linear layers: not "
                          "biases, norm gains or embeddings).")
                  .whenAbsent([](const JobSpec& s) { return SpecValue(std::string(gpt(s) ? "linearWeights" : "all")); },
                              "all (gpt: linearWeights)"));
  f.push_back(object("spec.optimizer.schedule", "The learning rate over the steps."));
  f.push_back(enumeration("spec.optimizer.schedule.type", at(&JobSpec::optimizer, &O::schedule, &S::type),
                          kScheduleNames,
                          "After the warmup: constant, step (times gamma every stepSize steps), cosine or linear (to minLr)."));
  f.push_back(integer("spec.optimizer.schedule.warmupSteps", at(&JobSpec::optimizer, &O::schedule, &S::warmupSteps),
                      "Steps of linear warmup from 0 to lr.").atLeast(0));
  f.push_back(integer("spec.optimizer.schedule.stepSize", at(&JobSpec::optimizer, &O::schedule, &S::stepSize),
                      "step: steps between decays.")
                  .atLeast(1).onlyWhen(schedule(ScheduleType::kStep), "schedule type is step"));
  f.push_back(number("spec.optimizer.schedule.gamma", at(&JobSpec::optimizer, &O::schedule, &S::gamma),
                     "step: the factor of each decay, in (0, 1].")
                  .above(0).atMost(1).checkedByRule().onlyWhen(schedule(ScheduleType::kStep), "schedule type is step"));
  f.push_back(number("spec.optimizer.schedule.minLr", at(&JobSpec::optimizer, &O::schedule, &S::minLr),
                     "The learning rate at the last step, in [0, lr).")
                  .atLeast(0).checkedByRule()
                  .onlyWhen([](const JobSpec& s) {
                    return s.optimizer.schedule.type == ScheduleType::kCosine || s.optimizer.schedule.type == ScheduleType::kLinear;
                  }, "schedule type is cosine or linear"));
  for (SpecField& x : f) out->push_back(std::move(x));
}

void appendCommFields(std::vector<SpecField>* out) {
  using H = CommHookSpec;
  using P = PowerSgdSpec;
  const auto psgd = [](auto member) { return at(&JobSpec::commHook, &H::powerSGD, member); };
  std::vector<SpecField> f;
  f.push_back(enumeration("spec.zero", at(&JobSpec::zero), kZeroNames,
                          "Sharding: none, zero1 (ZeroRedundancyOptimizer: optimizer state) or dfa (DistributedFusedAdam: state and gradients; adam or adamw, the allreduce hook, no join)."));
  f.push_back(object("spec.commHook", "How gradients are communicated (DDP communication hooks)."));
  f.push_back(enumeration("spec.commHook.type", at(&JobSpec::commHook, &H::type), kCommHookNames,
                          "Gradient communication: allreduce, fp16 or bf16 (compressed allreduce), powerSGD or batchedPowerSGD (noop is refused: it leaves gradients unreduced).")
                  .parsedOnly({"noop"}));
  f.push_back(enumeration("spec.commHook.wrapper", at(&JobSpec::commHook, &H::wrapper), kHookWrapperNames,
                          "fp16 or bf16 compression around allreduce or a PowerSGD hook."));
  f.push_back(object("spec.commHook.powerSGD", "PowerSGD's options (as torch.distributed's PowerSGDState).")
                  .onlyWhen(powerSgd, "spec.commHook.type is powerSGD or batchedPowerSGD"));
  f.push_back(integer("spec.commHook.powerSGD.rank", psgd(&P::rank), "Rank of the low-rank approximation.").atLeast(1));
  f.push_back(integer("spec.commHook.powerSGD.startIter", psgd(&P::startIter),
                      "Plain allreduce until this iteration (> 1 with errorFeedback or warmStart).")
                  .atLeast(1));
  f.push_back(number("spec.commHook.powerSGD.minCompressionRate", psgd(&P::minCompressionRate),
                     "Compress an n x m tensor only when (n + m) x rank x this < n x m.")
                  .above(0));
  f.push_back(boolean("spec.commHook.powerSGD.errorFeedback", psgd(&P::errorFeedback),
                      "Add the previous compression error to the next gradient."));
  f.push_back(boolean("spec.commHook.powerSGD.warmStart", psgd(&P::warmStart), "Reuse Q across iterations."));
  f.push_back(number("spec.commHook.powerSGD.orthogonalizationEpsilon", psgd(&P::orthogonalizationEpsilon),
                     "Added to norms in Gram-Schmidt to avoid division by zero.")
                  .atLeast(0).single());
  f.push_back(integer("spec.commHook.powerSGD.seed", psgd(&P::seed), "Seed of the initial Q.")
                  .atLeast(0).checkedByRule());
  f.push_back(boolean("spec.commHook.powerSGD.batchTensorsWithSameShape", psgd(&P::batchTensorsWithSameShape),
                      "Compress same-shaped tensors as one batch."));
  f.push_back(object("spec.join", "Join for uneven inputs (torch.distributed.algorithms.Join)."));
  f.push_back(boolean("spec.join.enabled", at(&JobSpec::join, &JoinSpec::enabled),
                      "Ranks that run out of data shadow the others' collectives; needs data.uneven.enabled, not with gradientAccumulation.steps > 1."));
  f.push_back(boolean("spec.join.throwOnEarlyTermination", at(&JobSpec::join, &JoinSpec::throwOnEarlyTermination),
                      "Fail every rank as soon as one runs out of data."));
  f.push_back(boolean("spec.join.divideByInitialWorldSize", at(&JobSpec::join, &JoinSpec::divideByInitialWorldSize),
                      "Divide by the initial world size (else by the ranks still active)."));
  f.push_back(object("spec.gradientAccumulation", "Accumulate gradients over micro-batches (DDP no_sync)."));
  f.push_back(integer("spec.gradientAccumulation.steps", at(&JobSpec::gradientAccumulationSteps),
                      "Micro-batches per optimizer step.").atLeast(1));
  f.push_back(enumeration("spec.precision", at(&JobSpec::precision), kComputePrecisionNames,
                          "gpt: the compute precision, fp32 or bf16 (bf16 matmuls, fp32 master weights and "
                          "reductions; the CPU emulates bf16 rounding).")
                  .onlyWhen(gpt, "spec.model.type is gpt"));
  f.push_back(enumeration("spec.mixedPrecision", at(&JobSpec::mixedPrecision), kMixedPrecisionNames,
                          "The dtype gradients are reduced in (the DDP buckets): none (f32), fp16 or bf16; parameters and optimizer state stay f32. Not with zero: dfa nor gradientAsBucketView."));
  for (SpecField& x : f) out->push_back(std::move(x));
}

void appendRunFields(std::vector<SpecField>* out) {
  using C = CheckpointSpec;
  using E = EvalSpec;
  std::vector<SpecField> f;
  f.push_back(integer("spec.epochs", at(&JobSpec::epochs), "Passes over the training data; exactly one of epochs and steps is > 0.")
                  .atLeast(0).atMost(kInt32Max)
                  .emitWhen([](const JobSpec& s) { return s.epochs > 0 || s.steps == 0; }));
  f.push_back(integer("spec.steps", at(&JobSpec::steps), "Optimizer steps to train for; exactly one of epochs and steps is > 0.")
                  .atLeast(0).atMost(kInt32Max).emitWhen([](const JobSpec& s) { return s.steps > 0; }));
  f.push_back(integer("spec.seed", at(&JobSpec::seed), "Seed of initialization, shuffling and synthetic data (0 to 2^63-1).")
                  .atLeast(0).checkedByRule());
  f.push_back(object("spec.checkpoint", "Checkpoints of the whole training state."));
  f.push_back(string("spec.checkpoint.dir", at(&JobSpec::checkpoint, &C::dir),
                     "Where checkpoints go, shared by every worker: an absolute path under one of the controller's allowed roots; empty: no checkpoints (required when everySteps > 0)."));
  f.push_back(integer("spec.checkpoint.everySteps", at(&JobSpec::checkpoint, &C::everySteps),
                      "Steps between checkpoints.").atLeast(0).note("0: only at the end"));
  f.push_back(integer("spec.checkpoint.keep", at(&JobSpec::checkpoint, &C::keep), "Committed checkpoints kept.")
                  .atLeast(1));
  f.push_back(object("spec.init", "Start from exported weights (fine-tuning); the optimizer starts fresh."));
  f.push_back(string("spec.init.from", at(&JobSpec::init, &InitSpec::from),
                     "A safetensors file as ddpctl export writes it: an absolute path under one of the controller's allowed roots; every parameter's tensor by its PyTorch name, F32, of the model's shape (docs/MODELS.md).")
                  .emitWhen([](const JobSpec& s) { return !s.init.from.empty(); }));
  f.push_back(object("spec.eval", "Evaluation on the held-out split."));
  f.push_back(boolean("spec.eval.everyEpoch", at(&JobSpec::eval, &E::everyEpoch),
                      "Evaluate after every epoch (else at the end only)."));
  f.push_back(integer("spec.eval.batchSize", at(&JobSpec::eval, &E::batchSize), "Samples per evaluation batch.")
                  .atLeast(1));
  f.push_back(integer("spec.eval.limit", at(&JobSpec::eval, &E::limit), "Evaluate on the first limit samples only.")
                  .atLeast(0).note("0: all"));
  f.push_back(integer("spec.eval.everySteps", at(&JobSpec::eval, &E::everySteps),
                      "Evaluate every this many steps (language models).")
                  .atLeast(0).note("0: per epoch, as everyEpoch says"));
  f.push_back(number("spec.bucketCapMb", at(&JobSpec::bucketCapMb), "Size of the DDP gradient buckets, in MB (at least one byte, at most 1 TiB).")
                  .above(0).checkedByRule());
  f.push_back(number("spec.firstBucketMb", at(&JobSpec::firstBucketMb),
                     "Size of the first bucket (the last gradients computed), in MB (at least one byte, at most 1 TiB).")
                  .above(0).checkedByRule());
  f.push_back(boolean("spec.gradientAsBucketView", at(&JobSpec::gradientAsBucketView),
                      "Gradients are views into the buckets (no copy)."));
  f.push_back(integer("spec.maxRestarts", at(&JobSpec::maxRestarts),
                      "Recoveries the job may use before it fails.").atLeast(0));
  f.push_back(object("spec.elastic", "What changes with the world size (docs/ELASTIC.md)."));
  f.push_back(boolean("spec.elastic.keepGlobalBatch", at(&JobSpec::elastic, &ElasticSpec::keepGlobalBatch),
                      "Keep the global batch (else the per-worker batch, scaling the learning rate)."));
  for (SpecField& x : f) out->push_back(std::move(x));
}

void appendTimeoutFields(std::vector<SpecField>* out) {
  using T = TimeoutsSpec;
  const auto seconds = [](std::string_view path, double T::*m, double min, std::string_view description) {
    return number(path, at(&JobSpec::timeouts, m), description).atLeast(min).atMost(kMaxTimeoutSeconds, "7 days").unit("s");
  };
  std::vector<SpecField> f;
  f.push_back(object("spec.timeouts",
                     "Every timeout of the job, in seconds; heartbeatSeconds x heartbeatMisses < hangSeconds < "
                     "collectiveSeconds."));
  f.push_back(seconds("spec.timeouts.heartbeatSeconds", &T::heartbeatSeconds, kMinHeartbeatSeconds,
                      "Heartbeat period of each worker."));
  f.push_back(integer("spec.timeouts.heartbeatMisses", at(&JobSpec::timeouts, &T::heartbeatMisses),
                      "Missed heartbeats before a worker is declared lost.")
                  .atLeast(1).atMost(kMaxHeartbeatMisses));
  f.push_back(seconds("spec.timeouts.lastCallSeconds", &T::lastCallSeconds, kMinLastCallSeconds,
                      "Rendezvous: how long to wait for more workers once workers.min joined."));
  f.push_back(seconds("spec.timeouts.hangSeconds", &T::hangSeconds, kMinTimeoutSeconds,
                      "A collective stuck this long is a hang."));
  f.push_back(seconds("spec.timeouts.progressSeconds", &T::progressSeconds, kMinTimeoutSeconds,
                      "No step completed for this long is a hang."));
  f.push_back(seconds("spec.timeouts.controllerSeconds", &T::controllerSeconds, kMinTimeoutSeconds,
                      "A worker that cannot reach the controller this long exits."));
  f.push_back(seconds("spec.timeouts.collectiveSeconds", &T::collectiveSeconds, kMinTimeoutSeconds,
                      "One collective's own deadline in the worker."));
  f.push_back(seconds("spec.timeouts.rendezvousSeconds", &T::rendezvousSeconds, kMinTimeoutSeconds,
                      "Joining the job."));
  f.push_back(enumeration("spec.logFormat", at(&JobSpec::logFormat), kLogFormatNames,
                          "The workers' progress lines: text, or json (one object per line)."));
  f.push_back(enumeration("spec.commThreadPriority", at(&JobSpec::commThreadPriority), kCommThreadPriorityNames,
                          "Scheduling of the communication threads: realtime (SCHED_FIFO 1) when permitted with auto, always with realtime, never with normal; DDP_COMM_THREAD_PRIORITY in a worker's environment wins."));
  f.push_back(object("spec.worker", "The program each worker runs (docs/EXTENDING.md).")
                  .emitWhen([](const JobSpec& s) { return !s.worker.command.empty(); }));
  f.push_back(stringList("spec.worker.command", at(&JobSpec::worker, &WorkerProgramSpec::command),
                         "[path, args...] of a trainer linked to the engine, run instead of ddp-worker with its environment; on Kubernetes in spec.kubernetes.image, under the local launcher only where the controller's --allow-worker-command allows it; empty: ddp-worker."));
  for (SpecField& x : f) out->push_back(std::move(x));
}

// spec.suspend and spec.managedBy: who runs the job, and whether it runs now.
void appendControlFields(std::vector<SpecField>* out) {
  out->push_back(boolean("spec.suspend", at(&JobSpec::suspend),
                         "No worker runs while true: a running job checkpoints and stops; false again resumes "
                         "it from that checkpoint.")
                     .emitWhen([](const JobSpec& s) { return s.suspend; }));
  out->push_back(string("spec.managedBy", at(&JobSpec::managedBy),
                        "The controller that manages the DDPJob; empty or ddp.dev/ddp-controller: this one, "
                        "another (e.g. kueue.x-k8s.io/multikueue): this one leaves it alone. Immutable.")
                     .maxLength(63)
                     .emitWhen([](const JobSpec& s) { return !s.managedBy.empty(); }));
}

std::vector<SpecField> buildTable() {
  std::vector<SpecField> t;
  appendDocumentFields(&t);
  appendWorkerFields(&t);
  appendModelFields(&t);
  appendDataFields(&t);
  appendOptimizerFields(&t);
  appendCommFields(&t);
  appendRunFields(&t);
  appendTimeoutFields(&t);
  appendControlFields(&t);
  appendKubernetesFields(&t);
  appendPodTemplateFields(&t);
  t.push_back(ignored("status", "Written by the controller; accepted and ignored in a submitted document."));
  return t;
}

}  // namespace

const char* specFieldTypeName(SpecFieldType t) {
  switch (t) {
    case SpecFieldType::kObject: return "object";
    case SpecFieldType::kString: return "string";
    case SpecFieldType::kInteger: return "integer";
    case SpecFieldType::kNumber: return "number";
    case SpecFieldType::kBoolean: return "boolean";
    case SpecFieldType::kIntegerList: return "array of integer";
    case SpecFieldType::kNumberList: return "array of number";
    case SpecFieldType::kStringList: return "array of string";
    case SpecFieldType::kObjectList: return "array of object";
    case SpecFieldType::kStringMap: return "map of string";
    case SpecFieldType::kQuantityMap: return "map of quantity";
    case SpecFieldType::kIgnored: return "ignored";
    case SpecFieldType::kKubeObject: return "Kubernetes object";
    case SpecFieldType::kKubeObjectList: return "array of Kubernetes object";
  }
  return "?";
}

const std::vector<SpecField>& jobSpecFields() {
  static const std::vector<SpecField> kFields = buildTable();
  return kFields;
}

std::string specNumberText(double v) {
  char buf[64];
  if (std::fabs(v) < 1e15 && v == std::floor(v)) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string withoutIndices(std::string_view path) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    out += path[i];
    if (path[i] != '[') continue;
    size_t j = i + 1;
    while (j < path.size() && std::isdigit(static_cast<unsigned char>(path[j]))) ++j;
    i = j - 1;
  }
  return out;
}

const SpecField* findJobSpecField(std::string_view path) {
  const std::string p = withoutIndices(path);
  for (const SpecField& f : jobSpecFields()) {
    if (f.path == p) return &f;
  }
  return nullptr;
}

std::vector<const SpecField*> jobSpecChildren(std::string_view path) {
  const std::string parent = withoutIndices(path);
  const std::string prefix = parent.empty() ? "" : parent + ".";
  std::vector<const SpecField*> out;
  for (const SpecField& f : jobSpecFields()) {
    if (f.path.size() <= prefix.size() || f.path.substr(0, prefix.size()) != prefix) continue;
    if (f.path.substr(prefix.size()).find_first_of(".[") == std::string_view::npos) out.push_back(&f);
  }
  return out;
}

std::vector<std::string> jobSpecFieldKeys(std::string_view path) {
  const std::string parent = withoutIndices(path);
  const size_t skip = parent.empty() ? 0 : parent.size() + 1;
  std::vector<std::string> keys;
  for (const SpecField* f : jobSpecChildren(parent)) keys.emplace_back(f->path.substr(skip));
  return keys;
}

}  // namespace ddp
