// This file implements reverse-mode autodiff (see Autodiff.h).
#include "passes/Autodiff.h"

namespace dt {

std::string differentiate(Module &m, const std::string &fn, const std::vector<int64_t> &wrt,
                          bool withValue, DiagEngine &diags, SrcLoc loc) {
  (void)m, (void)wrt, (void)withValue;
  diags.error(DiagId::Unsupported, loc, {"`grad` of `" + fn + "` is not supported yet"});
  return "";
}

} // namespace dt
