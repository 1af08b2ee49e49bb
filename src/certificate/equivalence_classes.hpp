#pragma once
// Declarations grouped by proven equality of their address functions, so a duplicated declaration (the
// same engine layout declared twice, e.g. vllm-flashinfer-nhd and flashinfer-nhd) cannot inflate counts.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "prove/options.hpp"
#include "spec/cache_shape.hpp"
#include "spec/layout.hpp"

namespace kvlayout::certificate {

// Two declarations are one class when their address functions are proven equal on every shape the
// campaign uses for them (the pair's proof shape and the cross-check shape). A rank family (a group of
// layouts) is a class of its own.
// @return every class (singletons included), members in the order of `layouts`, classes by first member.
std::vector<std::vector<std::string>> equivalence_classes(
    const std::vector<std::shared_ptr<const spec::Layout>>& layouts,
    const std::function<std::vector<std::string>(std::size_t, std::size_t)>& caches_for_pair,
    const std::map<std::string, spec::CacheShape>& caches, const prove::ProveOptions& options);

}  // namespace kvlayout::certificate
