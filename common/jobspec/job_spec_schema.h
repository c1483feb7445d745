#pragma once
// What the field table (job_spec_fields.h) writes for readers other than the parser: the CRD's
// openAPIV3Schema of spec (every field with its type, description, range, allowed values,
// required children and the CEL admission rules of job_spec_cel_rules.h) and the field table of
// docs/JOB_SPEC.md. tools/jobspec (ddp-jobspec-schema) writes both files,
// scripts/render_manifests.sh runs it, and JobSpecSchemaTest fails when a committed file differs
// from what the table gives.
// Thread model: pure functions.

#include <string>
#include <string_view>

#include "common/status.h"

namespace ddp {

// The line of the CRD template that the spec schema replaces, indentation included.
inline constexpr std::string_view kCrdSpecPlaceholder = "spec: {}  # @generated spec schema";
// The line replaced by the admission rules on the whole document (job_spec_cel_rules.h).
inline constexpr std::string_view kCrdDocumentRulesPlaceholder = "x-kubernetes-validations: []  # @generated document rules";

// The CRD: `crdTemplate` (tools/jobspec/ddpjob_crd.template.yaml) with its placeholder lines
// replaced, at their indentation, by the spec schema and by the admission rules on the whole
// document (x-kubernetes-validations, Note [CRD admission rules]). InvalidArgument when the
// template lacks a placeholder.
Result<std::string> renderJobSpecCrd(std::string_view crdTemplate);

// The markdown table of every field (path, type, default, allowed values, description).
std::string jobSpecFieldTableMarkdown();

// The markers around the generated table in docs/JOB_SPEC.md.
inline constexpr std::string_view kDocsTableBegin = "<!-- BEGIN GENERATED FIELD TABLE (tools/jobspec) -->";
inline constexpr std::string_view kDocsTableEnd = "<!-- END GENERATED FIELD TABLE -->";

// `doc` with the text between the markers replaced by jobSpecFieldTableMarkdown().
// InvalidArgument when a marker is missing.
Result<std::string> renderJobSpecDocs(std::string_view doc);

}  // namespace ddp
