#include "controller/metrics/metrics_route.h"

#include <memory>

#include "common/secret.h"
#include "controller/api/api_server.h"

namespace ddp::controller {

void observeRequests(http::Router& router, MetricsSink* metrics, const Clock* clock) {
  router.setObserver([metrics, clock](const http::Request&, const std::string& name, http::Responder& res) {
    const TimePoint start = clock->now();
    res.onAnswer([metrics, clock, name, start](int status) {
      metrics->httpRequest(name, status, std::chrono::duration<double>(clock->now() - start).count());
    });
  });
}

void installMetricsRoute(http::Router& router, MetricsRoute route) {
  auto r = std::make_shared<MetricsRoute>(std::move(route));
  observeRequests(router, r->metrics, r->clock);
  router.add("GET", "/metrics", [r](http::Request& req, std::shared_ptr<http::Responder> res) {
    if (!r->open) {
      const std::string presented = bearerToken(req);
      if (presented.empty()) {
        return (void)res->reply(http::Response::jsonError(
            401, "missing bearer token (Authorization: Bearer <token>; or start the controller with --metrics-open)"));
      }
      if (!secretEquals(r->token, presented)) return (void)res->reply(http::Response::jsonError(401, "invalid token"));
    }
    http::Response out;
    out.contentType = kMetricsContentType;
    out.body = r->metrics->scrape(r->gauges ? r->gauges() : std::vector<JobGauges>{});
    res->reply(std::move(out));
  });
}

}  // namespace ddp::controller
