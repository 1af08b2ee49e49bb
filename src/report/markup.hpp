#pragma once
// Text made safe for HTML and SVG (element content and double-quoted attributes).
#include <string>

namespace kvlayout::report {

std::string escape(const std::string& text);

}  // namespace kvlayout::report
