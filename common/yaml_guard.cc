#include "common/yaml_guard.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

#include <sstream>

// Note [YAML guard]
// A job document is a tree of a few dozen fields. YAML also allows anchors and aliases (`&a`,
// `*a`): nine lines of aliases name a billion nodes (the "billion laughs"), and a validator that
// walks or reports them would take that long. And a document of nested brackets recurses the
// parser once per level. So before a document is loaded it is read as events (yaml-cpp's parser,
// no tree built): any anchor or alias is refused, as is nesting deeper than kMaxYamlDepth (a job
// document needs about six levels); yaml-cpp's own DepthGuard bounds the recursion meanwhile.
// Each refusal names the line and column. A syntax error is left to the loader, which reports it.

namespace ddp {
namespace {

struct Refused {
  std::string message;
  YAML::Mark mark;
};

class ShapeHandler final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { node(mark, anchor); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
    throw Refused{"aliases (*name) are not allowed in a job document", mark};
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, const std::string&) override {
    node(mark, anchor);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    open(mark, anchor);
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    open(mark, anchor);
  }
  void OnMapEnd() override { --depth_; }

 private:
  static void node(const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor) throw Refused{"anchors (&name) are not allowed in a job document", mark};
  }
  void open(const YAML::Mark& mark, YAML::anchor_t anchor) {
    node(mark, anchor);
    if (++depth_ > kMaxYamlDepth) {
      throw Refused{"nested deeper than " + std::to_string(kMaxYamlDepth) + " levels", mark};
    }
  }
  int depth_ = 0;
};

}  // namespace

YamlGuardError checkYamlShape(std::string_view text) {
  std::istringstream in{std::string(text)};
  ShapeHandler handler;
  try {
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(handler)) {
    }
  } catch (const Refused& r) {
    return {r.message, r.mark.line + 1, r.mark.column + 1};
  } catch (const YAML::DeepRecursion& e) {
    return {"nested deeper than " + std::to_string(kMaxYamlDepth) + " levels", e.mark.line + 1, e.mark.column + 1};
  } catch (const YAML::Exception&) {
    // A syntax error: the loader reports it with its own words.
  }
  return {};
}

}  // namespace ddp
