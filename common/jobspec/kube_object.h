#pragma once
// The Kubernetes objects a DDPJob carries as they are (Note [Carried Kubernetes objects]): a
// YAML subtree read as JSON, and JSON written back as YAML.
// Thread model: pure functions.
//
// Note [Carried Kubernetes objects]
// Some fields of spec.kubernetes.template are Kubernetes types too large to restate in the field
// table (an Affinity, a Volume, an EnvVar's valueFrom): the table types them
// kKubeObject / kKubeObjectList, the CRD marks them x-kubernetes-preserve-unknown-fields, and the
// JobSpec holds each as the compact JSON text of the subtree (nlohmann's dump: keys sorted, so
// equal objects are equal strings; empty: absent). Their shape is checked by JobSpec::validate()
// (pod_template_validate.cc): the keys each level allows, the types of the values the
// controller reads or merges, and the names and paths the controller owns. Scalars keep the
// types YAML gives them: a plain 1 is an integer, a quoted "1" a string, as the API server reads
// the same document.

#include <yaml-cpp/yaml.h>

#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace ddp {

// `n` as JSON: mappings (scalar keys only) as objects, sequences as arrays, plain scalars by
// YAML 1.2's core schema (null, ~ and empty: null; true/false; integers; decimals), every other
// scalar a string. InvalidArgument naming the offending key's path below `path` otherwise.
Result<nlohmann::json> yamlToJson(const YAML::Node& n, const std::string& path);

// `v` as YAML (strings double-quoted, so that yamlToJson reads back the same JSON).
void emitJson(YAML::Emitter& out, const nlohmann::json& v);

}  // namespace ddp
