#pragma once
// GET /metrics on the controller's own HTTP server (no second server): the Prometheus text of
// ControllerMetrics, with the job manager's gauges read at scrape time. It needs the
// controller's API token (Authorization: Bearer) unless `open` (--metrics-open, for an
// in-cluster scrape without credentials). Also sets the router's observer that times every
// request into ddp_http_requests_total / ddp_http_request_seconds.
// Thread model: the handler and the observer run on the HTTP server's threads; `metrics`,
// `gauges` and `clock` must outlive the server.

#include <functional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/http/http_router.h"
#include "controller/metrics/controller_metrics.h"

namespace ddp::controller {

inline constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

struct MetricsRoute {
  ControllerMetrics* metrics = nullptr;
  std::function<std::vector<JobGauges>()> gauges;  // may be empty: no live jobs
  std::string token;                               // the controller (user API) token
  bool open = false;                               // no token needed
  const Clock* clock = &SystemClock::instance();
};

void installMetricsRoute(http::Router& router, MetricsRoute route);
// Only the observer (a router without /metrics: the worker listener's).
void observeRequests(http::Router& router, MetricsSink* metrics, const Clock* clock = &SystemClock::instance());

}  // namespace ddp::controller
