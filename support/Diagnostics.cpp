// This file implements the diagnostics engine: formatting from the registry in
// Diagnostics.def and rendering with the source line and a caret range.
#include "support/Diagnostics.h"

#include <sstream>

namespace dt {

static const char *kNames[] = {
#define DIAG(Id, fmt) #Id,
#include "support/Diagnostics.def"
};

const char *diagFormat(DiagId id) { return detail::kDiagFormats[(int)id]; }
const char *diagIdName(DiagId id) { return kNames[(int)id]; }

std::string formatDiag(const char *fmt, const std::vector<std::string> &args) {
  std::string out;
  for (const char *p = fmt; *p; ++p) {
    if (*p == '{' && p[1] >= '0' && p[1] <= '9' && p[2] == '}') {
      size_t i = (size_t)(p[1] - '0');
      out += i < args.size() ? args[i] : std::string("?");
      p += 2;
    } else {
      out += *p;
    }
  }
  return out;
}

int SourceManager::add(std::string path, std::string text) {
  files_.push_back({std::move(path), std::move(text)});
  return (int)files_.size() - 1;
}

std::string SourceManager::line(int file, int line) const {
  if (file < 0 || file >= (int)files_.size() || line <= 0)
    return "";
  const std::string &t = files_[file].text;
  size_t pos = 0;
  for (int l = 1; l < line; ++l) {
    pos = t.find('\n', pos);
    if (pos == std::string::npos)
      return "";
    ++pos;
  }
  size_t end = t.find('\n', pos);
  return t.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
}

Diagnostic &DiagEngine::add(Severity s, DiagId id, SrcLoc loc,
                            const std::vector<std::string> &args) {
  if (s == Severity::Error)
    ++errors_;
  if ((int)diags_.size() >= limit_) {
    overflow_ = Diagnostic{};
    return overflow_;
  }
  Diagnostic d;
  d.severity = s;
  d.id = id;
  d.loc = loc;
  d.message = formatDiag(diagFormat(id), args);
  diags_.push_back(std::move(d));
  return diags_.back();
}

void DiagEngine::rollback(size_t n, int errors) {
  if (diags_.size() > n)
    diags_.resize(n);
  errors_ = errors;
}

Diagnostic &DiagEngine::error(DiagId id, SrcLoc loc, const std::vector<std::string> &args) {
  return add(Severity::Error, id, loc, args);
}
Diagnostic &DiagEngine::warning(DiagId id, SrcLoc loc, const std::vector<std::string> &args) {
  return add(Severity::Warning, id, loc, args);
}
Diagnostic &DiagEngine::remark(SrcLoc loc, std::string message) {
  auto &d = add(Severity::Remark, DiagId::Remark, loc, {});
  d.message = std::move(message);
  return d;
}

std::string DiagEngine::render(const Diagnostic &d) const {
  std::ostringstream os;
  const char *sev = d.severity == Severity::Error     ? "error"
                    : d.severity == Severity::Warning ? "warning"
                    : d.severity == Severity::Note    ? "note"
                                                      : "remark";
  bool haveFile = d.loc.file >= 0 && d.loc.file < sm_.count();
  if (haveFile)
    os << sm_.path(d.loc.file) << ":";
  if (d.loc.known())
    os << d.loc.line << ":" << d.loc.col << ":";
  if (haveFile || d.loc.known())
    os << " ";
  os << sev << ": " << d.message << "\n";
  if (haveFile && d.loc.known()) {
    std::string src = sm_.line(d.loc.file, d.loc.line);
    // Control bytes (a NUL, a CR of CRLF) show as spaces: the quoted line
    // never writes them to a terminal, and the caret keeps its column.
    for (char &c : src)
      if (((unsigned char)c < 0x20 && c != '\t') || c == 0x7f)
        c = ' ';
    std::string num = std::to_string(d.loc.line);
    os << "  " << num << " | " << src << "\n";
    os << "  " << std::string(num.size(), ' ') << " | ";
    // Columns count bytes; the caret and its range count characters: a
    // UTF-8 continuation byte (10xxxxxx) takes no column of its own.
    auto continuation = [&](int i) { return ((unsigned char)src[i] & 0xC0) == 0x80; };
    int col = d.loc.col > 0 ? d.loc.col : 1;
    for (int i = 1; i < col && i <= (int)src.size(); ++i)
      if (!continuation(i - 1))
        os << (src[i - 1] == '\t' ? '\t' : ' ');
    int len = 0;
    for (int i = col; i < d.loc.endCol; ++i)
      len += i > (int)src.size() || !continuation(i - 1);
    os << "^" << std::string(len > 1 ? len - 1 : 0, '~') << "\n";
  }
  for (auto &n : d.notes)
    os << "note: " << n << "\n";
  if (!d.hint.empty())
    os << "hint: " << d.hint << "\n";
  return os.str();
}

std::string DiagEngine::renderAll() const {
  std::string s;
  for (auto &d : diags_)
    s += render(d);
  return s;
}

} // namespace dt
