#pragma once
// A certificate file read for display: its rows with the fields the report, the graph and the backlog
// use, validated on the way in (a malformed certificate is bad input naming the JSON path, never a crash).
#include <cstdint>
#include <string>
#include <vector>

#include "spec/json_node.hpp"
#include "verdict/grade.hpp"

namespace kvlayout::report {

struct RowView {
  std::string source, target, cache;
  prove::Grade grade = prove::Grade::Unknown;
  std::string reason;        // reason code
  std::string capability;    // unblocked_by ("" when none)
  double prove_ms = 0;
  std::int64_t positions_checked = 0;
  bool group = false;        // a rank family on a side (graded as a group)
  const spec::Json* counterexample = nullptr;  // into the document; null JSON when none
  const spec::Json* cross_check = nullptr;
};

struct CertificateView {
  std::string file;
  spec::Json document;                              // the whole certificate
  // Pointers inside refer to elements of `document`, which stay where they are when the view is moved
  // (a moved nlohmann document keeps its heap storage).
  std::vector<RowView> rows;
  std::vector<std::vector<std::string>> classes;    // equivalence classes, members sorted
};

// @throws SpecError naming file and JSON path for a document that is not a certificate.
// @post every row's grade parsed; every layout a row names belongs to exactly one class.
CertificateView read_certificate(const std::string& file);
// The same for a document already in memory (a fresh certificate); `file` names it in messages.
CertificateView view_certificate(spec::Json document, const std::string& file);

}  // namespace kvlayout::report
