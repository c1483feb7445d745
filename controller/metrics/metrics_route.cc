#include "controller/metrics/metrics_route.h"

#include <memory>

#include "common/http/bearer_auth.h"

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
  http::Handler scrape = [r](http::Request&, std::shared_ptr<http::Responder> res) {
    http::Response out;
    out.contentType = kMetricsContentType;
    out.body = r->metrics->scrape(r->gauges ? r->gauges() : std::vector<JobGauges>{});
    res->reply(std::move(out));
  };
  if (!r->open) scrape = http::withBearerAuth(http::fixedBearerToken(r->token, "; or start the controller with --metrics-open"), std::move(scrape));
  router.add("GET", "/metrics", std::move(scrape));
}

}  // namespace ddp::controller
