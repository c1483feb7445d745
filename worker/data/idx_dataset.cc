#include "worker/data/idx_dataset.h"

#include "worker/data/fashion_mnist.h"

namespace ddp::data {

Result<Dataset> loadIdxDataset(const std::string& dir, datafiles::IdxSplit split) {
  DDP_ASSIGN_OR_RETURN(datafiles::IdxShape shape, datafiles::inspectIdxSplit(dir, split));
  DDP_ASSIGN_OR_RETURN(Dataset d, readIdxImages(shape.files.images));
  DDP_ASSIGN_OR_RETURN(std::vector<int32_t> labels, readIdxLabels(shape.files.labels));
  if (labels.size() != d.labels.size()) {
    return dataLoss(shape.files.images + " has " + std::to_string(d.labels.size()) + " images but " +
                    shape.files.labels + " has " + std::to_string(labels.size()) + " labels");
  }
  d.labels = std::move(labels);
  d.name = shape.files.labels;
  return d;
}

}  // namespace ddp::data
