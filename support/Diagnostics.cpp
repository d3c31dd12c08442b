// This file implements the diagnostics engine: formatting from the registry in
// Diagnostics.def and rendering with the source line and a caret range.
#include "support/Diagnostics.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <sstream>

namespace dt {

static const char *kNames[] = {
#define DIAG(Id, fmt) #Id,
#include "support/Diagnostics.def"
};

const char *diagFormat(DiagId id) { return detail::kDiagFormats[(int)id]; }
const char *diagIdName(DiagId id) { return kNames[(int)id]; }

std::string formatDiag(const char *fmt, const std::vector<std::string> &args) {
  // A count of 1 takes the singular: "takes 1 argument", "with 1 dim".
  static const char *const kPlurals[][2] = {{" arguments", " argument"},
                                            {" dims", " dim"},
                                            {" entries", " entry"},
                                            {" subscripts", " subscript"},
                                            {" elements", " element"},
                                            {" values", " value"},
                                            {" ranks", " rank"},
                                            {" processes", " process"},
                                            {" distinct device ids", " distinct device id"}};
  std::string out;
  for (const char *p = fmt; *p; ++p) {
    if (*p == '{' && p[1] >= '0' && p[1] <= '9' && p[2] == '}') {
      size_t i = (size_t)(p[1] - '0');
      const std::string arg = i < args.size() ? args[i] : std::string("?");
      out += arg;
      p += 2;
      if (arg == "1" || (arg.size() > 2 && arg.compare(arg.size() - 2, 2, " 1") == 0))
        for (auto &[plural, singular] : kPlurals) {
          size_t n = std::strlen(plural);
          if (std::strncmp(p + 1, plural, n) == 0 && !std::isalnum((unsigned char)p[1 + n])) {
            out += singular;
            p += n;
            break;
          }
        }
    } else {
      out += *p;
    }
  }
  return out;
}

int SourceManager::add(std::string path, std::string text) {
  // A UTF-8 byte order mark (Windows editors write one) is not part of line
  // 1: the lexer skips it too, so columns count from after it.
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0)
    text.erase(0, 3);
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

namespace {

/// Texts of a diagnostic longer than this are cut in the middle (a 5 MB
/// identifier named in a message would print it whole).
constexpr size_t kMaxText = 400;
/// Source lines longer than this are shown as a window around the column.
constexpr int kMaxLine = 160;

std::string elide(const std::string &s) {
  if (s.size() <= kMaxText)
    return s;
  size_t head = kMaxText / 2, tail = kMaxText / 2;
  while (head > 0 && ((unsigned char)s[head] & 0xC0) == 0x80)
    --head; // cut before a character, not inside one
  while (tail > 0 && ((unsigned char)s[s.size() - tail] & 0xC0) == 0x80)
    --tail;
  return s.substr(0, head) + " ... " + s.substr(s.size() - tail);
}

/// The source line as it is safe to print: control bytes (a NUL, a CR of
/// CRLF, an ESC) become spaces, bytes that are not UTF-8 become `?`, and
/// UTF-8's C1 controls (U+0080..U+009F, which terminals may obey) become two
/// spaces; every byte keeps its place, so columns still count bytes.
std::string printable(std::string src) {
  for (size_t i = 0; i < src.size();) {
    unsigned char c = (unsigned char)src[i];
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t') || c == 0x7f)
        src[i] = ' ';
      ++i;
      continue;
    }
    int n = c >= 0xF0 && c < 0xF5 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
    bool ok = n > 0 && i + n <= src.size();
    for (int k = 1; ok && k < n; ++k)
      ok = ((unsigned char)src[i + k] & 0xC0) == 0x80;
    if (!ok) {
      src[i++] = '?';
      continue;
    }
    if (n == 2 && c == 0xC2 && (unsigned char)src[i + 1] < 0xA0)
      src[i] = src[i + 1] = ' ';
    i += n;
  }
  return src;
}

} // namespace

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
  os << sev << ": " << elide(d.message) << "\n";
  if (haveFile && d.loc.known()) {
    std::string src = printable(sm_.line(d.loc.file, d.loc.line));
    int col = d.loc.col > 0 ? d.loc.col : 1, endCol = d.loc.endCol;
    // A long line: a window of it around the column, `...` where cut.
    if ((int)src.size() > kMaxLine) {
      int from = std::max(0, col - 1 - kMaxLine / 2);
      while (from > 0 && ((unsigned char)src[from] & 0xC0) == 0x80)
        --from;
      int to = std::min((int)src.size(), from + kMaxLine);
      while (to < (int)src.size() && ((unsigned char)src[to] & 0xC0) == 0x80)
        ++to;
      std::string head = from > 0 ? "... " : "", tail = to < (int)src.size() ? " ..." : "";
      src = head + src.substr(from, to - from) + tail;
      col = col - from + (int)head.size();
      endCol = std::min(endCol - from + (int)head.size(), (int)(head.size() + (to - from)) + 1);
    }
    std::string num = std::to_string(d.loc.line);
    os << "  " << num << " | " << src << "\n";
    os << "  " << std::string(num.size(), ' ') << " | ";
    // Columns count bytes; the caret and its range count characters: a
    // UTF-8 continuation byte (10xxxxxx) takes no column of its own.
    auto continuation = [&](int i) { return ((unsigned char)src[i] & 0xC0) == 0x80; };
    for (int i = 1; i < col && i <= (int)src.size(); ++i)
      if (!continuation(i - 1))
        os << (src[i - 1] == '\t' ? '\t' : ' ');
    int len = 0;
    for (int i = col; i < endCol; ++i)
      len += i > (int)src.size() || !continuation(i - 1);
    os << "^" << std::string(len > 1 ? len - 1 : 0, '~') << "\n";
  }
  for (auto &n : d.notes)
    os << "note: " << elide(n) << "\n";
  if (!d.hint.empty())
    os << "hint: " << elide(d.hint) << "\n";
  return os.str();
}

std::string DiagEngine::renderAll() const {
  std::string s;
  for (auto &d : diags_)
    s += render(d);
  return s;
}

Diagnostic faultDiagnostic(const RuntimeFault &f, const SourceManager &sm) {
  Diagnostic d;
  d.severity = Severity::Error;
  d.id = DiagId::RuntimeError;
  auto held = [&](SrcLoc l) { return l.known() && l.file >= 0 && l.file < sm.count(); };
  if (!held(f.loc)) {
    d.loc = SrcLoc{-1, 0, 0, 0};
    d.message = f.what();
    return d;
  }
  d.loc = f.loc;
  d.message = f.message();
  for (SrcLoc c : f.calledFrom)
    if (held(c))
      d.notes.push_back("called from " + sm.path(c.file) + ":" + std::to_string(c.line) + ":" +
                        std::to_string(c.col));
  return d;
}

} // namespace dt
