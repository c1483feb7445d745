#include "worker/ddp/powersgd_options.h"

#include <cmath>
#include <sstream>

namespace ddp {

Status PowerSgdOptions::validate() const {
  if (matrixApproximationRank < 1) {
    return invalidArgument("PowerSgdOptions.matrixApproximationRank must be >= 1, got " +
                           std::to_string(matrixApproximationRank));
  }
  if (startPowerSgdIter < 0) {
    return invalidArgument("PowerSgdOptions.startPowerSgdIter must be >= 0, got " +
                           std::to_string(startPowerSgdIter));
  }
  if ((useErrorFeedback || warmStart) && startPowerSgdIter <= 1) {
    return invalidArgument(
        "PowerSgdOptions.startPowerSgdIter must be > 1 when useErrorFeedback or warmStart is on "
        "(got " + std::to_string(startPowerSgdIter) +
        "): buckets are rebuilt after iteration 1, so PowerSGD can only start from iteration 2");
  }
  if (!(minCompressionRate > 0.0) || !std::isfinite(minCompressionRate)) {
    return invalidArgument("PowerSgdOptions.minCompressionRate must be a positive number, got " +
                           std::to_string(minCompressionRate));
  }
  if (!(orthogonalizationEpsilon >= 0.0f) || !std::isfinite(orthogonalizationEpsilon)) {
    return invalidArgument("PowerSgdOptions.orthogonalizationEpsilon must be >= 0, got " +
                           std::to_string(orthogonalizationEpsilon));
  }
  if (compressionStatsLoggingFrequency < 1) {
    return invalidArgument("PowerSgdOptions.compressionStatsLoggingFrequency must be >= 1, got " +
                           std::to_string(compressionStatsLoggingFrequency));
  }
  return Status::ok();
}

std::string PowerSgdOptions::toString() const {
  std::ostringstream os;
  os << "rank=" << matrixApproximationRank << " start_iter=" << startPowerSgdIter
     << " min_compression_rate=" << minCompressionRate << " error_feedback=" << useErrorFeedback
     << " warm_start=" << warmStart << " epsilon=" << orthogonalizationEpsilon << " seed=" << randomSeed
     << " stats_every=" << compressionStatsLoggingFrequency << " batch_same_shape=" << batchTensorsWithSameShape;
  return os.str();
}

}  // namespace ddp
